// Projected noisy gradient descent (MATH.md §2.1): p_{k+1} = Pi_C # ((T_D # p_k) * N(0, 2 eta Sigma)) with the mass
// Pi_C puts on the boundary of C kept as boundary bins (solver/noisygd/ConstraintProjection.hpp, docs/noisy-gd.md §6).
// Checked: one step in 1-D against the closed form (normal tail probabilities and Gaussian cell averages), mass
// conservation (cells + bins) over many steps, the bins and the interior against direct sampling of the projected
// recursion in 1-D and 2-D (box and ball), and that the divergences see the bins.
#define BOOST_TEST_MODULE projection
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "PetscFixture.hpp"
#include "TestSupport.hpp"
#include "ProjectedGd.hpp"
#include "solver/noisygd/ConstraintProjection.hpp"
#include "solver/functionals/Divergences.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;
using projected_gd::Setup;

namespace {

double Phi(double u) { return 0.5 * std::erfc(-u / std::sqrt(2.0)); }

using fpdp::testing::vec;

meshes::BoxMesh boxOf(const Setup& s) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < s.dim; ++a) axes.push_back(meshes::Axis::uniform(s.lower[a], s.upper[a], s.cells[a]));
  return meshes::BoxMesh(std::move(axes));
}

/// Maps a point of the closure of C to its histogram slot on a mesh: the cell holding it (interior of C), or
/// cells + the boundary bin (a point on the boundary of C, as Pi_C leaves it).
struct Histogrammer {
  meshes::BoxMesh mesh;
  models::ConstraintSet C;
  solver::BoundaryBins bins;
  std::array<int, 3> loIndex{0, 0, 0};
  Histogrammer(const Setup& s) : mesh(boxOf(s)), C(s.C), bins(mesh, s.C, s.ballBins) {
    if (bins.isBox())
      for (int a = 0; a < s.dim; ++a)
        loIndex[a] = static_cast<int>(std::lround((bins.lower()[a] - mesh.axis(a).lower()) / mesh.axis(a).width(0)));
  }
  std::size_t slots() const { return mesh.totalCells() + bins.size(); }
  int cellIndex(int a, double x) const {
    const auto& ax = mesh.axis(a);
    return std::clamp(static_cast<int>(std::floor((x - ax.lower()) / ax.width(0))), 0, ax.cells() - 1);
  }
  std::size_t slot(const solver::ParameterPoint& x) const {
    const int d = mesh.dim();
    std::array<int, 3> idx{0, 0, 0};
    for (int a = 0; a < d; ++a) idx[a] = cellIndex(a, x[a]);
    const std::size_t cell =
        static_cast<std::size_t>(idx[0]) +
        static_cast<std::size_t>(mesh.cells(0)) * (static_cast<std::size_t>(idx[1]) +
                                                   static_cast<std::size_t>(mesh.cells(1)) * static_cast<std::size_t>(idx[2]));
    if (bins.isBox()) {
      std::array<int, 3> cls{1, 1, 1}, off{0, 0, 0};
      bool boundary = false;
      for (int a = 0; a < d; ++a) {
        cls[a] = x[a] <= bins.lower()[a] ? 0 : x[a] >= bins.upper()[a] ? 2 : 1;
        off[a] = idx[a] - loIndex[a];
        boundary = boundary || cls[a] != 1;
      }
      return boundary ? mesh.totalCells() + bins.boxBin(cls, off) : cell;
    }
    double r2 = 0;
    for (int a = 0; a < d; ++a) r2 += (x[a] - bins.centre()[a]) * (x[a] - bins.centre()[a]);
    // Pi_C puts projected points on the sphere up to rounding; an unprojected point this close has probability ~0.
    if (std::sqrt(r2) >= bins.radius() * (1.0 - 1e-12)) return mesh.totalCells() + bins.ballBin(x);
    return cell;
  }
};

/// Direct sampling of theta_{k+1} = Pi_C(theta_k - eta g(theta_k) + sqrt(2 eta) sigma Z), theta_0 ~ Pi_C(N(m0, v0 I)),
/// with the same models:: loss and ConstraintSet, histogrammed: the probability of every slot.
std::vector<double> monteCarlo(const Setup& s, long K, long particles, const Histogrammer& h, std::uint64_t seed) {
  const auto L = projected_gd::empiricalLoss(s, s.xP);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> Z(0.0, 1.0);
  std::vector<double> count(h.slots(), 0.0);
  const double noise = std::sqrt(2.0 * s.eta) * s.sigma, sd0 = std::sqrt(s.v0);
  models::Vector th(s.dim);
  for (long n = 0; n < particles; ++n) {
    for (int a = 0; a < s.dim; ++a) th[a] = s.m0[a] + sd0 * Z(rng);
    s.C.projectInPlace(th.data(), s.dim);
    for (long k = 0; k < K; ++k) {
      const models::Vector g = L->gradient(th);
      for (int a = 0; a < s.dim; ++a) th[a] += -s.eta * g[a] + noise * Z(rng);
      s.C.projectInPlace(th.data(), s.dim);
    }
    solver::ParameterPoint x{0, 0, 0};
    for (int a = 0; a < s.dim; ++a) x[a] = th[a];
    count[h.slot(x)] += 1.0;
  }
  for (double& c : count) c /= static_cast<double>(particles);
  return count;
}

