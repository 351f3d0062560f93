// DivergenceFunctionals' Rényi sums: the scales M_alpha, the per-order sums, R_alpha and its kin, the wall tails.
#include "solver/functionals/Divergences.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "solver/functionals/DivergencesDetail.hpp"
#include "solver/numerics/StableFunctions.hpp"

namespace fpdp::solver {

namespace {
/// Regular terms of one group (DivergenceFunctionals::RenyiSumsPass), as arrays.
constexpr std::size_t kTermBlock = 128;
struct TermBlock {
  std::size_t size = 0;
  bool wall = false;  // the terms touch a wall: they feed the wall sums
  int shell = -1;     // the tail shell they feed, -1: none
  std::array<double, kTermBlock> u, wq, dp, G, GS, logWq, wqL1l;  // dp = |c| p - |c| q, wqL1l = |c| q l1l(rho)
  std::array<bool, kTermBlock> nearOne;
};
/// The recurrences' state along one run of orders, per cell of a TermBlock.
struct BlockRunState {
  std::array<double, kTermBlock> E1, X, scaled;                   // near: |c| q em1l(alpha u), |c| q expm1(alpha u)
  std::array<double, kTermBlock> eb, wqEm1lb, wqExpm1b, em1lbPlusB;  // e^b, |c| q em1l(b), |c| q expm1(b), expm1(b)
  std::array<bool, kTermBlock> near, recurse;
  std::array<std::size_t, kTermBlock> switchAt;  // first far position of the run
};
/// One order's sums over the cells of a TermBlock.
struct OrderSums {
  double e1 = 0, x = 0, xu = 0, xg = 0, xgs = 0;  // near: E1, X, X u, X G, X G_Sigma
  double s0 = 0, s1 = 0, sI = 0, sIS = 0;          // far: t {1, u, G, G_Sigma}
  double wallEm1 = 0, wallS0 = 0;                 // wall cells: E_alpha - 1 and S0
  double shellScaled = 0, shellExact = 0;         // shell cells: t (times the shell factor later), exact values
};
}  // namespace

DivergenceFunctionals::OrderScales DivergenceFunctionals::orderScales(const Terms& terms,
                                                                      const DivergenceValues& health) const {
  const std::size_t K = orders_.size();
  const std::size_t S = K * kTailShells;
  OrderScales out;
  std::vector<double> localMax(K + S, -kInf);
  std::vector<std::size_t> localArg(K, terms.size());  // the cell of each order's largest term
  std::vector<double>& globalMax = out.globalMax;
  globalMax.resize(K + S);
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (terms.kind(i) != Terms::Regular) continue;
    const double logWq = terms.logWq[i], u = terms.u[i];
    const int shell = terms.shellOf(i);
    for (std::size_t k = 0; k < K; ++k) {
      const double l = logWq + orders_[k] * u;
      if (l > localMax[k] && i < terms.cells) localArg[k] = i;
      localMax[k] = std::max(localMax[k], l);
      if (shell >= 0) {
        double& m = localMax[K + k * kTailShells + static_cast<std::size_t>(shell)];
        m = std::max(m, l);
      }
    }
  }
  FPDP_PETSC(MPI_Allreduce(localMax.data(), globalMax.data(), static_cast<PetscMPIInt>(K + S), MPI_DOUBLE, MPI_MAX,
                            quadrature_.comm()));
  // The depth of each order's largest term: on the rank(s) that hold it, from its cell's centre (the owned block's
  // cell order of forEachOwnedCell); the largest over those ranks, the same on any number of ranks.
  std::vector<double> localDepth(K, 0.0);
  out.depth.assign(K, 0.0);
  const auto& block = work_->mesh->owned();
  const int dim = quadrature_.dim();
  for (std::size_t k = 0; k < K; ++k) {
    const std::size_t i = localArg[k];
    if (i >= terms.cells || localMax[k] != globalMax[k]) continue;
    const auto l = static_cast<PetscInt>(i);
    const PetscInt ci = block.start[0] + l % block.count[0];
    const PetscInt cj = block.start[1] + (l / block.count[0]) % block.count[1];
    const PetscInt ck = block.start[2] + l / (block.count[0] * block.count[1]);
    const auto x = work_->mesh->box().centre(static_cast<int>(ci), static_cast<int>(cj), static_cast<int>(ck));
    double depth = 0.0;
    for (const DensityHealth* h : {&health.p, &health.q})
      for (int a = 0; a < dim; ++a) {
        const auto axis = static_cast<std::size_t>(a);
        if (h->spread[axis] > 0.0) depth = std::max(depth, std::fabs(x[a] - h->mean[axis]) / h->spread[axis]);
      }
    localDepth[k] = depth;
  }
  FPDP_PETSC(MPI_Allreduce(localDepth.data(), out.depth.data(), static_cast<PetscMPIInt>(K), MPI_DOUBLE, MPI_MAX,
                            quadrature_.comm()));
  out.logScale.resize(K);
  out.scale.resize(K);
  out.invScale.resize(K);
  out.shellFactor.resize(S);
  out.shellDirect.resize(S);
  for (std::size_t k = 0; k < K; ++k) {
    const double M = out.logScale[k] = std::isfinite(globalMax[k]) ? globalMax[k] : 0.0;
    out.scale[k] = std::exp(M);  // may be +inf: then E_alpha > 1e308 and the stable sums are not used
    out.invScale[k] = std::exp(-M);
    for (int m = 0; m < kTailShells; ++m) {
      const std::size_t i = k * kTailShells + static_cast<std::size_t>(m);
      const double gap = std::isfinite(globalMax[K + i]) ? M - globalMax[K + i] : 0.0;
      // The shell sums are scaled by their own maximum: from the order's scaled term when that loses nothing.
      out.shellDirect[i] = gap > 600.0;
      out.shellFactor[i] = std::exp(gap);
    }
  }
  out.rescale.assign(K, 1.0);
  for (const OrderRun& run : runs_)
    for (std::size_t j = run.begin; j + 1 < run.end; ++j) {
      const std::size_t k = orderIndex_[j], kNext = orderIndex_[j + 1];
      if (std::isfinite(globalMax[k]) && std::isfinite(globalMax[kNext]))
        out.rescale[k] = std::exp(globalMax[k] - globalMax[kNext]);
    }
  return out;
}