/// The solver's p as probabilities of the histogram slots of `h`: cells aggregated by index onto h's cells (a kept
/// share of a cell the sphere cuts stays in its cell, wherever its centre is), bins mapped by their points.
std::vector<double> solverSlots(const Setup& s, const projected_gd::SolverOutcome& o, const Histogrammer& h) {
  const meshes::BoxMesh mesh = boxOf(s);
  std::array<int, 3> ratio{1, 1, 1};
  for (int a = 0; a < s.dim; ++a) ratio[a] = mesh.cells(a) / h.mesh.cells(a);
  std::vector<double> P(h.slots(), 0.0);
  std::size_t c = 0;
  for (int k = 0; k < mesh.cells(2); ++k)
    for (int j = 0; j < mesh.cells(1); ++j)
      for (int i = 0; i < mesh.cells(0); ++i, ++c) {
        const std::size_t slot = static_cast<std::size_t>(i / ratio[0]) +
                                 static_cast<std::size_t>(h.mesh.cells(0)) *
                                     (static_cast<std::size_t>(j / ratio[1]) +
                                      static_cast<std::size_t>(h.mesh.cells(1)) * static_cast<std::size_t>(k / ratio[2]));
        P[slot] += o.p[c] * mesh.cellVolume(i, j, k);
      }
  for (std::size_t b = 0; b < o.binsP.size(); ++b) P[h.slot(o.binPoints[b])] += o.binsP[b];
  return P;
}