/// Pass 4 of evaluatePoints: the per-order sums (SumArrays) over the regular terms.
/// Successive orders of an arithmetic run (alpha_{j+1} = alpha_j + Delta, OrderRun) share one exp per cell: with
/// b = Delta u, e^b, expm1(b) and em1l(b) = e^b - 1 - b,
///   em1l(x + b) = em1l(x) + em1l(b) + expm1(x) (em1l(b) + b),   expm1(x + b) = expm1(x) e^b + expm1(b)
/// (the first is e^x em1l(b) + em1l(x) + b expm1(x) rearranged: every term of one sign when x and b are, so no
/// cancellation), carried as E1 = |c| q em1l(alpha u) and X = |c| q expm1(alpha u); in the scaled far branch
///   t_{j+1} = t_j e^b e^{M_j - M_{j+1}}.
/// Each step adds a few ulps (at most ~100 steps: < 1e-13 relative). A scaled value that has underflowed is
/// recomputed by one exp as soon as its true value (log t = log(|c| q) + alpha u - M, one FMA) is not negligible.
/// The parts of the sums that do not depend on the order (|c| q l1l(rho), |c| q u, ...) are added once per cell into
/// difference arrays over the sorted orders (a cell is near r = 1 for a prefix of each run, far after it), so the
/// loop over orders only carries what does:
///   near: E_alpha - 1 += E1 + alpha |c| q l1l,  E' += X u + |c| q l1l,  e^M S_j += (|c| q + X) {1, u, G, G_Sigma};
///   far:  S_j += t {1, u, G, G_Sigma},  E_alpha - 1 += e^M t - |c| q - alpha (|c| p - |c| q),  E' += e^M t u - (...).
/// Cells inner, orders outer, block by block: the regular terms are grouped by the extra sums they feed (none, the
/// wall sums, one tail shell), copied kTermBlock at a time into arrays (TermBlock), and for each order one loop over
/// the block's cells advances every cell's recurrence and sums the block's share of that order in registers. With
/// the orders inner (term by term) each cell's recurrence is one chain of dependent multiplications and every term
/// reads and writes all per-order arrays; with the cells inner the chains are independent and the per-order arrays
/// are written once per block. Only the order of the additions changes (round-off).
struct DivergenceFunctionals::RenyiSumsPass {
  enum NearConst { cWq, cWqU, cWqG, cWqGS, cWqL1l, kNear };
  enum FarConst { fWq, fDp, kFar };
  const DivergenceFunctionals& f;
  const OrderScales& sc;
  const std::size_t K;
  SumArrays<double> sums;
  std::vector<double> nearDiff, farDiff;
  std::vector<double> accE1, accX, accXU, accXG, accXGS;
  std::vector<double> farS0, farS1, farSI, farSIS;
  TermBlock b;
  BlockRunState st;
  bool extra = false;  // the block feeds the wall or shell sums

  RenyiSumsPass(const DivergenceFunctionals& functionals, const OrderScales& scales, double* out)
      : f(functionals), sc(scales), K(functionals.orders_.size()), sums(out, K),
        nearDiff(kNear * (K + 1), 0.0), farDiff(kFar * (K + 1), 0.0),
        accE1(K, 0.0), accX(K, 0.0), accXU(K, 0.0), accXG(K, 0.0), accXGS(K, 0.0),
        farS0(K, 0.0), farS1(K, 0.0), farSI(K, 0.0), farSIS(K, 0.0) {}

  /// Indices of the regular terms, by group g = wall + 2 (shell + 1): a wall cell lies in no shell (the shells start
  /// one layer in), but nothing below relies on that.
  static std::vector<std::uint32_t> groupRegularTerms(const Terms& terms) {
    std::vector<std::uint32_t> grouped;
    constexpr int kGroups = 2 * (kTailShells + 1);
    auto groupOf = [&](std::size_t i) { return (terms.boundary(i) ? 1 : 0) + 2 * (terms.shellOf(i) + 1); };
    std::array<std::size_t, kGroups + 1> start{};
    for (std::size_t c = 0; c < terms.size(); ++c)
      if (terms.kind(c) == Terms::Regular) ++start[static_cast<std::size_t>(groupOf(c)) + 1];
    for (int g = 0; g < kGroups; ++g) start[g + 1] += start[g];
    grouped.resize(start[kGroups]);
    for (std::size_t c = 0; c < terms.size(); ++c)
      if (terms.kind(c) == Terms::Regular) grouped[start[static_cast<std::size_t>(groupOf(c))]++] = static_cast<std::uint32_t>(c);
    return grouped;
  }

  /// The next block: up to kTermBlock terms of one group, from grouped[first] on (first is advanced past them).
  void load(const Terms& terms, const std::vector<std::uint32_t>& grouped, std::size_t& first) {
    b.wall = terms.boundary(grouped[first]);
    b.shell = terms.shellOf(grouped[first]);
    b.size = 0;
    for (; first < grouped.size() && b.size < kTermBlock; ++first, ++b.size) {
      const std::size_t t = grouped[first];
      if (terms.boundary(t) != b.wall || terms.shellOf(t) != b.shell) break;
      const std::size_t c = b.size;
      const double wq = terms.wq(t);
      b.u[c] = terms.u[t], b.wq[c] = wq, b.dp[c] = terms.wp(t) - wq, b.logWq[c] = terms.logWq[t];
      terms.gradientTerms(t, b.G[c], b.GS[c]);
      b.wqL1l[c] = wq * terms.l1l[t];
      b.nearOne[c] = terms.nearOne(t);
    }
    extra = b.wall || b.shell >= 0;
  }