/// Compares the solver with direct sampling, slot by slot. Tolerance per slot (derivation):
///   * sampling: the Monte Carlo frequency of a slot of probability P has standard error sqrt(P (1 - P) / N)
///     (binomial); 5 standard errors (P from the solver, at least 1/N so that empty slots are not exact);
///   * discretisation: the solver on the same mesh (h) and on the mesh refined twice per axis (h/2, aggregated onto
///     the slots of h); for a scheme of order q >= 1 the error at h is (P_h - P_{h/2}) 2^q / (2^q - 1) <= 2 |P_h -
///     P_{h/2}| to leading order, so 2 |P_h - P_{h/2}| is allowed.
/// Also the total boundary mass, with the same rule.
void compareWithSampling(const std::string& name, Setup s, long K, long particles) {
  const auto t0 = std::chrono::steady_clock::now();
  const Histogrammer h(s);
  const auto coarse = projected_gd::runSolver(s, K);
  Setup fine = s;
  for (int a = 0; a < s.dim; ++a) fine.cells[a] *= 2;
  const auto refined = projected_gd::runSolver(fine, K);
  const auto Pc = solverSlots(s, coarse, h), Pf = solverSlots(fine, refined, h);
  const auto mc = monteCarlo(s, K, particles, h, 20261121);
  const double N = static_cast<double>(particles);
  const std::size_t nCells = h.mesh.totalCells();
  long failures = 0;
  double worstRatio = 0, worstBinError = 0, boundaryS = 0, boundaryF = 0, boundaryMc = 0;
  for (std::size_t i = 0; i < Pc.size(); ++i) {
    const double P = std::max(Pc[i], 1.0 / N);
    const double tol = 5.0 * std::sqrt(P * (1.0 - P) / N) + 2.0 * std::fabs(Pc[i] - Pf[i]) + 1e-14;
    const double err = std::fabs(Pc[i] - mc[i]);
    worstRatio = std::max(worstRatio, err / tol);
    if (i >= nCells) {
      worstBinError = std::max(worstBinError, err);
      boundaryS += Pc[i];
      boundaryF += Pf[i];
      boundaryMc += mc[i];
    }
    if (err > tol) {
      if (++failures <= 5)
        std::printf("  %s: slot %zu (%s) solver %.6e, sampled %.6e, tolerance %.3e\n", name.c_str(), i,
                    i < nCells ? "cell" : h.bins.pieceName(i - nCells).c_str(), Pc[i], mc[i], tol);
    }
  }
  const double tolB = 5.0 * std::sqrt(boundaryS * (1 - boundaryS) / N) + 2.0 * std::fabs(boundaryS - boundaryF);
  std::printf("%-26s boundary mass solver %.6f (h/2: %.6f), sampled %.6f (5 sigma %.1e); %zu bins, worst bin error "
              "%.2e; worst |error|/tolerance over %zu slots %.3f; %.1f s\n",
              name.c_str(), boundaryS, boundaryF, boundaryMc, 5.0 * std::sqrt(boundaryS * (1 - boundaryS) / N),
              h.bins.size(), worstBinError, Pc.size(), worstRatio,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::fflush(stdout);
  BOOST_TEST(failures == 0, name << ": " << failures << " slots outside the tolerance");
  BOOST_TEST(std::fabs(boundaryS - boundaryMc) <= tolB, name << ": total boundary mass");
  BOOST_TEST(boundaryS > 0.01);  // the constraint is active: a test of the projection, not of its absence
  BOOST_TEST(coarse.maxMassDrift <= 1e-12);  // see mass_of_cells_and_boundary_bins_is_conserved
  BOOST_TEST(coarse.minValue >= 0.0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_step_1d_box_matches_normal_tails_and_gaussian_cells) {
  // theta_0 ~ N(0, v0) lies in C = [-1.6, 1.6] up to 2 Phi(-1.6/sqrt(v0)) = 2e-13, so before the projection of step 1
  // the law is N(m1, v1) exactly: m1 = (1 - eta lambda) m0 + eta lambda x, v1 = (1 - eta lambda)^2 v0 + 2 eta sigma^2
  // (MATH.md §6). Pi_C makes the atoms Phi((l - m1)/s1) and 1 - Phi((u - m1)/s1) and keeps the Gaussian's cell
  // averages inside. Errors come from the push-forward of the (narrow) start and, for fokker_planck, the heat solve.
  // The mesh [-6, 6] leaves 4.4 noise standard deviations between C and the walls: the no-flux walls of the
  // fokker_planck route reflect the mass beyond a wall, which lands back inside C only from beyond 2 x 6 - 1.6 = 10.4
  // (Phi(-10) = 1e-23). With the mesh [-3, 3] that reflection measurably moves 1e-5 of the upper atom into C.
  Setup s;
  s.lower = {-6, -6, -6};
  s.upper = {6, 6, 6};
  s.C = models::ConstraintSet::box(vec({-1.6}), vec({1.6}));
  const double m1 = s.eta * s.lambda * s.xP[0];
  const double v1 = (1 - s.eta * s.lambda) * (1 - s.eta * s.lambda) * s.v0 + 2 * s.eta * s.sigma * s.sigma;
  const double s1 = std::sqrt(v1);
  const double atomLo = Phi((-1.6 - m1) / s1), atomHi = 1.0 - Phi((1.6 - m1) / s1);
  const models::Gaussian exact(models::Vector::Constant(1, m1), models::Matrix::Constant(1, 1, v1));
  std::printf("\none step, 1-D box [-1.6, 1.6]: atoms exact %.12f %.12f\n%-18s %6s %12s %12s %12s %8s\n", atomLo,
              atomHi, "route", "cells", "atom lo err", "atom hi err", "L1 interior", "rate");
  for (auto method : {solver::DiffusionMethod::ExactConvolution, solver::DiffusionMethod::FokkerPlanck}) {
    const bool conv = method == solver::DiffusionMethod::ExactConvolution;
    s.method = method;
    double prev = 0;
    std::vector<double> errors;
    for (int cells : {300, 600, 1200}) {
      s.cells[0] = cells;
      s.substeps = cells / 10;  // fokker_planck: dt refined with h (both second order)
      const auto o = projected_gd::runSolver(s, 1);
      const double h = 12.0 / cells;
      double l1 = 0;
      for (int i = 0; i < cells; ++i) {
        const double lo = -6 + i * h, hi = lo + h, c = 0.5 * (lo + hi);
        const double ex = (c > -1.6 && c < 1.6) ? exact.cellAverage({lo, 0, 0}, {hi, 0, 0}) : 0.0;
        l1 += std::fabs(o.p[i] - ex) * h;
      }
      const double eLo = std::fabs(o.binsP[0] - atomLo), eHi = std::fabs(o.binsP[1] - atomHi);
      const double e = std::max({eLo, eHi, l1});
      std::printf("%-18s %6d %12.3e %12.3e %12.3e %8.2f\n", conv ? "exact_convolution" : "fokker_planck", cells,
                  eLo, eHi, l1, prev > 0 ? std::log2(prev / e) : 0.0);
      errors.push_back(e);
      prev = e;
      // Mass (cells + atoms): the projection and the exact convolution move mass exactly (round-off of a few sums,
      // 1e-14); the implicit heat solves of fokker_planck conserve it to the round-off of the LU solves (1e-12).
      BOOST_TEST(o.maxMassDrift <= (conv ? 1e-14 : 1e-12));
    }
    if (conv) {
      // The push-forward is third order on uniform meshes and the convolution exact for its reconstruction: the
      // errors must fall at least at second order and be below 1e-6 on the finest mesh (h = 0.01).
      BOOST_TEST(std::log2(errors[1] / errors[2]) >= 2.0);
      BOOST_TEST(errors[2] <= 1e-6);
    } else {
      // The heat solve is second order in space and (ARKIMEX L2) in time, with h and dt refined together: at least
      // order 1.5 observed over the two refinements, and below 1e-4 at h = 0.01.
      BOOST_TEST(std::log2(errors[0] / errors[2]) / 2.0 >= 1.5);
      BOOST_TEST(errors[2] <= 1e-4);
    }
  }
}

BOOST_AUTO_TEST_CASE(projection_moves_cells_outside_c_to_their_bins) {
  // Pi_C # alone, on an arbitrary positive field: cells inside C untouched, cells outside emptied, the mass of each
  // outside cell in the bin of its piece, total conserved to round-off. 2-D box on a mesh that C does not fill.
  const meshes::BoxMesh mesh({meshes::Axis::uniform(-2, 2, 8), meshes::Axis::uniform(-2, 2, 8)});
  const auto C = models::ConstraintSet::box(vec({-1.0, -0.5}), vec({1.5, 2.0}));
  const solver::BoundaryBins bins(mesh, C);
  const solver::ConstraintProjection proj(mesh, bins);
  // C spans 5 cells on each axis: 4 edges of 5 bins and 4 corner atoms. The upper y face is the mesh wall (no cells
  // above it), so that edge and its corners exist but stay empty.
  std::vector<double> f(64), before;
  for (std::size_t c = 0; c < 64; ++c) f[c] = 1.0 + 0.37 * static_cast<double>((c * 7919) % 13);
  before = f;
  std::vector<double> m(bins.size(), 0.0);
  proj.project(f, m);
  double total0 = 0, total1 = 0;
  for (std::size_t c = 0; c < 64; ++c) total0 += before[c] * 0.25, total1 += f[c] * 0.25;
  for (double b : m) total1 += b;
  BOOST_TEST(std::fabs(total1 - total0) <= 1e-14 * total0);
  std::size_t c = 0;
  for (int j = 0; j < 8; ++j)
    for (int i = 0; i < 8; ++i, ++c) {
      const double x = -2 + 0.5 * (i + 0.5), y = -2 + 0.5 * (j + 0.5);
      const bool inside = x > -1.0 && x < 1.5 && y > -0.5 && y < 2.0;
      BOOST_TEST(f[c] == (inside ? before[c] : 0.0));
    }
  BOOST_TEST(bins.size() == 24u);
  // The corner (x < -1, y < -0.5) collects every cell below both faces: 2 x 3 cells.
  double corner = 0;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 2; ++i) corner += before[static_cast<std::size_t>(i + 8 * j)] * 0.25;
  const std::size_t cornerBin = bins.boxBin({0, 0, 1}, {0, 0, 0});
  BOOST_TEST(m[cornerBin] == corner);
  BOOST_TEST(bins.pieceName(cornerBin) == "--");
  BOOST_TEST(bins.points()[cornerBin][0] == -1.0);
  BOOST_TEST(bins.points()[cornerBin][1] == -0.5);
  // A face that is not a mesh face is refused, naming the nearest faces.
  BOOST_CHECK_THROW(solver::BoundaryBins(mesh, models::ConstraintSet::box(vec({-1.1, -0.5}), vec({1.5, 2.0}))),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(ball_projection_keeps_each_cut_cell_s_mass_at_second_order) {
  // Pi_C # on the cell averages of a Gaussian N(m, s^2 I) with a disc C that cuts cells: the mass each cell keeps
  // against the Gaussian's exact mass in the cell's part of the disc (a 1-D quadrature in phi, x = c_x + r sin(phi),
  // of the normal CDF's difference across the chord clipped to the cell), summed in absolute value. The kept share of
  // a cut cell is its exact area fraction, so the sum falls at second order; with the count of sub-cell midpoints in
  // C (each cut cell's share off by O(h / 4)) it fell at first order. (The total kept mass does not tell them apart:
  // the midpoint counts' errors cancel along the circle.)
  const std::array<double, 2> m{0.3, -0.2};
  const double s = 0.6, cx = 0.1, cy = 0.05, r = 1.05;
  const auto Phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  // The Gaussian's mass in [x0, x1] x [y0, y1] inside the disc.
  const auto massInDisc = [&](double x0, double x1, double y0, double y1) {
    const double a = std::asin(std::clamp((x0 - cx) / r, -1.0, 1.0)), b = std::asin(std::clamp((x1 - cx) / r, -1.0, 1.0));
    const int n = 4000;
    const double dp = (b - a) / n;
    double sum = 0.0;
    for (int i = 0; i < n; ++i) {
      const double phi = a + (i + 0.5) * dp, x = cx + r * std::sin(phi), half = r * std::cos(phi);
      const double top = std::min(y1, cy + half), bottom = std::max(y0, cy - half);
      if (top <= bottom) continue;
      const double density = std::exp(-0.5 * (x - m[0]) * (x - m[0]) / (s * s)) / (s * std::sqrt(2.0 * M_PI));
      sum += density * (Phi((top - m[1]) / s) - Phi((bottom - m[1]) / s)) * half * dp;
    }
    return sum;
  };
  std::vector<double> errors;
  for (const int cells : {40, 80, 160}) {
    const meshes::BoxMesh mesh({meshes::Axis::uniform(-2, 2, cells), meshes::Axis::uniform(-2, 2, cells)});
    const solver::BoundaryBins bins(mesh, models::ConstraintSet::ball(vec({cx, cy}), r));
    const solver::ConstraintProjection proj(mesh, bins);
    std::vector<double> f(static_cast<std::size_t>(cells) * cells);
    const double h = 4.0 / cells;
    for (int j = 0; j < cells; ++j)
      for (int i = 0; i < cells; ++i) {
        const double x0 = -2 + i * h, y0 = -2 + j * h;
        f[static_cast<std::size_t>(i + cells * j)] =
            (Phi((x0 + h - m[0]) / s) - Phi((x0 - m[0]) / s)) * (Phi((y0 + h - m[1]) / s) - Phi((y0 - m[1]) / s)) /
            (h * h);
      }
    const std::vector<double> before = f;
    std::vector<double> binMass(bins.size(), 0.0);
    proj.project(f, binMass);
    double l1 = 0.0;
    for (int j = 0; j < cells; ++j)
      for (int i = 0; i < cells; ++i) {
        const auto c = static_cast<std::size_t>(i + cells * j);
        if (f[c] == before[c]) continue;  // a cell wholly inside: kept exactly
        const double x0 = -2 + i * h, y0 = -2 + j * h;
        l1 += std::fabs(f[c] * h * h - massInDisc(x0, x0 + h, y0, y0 + h));
      }
    errors.push_back(l1);
    std::printf("ball projection, %d^2 cells: sum over cut cells of |kept - exact| %.3e\n", cells, l1);
  }
  for (std::size_t k = 1; k < errors.size(); ++k) {
    BOOST_TEST_INFO("refinement " << k << ": " << errors[k - 1] << " -> " << errors[k]);
    BOOST_TEST(errors[k - 1] / errors[k] >= std::pow(2.0, 1.6));
  }
}

BOOST_AUTO_TEST_CASE(boundary_bins_reenter_with_second_order_accuracy) {
  // Several steps with mass on the atoms from the start (theta_0 ~ Pi_C(N(1.2, 0.3)): 23% on the upper atom): the atoms
  // re-enter every step as point masses pushed through T_D, deposited linearly (fokker_planck) or convolved exactly
  // (exact_convolution). No closed form: the finest exact_convolution run (2400 cells) is the reference, h halved
  // from 300 cells (and, for fokker_planck, dt with it). Checked: the exact route's error falls at second order on
  // average over 300 -> 1200 cells (successive ratios are not monotone: the image T_D(u) of C's face falls at
  // different places within the target cells), and the two independent routes agree at 2400 cells to within the
  // sum of their last differences |A_1200 - A_2400| (each bounds its own route's error at 2400 for a convergent scheme).
  Setup s;
  s.lower = {-6, -6, -6};  // 4.4 noise standard deviations from C to the walls (see the one-step test)
  s.upper = {6, 6, 6};
  s.m0 = vec({1.2});
  s.v0 = 0.3;
  s.C = models::ConstraintSet::box(vec({-1.6}), vec({1.6}));
  std::printf("\n5 steps from projected N(1.2, 0.3), 1-D box [-1.6, 1.6]: upper atom A_h\n%-18s %6s %16s %14s\n",
              "route", "cells", "A_h", "A_h - A_ref");
  std::array<std::vector<double>, 2> atom;
  for (int r = 0; r < 2; ++r) {
    s.method = r == 0 ? solver::DiffusionMethod::ExactConvolution : solver::DiffusionMethod::FokkerPlanck;
    for (int cells : {300, 600, 1200, 2400}) {
      s.cells[0] = cells;
      s.substeps = cells / 20;
      atom[r].push_back(projected_gd::runSolver(s, 5).binsP[1]);
    }
  }
  const double ref = atom[0][3];
  for (int r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < 4; ++i)
      std::printf("%-18s %6d %16.12f %14.3e\n", r == 0 ? "exact_convolution" : "fokker_planck", 300 << i, atom[r][i],
                  atom[r][i] - ref);
  const double averageOrder = std::log2(std::fabs(atom[0][0] - ref) / std::fabs(atom[0][2] - ref)) / 2.0;
  std::printf("exact_convolution: average observed order 300 -> 1200 cells: %.2f\n", averageOrder);
  BOOST_TEST(averageOrder >= 1.8);
  const double routes = std::fabs(atom[0][3] - atom[1][3]);
  const double bound = std::fabs(atom[0][2] - atom[0][3]) + std::fabs(atom[1][2] - atom[1][3]);
  std::printf("routes at 2400 cells differ by %.2e (bound %.2e)\n", routes, bound);
  BOOST_TEST(routes <= bound);
}

BOOST_AUTO_TEST_CASE(mass_of_cells_and_boundary_bins_is_conserved) {
  // Pi_C moves mass, never creates or destroys it: cells + bins stay at their initial value to round-off over many
  // steps. Exact convolution: a few 1e-15 per step (sums of ~1e4 terms), so 1e-13 over 50 steps; fokker_planck: the
  // implicit heat solves conserve mass to the round-off of the LU solves (measured 5e-13 over 50 x 16 solves), 1e-12.
  struct Variant {
    const char* name;
    Setup s;
  };
  std::vector<Variant> variants;
  {
    Setup s;
    s.cells = {300, 1, 1};
    s.m0 = vec({1.2});
    s.v0 = 0.3;
    s.C = models::ConstraintSet::box(vec({-1.6}), vec({1.6}));
    s.method = solver::DiffusionMethod::ExactConvolution;
    variants.push_back({"1-D box, exact_conv", s});
    s.method = solver::DiffusionMethod::FokkerPlanck;
    variants.push_back({"1-D box, fokker_planck", s});
  }
  {
    Setup s;
    s.dim = 2;
    s.cells = {40, 40, 1};
    s.xP = vec({0.8, -0.4});
    s.xQ = vec({0.0, 0.0});
    s.m0 = vec({0.5, 0.5});
    s.v0 = 0.3;
    s.clip = 1.0;
    s.C = models::ConstraintSet::box(vec({-1.5, -0.9}), vec({1.2, 1.5}));
    s.method = solver::DiffusionMethod::FokkerPlanck;
    s.substeps = 4;
    variants.push_back({"2-D box, fokker_planck", s});
    s.C = models::ConstraintSet::ball(vec({0.2, -0.1}), 1.3);
    variants.push_back({"2-D ball, fokker_planck", s});
    s.method = solver::DiffusionMethod::ExactConvolution;
    variants.push_back({"2-D ball, exact_conv", s});
  }
  {
    Setup s;
    s.dim = 3;
    s.cells = {16, 16, 16};
    s.xP = vec({0.8, -0.4, 0.3});
    s.xQ = vec({0.0, 0.0, 0.0});
    s.m0 = vec({0.5, 0.5, 0.0});
    s.v0 = 0.3;
    s.C = models::ConstraintSet::box(vec({-1.5, -0.75, -1.5}), vec({1.125, 1.5, 0.75}));
    variants.push_back({"3-D box, exact_conv", s});
    s.C = models::ConstraintSet::ball(vec({0.2, -0.1, 0.0}), 1.3);
    variants.push_back({"3-D ball, exact_conv", s});
  }
  for (const auto& v : variants) {
    const long K = v.s.dim == 1 ? 50 : v.s.dim == 2 ? 20 : 3;
    const auto o = projected_gd::runSolver(v.s, K);
    double bins = 0;
    for (double b : o.binsP) bins += b;
    std::printf("%-26s %ld steps: boundary mass %.6f, max |mass - initial| %.2e, min value %.2e\n", v.name, K, bins,
                o.maxMassDrift, o.minValue);
    BOOST_TEST(o.maxMassDrift <= (v.s.method == solver::DiffusionMethod::FokkerPlanck ? 1e-12 : 1e-13), v.name);
    BOOST_TEST(o.minValue >= 0.0, v.name);
    BOOST_TEST(bins > 0.01, v.name);
  }
}

BOOST_AUTO_TEST_CASE(projection_agrees_with_direct_sampling) {
  std::printf("\nagainst direct sampling (10^6 particles, K = 3 steps, p on D):\n");
  const long particles = 1000000;
  {
    Setup s;
    s.cells = {120, 1, 1};
    s.m0 = vec({0.5});
    s.v0 = 0.3;  // the start already puts mass on both atoms
    s.clip = 0.5;
    s.xP = vec({0.9});
    s.C = models::ConstraintSet::box(vec({-1.6}), vec({1.6}));
    compareWithSampling("1-D box, exact_conv", s, 3, particles);
    s.method = solver::DiffusionMethod::FokkerPlanck;
    compareWithSampling("1-D box, fokker_planck", s, 3, particles);
  }
  {
    Setup s;
    s.dim = 2;
    s.cells = {60, 60, 1};
    s.xP = vec({0.8, -0.4});
    s.xQ = vec({0.0, 0.0});
    s.m0 = vec({0.5, 0.5});
    s.v0 = 0.3;
    s.clip = 1.0;
    s.eta = 0.3;
    s.C = models::ConstraintSet::box(vec({-1.5, -0.9}), vec({1.2, 1.5}));
    s.method = solver::DiffusionMethod::FokkerPlanck;
    s.substeps = 8;
    compareWithSampling("2-D box, fokker_planck", s, 3, particles);
    s.method = solver::DiffusionMethod::ExactConvolution;
    compareWithSampling("2-D box, exact_conv", s, 3, particles);
    s.C = models::ConstraintSet::ball(vec({0.2, -0.1}), 1.3);
    s.ballBins = 32;
    s.method = solver::DiffusionMethod::ExactConvolution;
    compareWithSampling("2-D ball, exact_conv", s, 3, particles);
  }
}

BOOST_AUTO_TEST_CASE(divergences_include_the_boundary_bins) {
  // Same cells, different boundary bins: the divergences must see the difference, in mass form (SingularMasses).
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, meshes::BoxMesh({meshes::Axis::uniform(-1, 1, 40)}), 2);
  const solver::DivergenceFunctionals f(mesh, {2.0});
  auto u = mesh.createVector();
  PetscScalar* a;
  VecGetArray(u, &a);
  for (PetscInt l = 0; l < 2 * static_cast<PetscInt>(mesh.owned().size()); ++l) a[l] = 0.35;  // 0.7 of the mass
  VecRestoreArray(u, &a);
  solver::SingularMasses bins;
  bins.p = {0.1, 0.2};
  bins.q = {0.2, 0.1};
  const auto v = f.evaluate(u, &bins);
  // Exact: the cells agree, so only the two atoms contribute: KL = 0.1 log(0.5) + 0.2 log 2, R_2 = log(sum P^2/Q).
  const double kl = 0.1 * std::log(0.5) + 0.2 * std::log(2.0), r2 = std::log(0.7 + 0.01 / 0.2 + 0.04 / 0.1);
  std::printf("\ncells equal, atoms swapped: KL %.15f (exact %.15f), R_2 %.15f (exact %.15f), TV %.15f\n", v.kl, kl,
              v.renyi[0], r2, v.tv);
  BOOST_TEST(std::fabs(v.kl - kl) <= 1e-13);
  BOOST_TEST(std::fabs(v.renyi[0] - r2) <= 1e-13);
  BOOST_TEST(std::fabs(v.tv - 0.1) <= 1e-14);
  // Without the bins the two densities would look equal: the bins are what carries the difference.
  bins.q = bins.p;
  const auto same = f.evaluate(u, &bins);
  BOOST_TEST(same.kl == 0.0);
  BOOST_TEST(same.tv == 0.0);
  // A projected run with D = D': p and q coincide, bins included, so every divergence is 0.
  Setup s;
  s.cells = {300, 1, 1};
  s.m0 = vec({1.2});
  s.v0 = 0.3;
  s.xQ = s.xP;
  s.C = models::ConstraintSet::box(vec({-1.6}), vec({1.6}));
  const auto o = projected_gd::runSolver(s, 5);
  BOOST_TEST(o.binsP == o.binsQ);
  BOOST_TEST(o.p == o.q);
  // And with D != D' the bins differ and enter KL: evaluating with and without them gives different numbers.
  s.xQ = vec({0.0});
  const auto d = projected_gd::runSolver(s, 5);
  const meshes::DistributedBoxMesh mesh1(PETSC_COMM_WORLD, meshes::BoxMesh({meshes::Axis::uniform(-3, 3, 300)}), 2);
  const solver::DivergenceFunctionals f1(mesh1, {2.0});
  auto w = mesh1.createVector();
  solver::FieldGatherer g(mesh1);
  g.scatter(d.p, w, 0);
  g.scatter(d.q, w, 1);
  solver::SingularMasses b{d.binsP, d.binsQ};
  const auto with = f1.evaluate(w, &b), without = f1.evaluate(w);
  std::printf("D != D', 5 steps: KL with the bins %.10e, cells only %.10e; bins p %.6f %.6f, q %.6f %.6f\n", with.kl,
              without.kl, d.binsP[0], d.binsP[1], d.binsQ[0], d.binsQ[1]);
  BOOST_TEST(std::fabs(with.p.mass - 1.0) <= 1e-13);
  BOOST_TEST(std::fabs(with.kl - without.kl) > 1e-4 * with.kl);
}

// BoundaryBins::projectedPointBin (the classification of one point, used by the Monte Carlo sampler) against the
// finite-volume Pi_C #: a unit mass in one mesh cell outside C goes to one bin, and every point x of that cell must
// find that bin from Pi_C(x). Box: well defined for every point of every outside cell (the cell's classes are the
// point's); checked at random points of every cell, and the interior points of C find no bin. Ball: well defined for
// the cells that Pi_C # sends wholly to one bin (no share kept, one bin): all their sub-cell points lie in one angular
// sector, a convex cone, and so does the cell centre, which is checked.
BOOST_AUTO_TEST_CASE(a_projected_point_falls_in_the_bin_of_its_cell) {
  std::mt19937_64 rng(173);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  auto check = [&](const meshes::BoxMesh& mesh, const models::ConstraintSet& C, int angularBins = 0) {
    const int d = mesh.dim();
    const solver::BoundaryBins bins(mesh, C, angularBins);
    const solver::ConstraintProjection proj(mesh, bins);
    int checkedCells = 0, outsideCells = 0, kept = 0;
    std::size_t c = 0;
    for (int k = 0; k < mesh.cells(2); ++k)
      for (int j = 0; j < mesh.cells(1); ++j)
        for (int i = 0; i < mesh.cells(0); ++i, ++c) {
          std::vector<double> f(mesh.totalCells(), 0.0), m(bins.size(), 0.0);
          f[c] = 1.0 / mesh.cellVolume(i, j, k);
          proj.project(f, m);
          const auto [lo, hi] = mesh.cellBounds(i, j, k);
          if (f[c] != 0.0) {
            if (f[c] == 1.0 / mesh.cellVolume(i, j, k)) {  // wholly kept: its points are interior points of C
              ++kept;
              solver::ParameterPoint x{};
              for (int a = 0; a < d; ++a) x[a] = lo[a] + U(rng) * (hi[a] - lo[a]);
              BOOST_TEST((bins.projectedPointBin(x.data(), false) == solver::BoundaryBins::kInterior));
            }
            continue;
          }
          ++outsideCells;
          std::size_t target = solver::BoundaryBins::kInterior;
          int nonzero = 0;
          for (std::size_t b = 0; b < m.size(); ++b)
            if (m[b] != 0.0) ++nonzero, target = b;
          if (nonzero != 1) continue;
          ++checkedCells;
          const int points = bins.isBox() ? 8 : 1;
          for (int n = 0; n < points; ++n) {
            solver::ParameterPoint x{0, 0, 0}, theta{0, 0, 0};
            for (int a = 0; a < d; ++a) x[a] = bins.isBox() ? lo[a] + U(rng) * (hi[a] - lo[a]) : 0.5 * (lo[a] + hi[a]);
            theta = x;
            C.projectInPlace(theta.data(), d);
            const std::size_t b = bins.projectedPointBin(theta.data(), theta != x);
            BOOST_TEST(b == target, C.describe() << ": cell (" << i << "," << j << "," << k << ") point bin " << b
                                                 << " (" << (b < bins.size() ? bins.pieceName(b) : "interior")
                                                 << "), cell bin " << target << " (" << bins.pieceName(target) << ")");
          }
        }
    BOOST_TEST_MESSAGE(C.describe() << ": " << checkedCells << " of " << outsideCells << " outside cells checked, "
                                    << kept << " kept cells");
    BOOST_TEST(kept > 0);
    // Box: every outside cell is well defined; ball with 8 sectors (azimuths): most are (the rest straddle a sector
    // edge; with the default bins, about one cell wide, most cells do).
    if (bins.isBox()) BOOST_TEST(checkedCells == outsideCells);
    else BOOST_TEST(checkedCells > outsideCells / 2);
  };
  check(meshes::BoxMesh({meshes::Axis::uniform(-2, 2, 8)}), models::ConstraintSet::box(vec({-1.0}), vec({1.5})));
  check(meshes::BoxMesh({meshes::Axis::uniform(-2, 2, 8)}), models::ConstraintSet::ball(vec({0.5}), 1.0));
  check(meshes::BoxMesh({meshes::Axis::uniform(-2, 2, 8), meshes::Axis::uniform(-2, 2, 8)}),
        models::ConstraintSet::box(vec({-1.0, -0.5}), vec({1.5, 2.0})));
  check(meshes::BoxMesh({meshes::Axis::uniform(-3, 3, 6), meshes::Axis::uniform(-3, 3, 6), meshes::Axis::uniform(-3, 3, 6)}),
        models::ConstraintSet::box(vec({-1.0, -2.0, 0.0}), vec({2.0, 1.0, 3.0})));
  check(meshes::BoxMesh({meshes::Axis::uniform(-1, 1, 20), meshes::Axis::uniform(-1, 1, 20)}),
        models::ConstraintSet::ball(vec({0.1, -0.05}), 0.7), 8);
  check(meshes::BoxMesh({meshes::Axis::uniform(-1, 1, 10), meshes::Axis::uniform(-1, 1, 10), meshes::Axis::uniform(-1, 1, 10)}),
        models::ConstraintSet::ball(vec({0.1, -0.05, 0.0}), 0.7), 8);
}