  /// The block's share of every order of one run, then its order-independent parts.
  void addRun(const OrderRun& run) {
    addFirstOrder(run);
    if (run.end - run.begin >= 2) addLaterOrders(run);
    addOrderIndependent(run);
  }

  /// The run's first order: fresh values (the series near r = 1, one exp elsewhere).
  void addFirstOrder(const OrderRun& run) {
    const std::size_t k = f.orderIndex_[run.begin];
    const double alpha = f.orders_[k], M = sc.globalMax[k];
    OrderSums s;
    for (std::size_t c = 0; c < b.size; ++c) {
      const double x = alpha * b.u[c];
      const bool near = b.nearOne[c] && std::fabs(x) < 0.5;
      st.near[c] = near;
      st.switchAt[c] = near ? run.end : run.begin;
      if (near) {
        const double e = expm1MinusLinear(x);
        st.E1[c] = b.wq[c] * e;
        st.X[c] = b.wq[c] * (x + e);
        addNear(s, c);
      } else {
        st.scaled[c] = std::exp(b.logWq[c] + x - M);
        addFar(s, c);
      }
    }
    if (extra) addExtras(s, k, alpha);
    flush(k, s);
  }

  /// The run's other orders by the recurrences, from the state its first order left.
  void addLaterOrders(const OrderRun& run) {
    for (std::size_t c = 0; c < b.size; ++c) {
      const double bb = run.delta * b.u[c];
      st.eb[c] = std::exp(bb);
      st.recurse[c] = std::isfinite(st.eb[c]) && st.eb[c] > 0.0;  // e^b out of range: one exp per order instead
      if (st.near[c]) {
        const double em1lb = expm1MinusLinear(bb);
        st.wqEm1lb[c] = b.wq[c] * em1lb;
        st.wqExpm1b[c] = b.wq[c] * (bb + em1lb);
        st.em1lbPlusB[c] = em1lb + bb;
      }
    }
    std::size_t k = f.orderIndex_[run.begin];
    for (std::size_t j = run.begin + 1; j < run.end; ++j) {
      const std::size_t kPrev = k;
      k = f.orderIndex_[j];
      const double alpha = f.orders_[k], M = sc.globalMax[k], rescaleFromPrev = sc.rescale[kPrev];
      OrderSums s;
      for (std::size_t c = 0; c < b.size; ++c) {
        const double x = alpha * b.u[c];
        bool near = st.near[c];
        if (near && std::fabs(x) < 0.5) {
          st.E1[c] += std::fma(st.X[c], st.em1lbPlusB[c], st.wqEm1lb[c]);
          st.X[c] = std::fma(st.X[c], st.eb[c], st.wqExpm1b[c]);
          addNear(s, c);
        } else {
          if (near || !st.recurse[c]) {
            if (near) st.switchAt[c] = j;
            st.near[c] = near = false;  // leaving the series region (or no recurrence): a fresh value
            st.scaled[c] = std::exp(b.logWq[c] + x - M);
          } else {
            double t = st.scaled[c] * (st.eb[c] * rescaleFromPrev);
            if (t < 1e-290) {
              const double l = b.logWq[c] + x - M;
              t = l > -690.0 ? std::exp(l) : t;
            }
            st.scaled[c] = t;
          }
          addFar(s, c);
        }
      }
      if (extra) addExtras(s, k, alpha);
      flush(k, s);
    }
  }

  /// The order-independent parts, over the near prefix [begin, switchAt) and the far rest of the run.
  void addOrderIndependent(const OrderRun& run) {
    for (std::size_t c = 0; c < b.size; ++c) {
      const std::size_t from = run.begin, to = st.switchAt[c], end = run.end;
      const double nearConst[kNear] = {b.wq[c], b.wq[c] * b.u[c], b.wq[c] * b.G[c], b.wq[c] * b.GS[c], b.wqL1l[c]};
      const double farConst[kFar] = {b.wq[c], b.dp[c]};
      if (from < to)
        for (int cc = 0; cc < kNear; ++cc) {
          nearDiff[cc * (K + 1) + from] += nearConst[cc];
          nearDiff[cc * (K + 1) + to] -= nearConst[cc];
        }
      if (to < end)
        for (int cc = 0; cc < kFar; ++cc) {
          farDiff[cc * (K + 1) + to] += farConst[cc];
          farDiff[cc * (K + 1) + end] -= farConst[cc];
        }
    }
  }

  /// One order's extra sums (wall cells, shells) over the block, from the state the order left: the near state
  /// (E1, X) or the far scaled value. A loop of its own, so that the main loop keeps its nine sums in registers.
  void addExtras(OrderSums& s, std::size_t k, double alpha) const {
    const bool direct = b.shell >= 0 && sc.shellDirect[k * kTailShells + static_cast<std::size_t>(b.shell)];
    const double shellMax = b.shell >= 0 ? sc.globalMax[K + k * kTailShells + static_cast<std::size_t>(b.shell)] : 0.0;
    double wallEm1 = 0, wallS0 = 0, shellScaled = 0, shellExact = 0;
    for (std::size_t c = 0; c < b.size; ++c) {
      const bool near = st.near[c];
      const double scaled = near ? (b.wq[c] + st.X[c]) * sc.invScale[k] : st.scaled[c];
      if (b.wall) {
        wallEm1 += near ? st.E1[c] + alpha * b.wqL1l[c] : scaled * sc.scale[k] - b.wq[c] - alpha * b.dp[c];
        wallS0 += scaled;
      }
      if (b.shell >= 0) {
        if (!direct && scaled >= 1e-290) {
          shellScaled += scaled;
        } else {
          const double l = b.logWq[c] + alpha * b.u[c] - shellMax;
          if (l > -690.0) shellExact += std::exp(l);
        }
      }
    }
    s.wallEm1 = wallEm1, s.wallS0 = wallS0, s.shellScaled = shellScaled, s.shellExact = shellExact;
  }
  void addNear(OrderSums& s, std::size_t c) const {
    const double X = st.X[c];
    s.e1 += st.E1[c];
    s.x += X;
    s.xu += X * b.u[c];
    s.xg += X * b.G[c];
    s.xgs += X * b.GS[c];
  }
  void addFar(OrderSums& s, std::size_t c) const {
    const double t = st.scaled[c];
    s.s0 += t;
    s.s1 += t * b.u[c];
    s.sI += t * b.G[c];
    s.sIS += t * b.GS[c];
  }
  /// The block's sums of order k into the accumulators.
  void flush(std::size_t k, const OrderSums& s) {
    accE1[k] += s.e1;
    accX[k] += s.x;
    accXU[k] += s.xu;
    accXG[k] += s.xg;
    accXGS[k] += s.xgs;
    farS0[k] += s.s0;
    farS1[k] += s.s1;
    farSI[k] += s.sI;
    farSIS[k] += s.sIS;
    if (b.wall) {
      sums.em1Wall[k] += s.wallEm1;
      sums.S0Wall[k] += s.wallS0;
    }
    if (b.shell >= 0) {
      const std::size_t i = k * kTailShells + static_cast<std::size_t>(b.shell);
      // (shellFactor may be +inf where the shell is summed directly; shellScaled is 0 there)
      sums.shellSum[i] += (s.shellScaled > 0.0 ? s.shellScaled * sc.shellFactor[i] : 0.0) + s.shellExact;
    }
  }

  /// Combine: prefix sums of the difference arrays over the sorted orders, then the formulas of the class comment.
  /// pZeroWq: sum |c| q over the terms with p = 0.
  void combine(double pZeroWq) {
    double nearSum[kNear] = {0, 0, 0, 0, 0}, farSum[kFar] = {0, 0};
    for (std::size_t j = 0; j < K; ++j) {
      for (int c = 0; c < kNear; ++c) nearSum[c] += nearDiff[c * (K + 1) + j];
      for (int c = 0; c < kFar; ++c) farSum[c] += farDiff[c * (K + 1) + j];
      const std::size_t k = f.orderIndex_[j];
      const double alpha = f.orders_[k];
      const bool scaleFinite = std::isfinite(sc.scale[k]);
      sums.em1[k] = accE1[k] + alpha * nearSum[cWqL1l] + (alpha - 1.0) * pZeroWq +
                    (scaleFinite ? sc.scale[k] * farS0[k] - farSum[fWq] - alpha * farSum[fDp] : kInf);
      sums.dE[k] = accXU[k] + nearSum[cWqL1l] + pZeroWq +
                   (scaleFinite ? sc.scale[k] * farS1[k] - farSum[fDp] : std::numeric_limits<double>::quiet_NaN());
      sums.S0[k] = (nearSum[cWq] + accX[k]) * sc.invScale[k] + farS0[k];
      sums.S1[k] = (nearSum[cWqU] + accXU[k]) * sc.invScale[k] + farS1[k];
      sums.SI[k] = (nearSum[cWqG] + accXG[k]) * sc.invScale[k] + farSI[k];
      sums.SIS[k] = (nearSum[cWqGS] + accXGS[k]) * sc.invScale[k] + farSIS[k];
    }
  }
};

std::vector<double> DivergenceFunctionals::renyiWallTails(const Terms& terms, bool projected,
                                                          const std::vector<double>& logE) const {
  const std::size_t K = orders_.size();
  std::vector<double> tails(K, 0.0);
  if (projected) return tails;
  // Per order the log-sums of the integrand |c| q r^alpha = exp(log(|c| q) + alpha u) over the wall cells and over the
  // layer inside them, by log-sum-exp across the ranks (a wall term can be e^700 where E_alpha is).
  std::vector<double> localMax(2 * K, -kInf), globalMax(2 * K), local(2 * K, 0.0), global(2 * K);
  const auto forTerms = [&](auto f) {
    for (std::size_t i = 0; i < terms.size(); ++i) {
      if (terms.kind(i) != Terms::Regular) continue;
      const int layer = terms.boundary(i) ? 0 : (terms.nextLayer(i) ? 1 : -1);
      if (layer < 0) continue;
      for (std::size_t k = 0; k < K; ++k) f(static_cast<std::size_t>(layer) * K + k, terms.logWq[i] + orders_[k] * terms.u[i]);
    }
  };
  forTerms([&](std::size_t j, double x) { localMax[j] = std::max(localMax[j], x); });
  FPDP_PETSC(MPI_Allreduce(localMax.data(), globalMax.data(), static_cast<PetscMPIInt>(2 * K), MPI_DOUBLE, MPI_MAX,
                            quadrature_.comm()));
  forTerms([&](std::size_t j, double x) { local[j] += std::exp(x - globalMax[j]); });
  FPDP_PETSC(MPI_Allreduce(local.data(), global.data(), static_cast<PetscMPIInt>(2 * K), MPI_DOUBLE, MPI_SUM,
                            quadrature_.comm()));
  for (std::size_t k = 0; k < K; ++k) {
    const double logWall = globalMax[k] + std::log(global[k]), logNext = globalMax[K + k] + std::log(global[K + k]);
    if (!(logWall > -kInf) || !std::isfinite(logE[k])) continue;  // nothing at the walls, or E_alpha not finite
    // wallTailBound in logarithms, relative to E_alpha.
    tails[k] = logWall < logNext ? wallTailBound(1.0, std::exp(logNext - logWall)) * std::exp(logWall - logE[k]) : kInf;
  }
  return tails;
}

std::vector<double> DivergenceFunctionals::renyiSums(const Terms& terms, const OrderScales& scales) const {
  const std::size_t K = orders_.size();
  std::vector<double> sums(8 * K + K * kTailShells, 0.0);
  RenyiSumsPass pass(*this, scales, sums.data());
  double pZeroWq = 0.0;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (terms.kind(i) != Terms::PZero) continue;
    const double wq = terms.wq(i);
    pZeroWq += wq;
    if (terms.boundary(i))
      for (std::size_t k = 0; k < K; ++k) pass.sums.em1Wall[k] += wq * (orders_[k] - 1.0);
  }
  const std::vector<std::uint32_t> grouped = RenyiSumsPass::groupRegularTerms(terms);
  for (std::size_t first = 0; first < grouped.size();) {
    pass.load(terms, grouped, first);
    for (const OrderRun& run : runs_) pass.addRun(run);
  }
  pass.combine(pZeroWq);
  return sums;
}

/// R_alpha, log E_alpha, d R_alpha/d alpha, the information ratios and the wall shares from the reduced sums.
void DivergenceFunctionals::renyiFromSums(const std::vector<double>& sums, const OrderScales& scales, bool isInfinite,
                                          bool gradients, DivergenceValues& out) const {
  const std::size_t K = orders_.size();
  const SumArrays s(sums.data(), K);
  out.renyiBoundaryShare.assign(K, 0.0);
  out.logEAlpha.assign(K, kInf);
  out.dRenyiDAlpha.assign(K, kInf);
  out.informationRatio.assign(K, kNaN);
  out.informationRatioSigma.assign(K, kNaN);
  for (std::size_t k = 0; k < K; ++k) {
    const double alpha = orders_[k];
    if (isInfinite) continue;  // q = 0 where p > 0: R_alpha = E_alpha = +inf, I_alpha/E_alpha undefined
    // Small divergences (E_alpha - 1 < 1 from the stable sums): log E = log1p(E - 1), E'/E = E'/(1 + (E - 1)), the
    // share of E_alpha - 1 at the walls. Large ones (or E_alpha - 1 overflowing): log E = M + log S0,
    // E'/E = S1/S0, the share of E_alpha at the walls.
    const bool small = std::isfinite(s.em1[k]) && s.em1[k] < 1.0 && std::isfinite(scales.scale[k]);
    double logE, dLogE;
    if (small) {
      logE = std::log1p(std::max(s.em1[k], 0.0));
      dLogE = s.dE[k] / (1.0 + s.em1[k]);
      out.eAlphaMinusOne[k] = s.em1[k];
      out.renyiBoundaryShare[k] = s.em1[k] > 0 ? s.em1Wall[k] / s.em1[k] : 0.0;
    } else {
      logE = scales.globalMax[k] + std::log(s.S0[k]);
      dLogE = s.S1[k] / s.S0[k];
      out.eAlphaMinusOne[k] = std::isfinite(s.em1[k]) && std::isfinite(scales.scale[k]) ? s.em1[k] : std::expm1(logE);
      out.renyiBoundaryShare[k] = s.S0[k] > 0 ? s.S0Wall[k] / s.S0[k] : 0.0;
    }
    out.logEAlpha[k] = logE;
    out.renyi[k] = logE / (alpha - 1.0);
    // d R/d alpha = [(alpha - 1) E'/E - log E]/(alpha - 1)^2 = KL(pi_alpha || p)/(alpha - 1)^2 >= 0.
    out.dRenyiDAlpha[k] = ((alpha - 1.0) * dLogE - logE) / ((alpha - 1.0) * (alpha - 1.0));
    // I_alpha/E_alpha: both sums carry the same scale e^-M.
    out.informationRatio[k] = s.S0[k] > 0 && gradients ? s.SI[k] / s.S0[k] : kNaN;
    out.informationRatioSigma[k] = s.S0[k] > 0 && gradients ? s.SIS[k] / s.S0[k] : kNaN;
  }
}

}  // namespace fpdp::solver
