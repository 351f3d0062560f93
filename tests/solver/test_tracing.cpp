// Coupled tracing diffusions between noisy-GD steps (MATH.md §2.2, CYS Lemma 1 and Lemma 4; docs/tracing.md):
//   * at s = eta the tracing densities are the noisy-GD step's (NoisyGradientDescent, exact convolution), 1-D and 2-D;
//   * quadratic loss: U2 is constant, V_s = U2 and |V_s - V'_s| = |g_D - g_D'| (Lemma 4 with equality);
//   * logistic loss: Lemma 4 holds, R_2(p_s || p'_s) is continuous in s (s -> 0: R_2(phi # p_k || phi # p'_k);
//     s = eta: the step's value), with the per-step contribution table;
//   * conservation of p_s (and of the drift measures V_s p_s) up to the reported outflow;
//   * the co-transport primitives (constant ratios stay constant, ratios stay convex combinations);
//   * pointwise and weak accuracy of V_s under mesh refinement.
#define BOOST_TEST_MODULE tracing
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "PetscFixture.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "solver/functionals/Divergences.hpp"
#include "solver/noisygd/GaussianConvolution.hpp"
#include "solver/noisygd/NoisyGradientDescent.hpp"
#include "solver/noisygd/PushForward.hpp"
#include "solver/noisygd/TracingDiffusion.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

solver::GradientField quadraticGradient(double lambda, std::array<double, 3> xbar) {
  return [lambda, xbar](const solver::ParameterPoint& t) {
    return solver::ParameterPoint{lambda * (t[0] - xbar[0]), lambda * (t[1] - xbar[1]), lambda * (t[2] - xbar[2])};
  };
}

solver::GradientField empiricalGradient(std::shared_ptr<const models::EmpiricalLoss> L, int dim) {
  return [L, dim](const solver::ParameterPoint& t) {
    models::Vector th(dim);
    for (int a = 0; a < dim; ++a) th[a] = t[a];
    const models::Vector g = L->gradient(th);
    solver::ParameterPoint r{0, 0, 0};
    for (int a = 0; a < dim; ++a) r[a] = g[a];
    return r;
  };
}

/// L2-regularised logistic regression on four labelled records; D' replaces record 0.
struct Logistic {
  solver::GradientField gD, gDPrime;
};
Logistic logisticPair(int dim, double mu) {
  auto loss = std::make_shared<models::LogisticLoss>(mu);
  std::vector<models::Record> recs;
  models::Record replacement;
  if (dim == 1) {
    for (auto [x, y] : {std::pair{1.0, 1.0}, {-0.5, -1.0}, {2.0, 1.0}, {0.3, -1.0}})
      recs.push_back({models::Vector::Constant(1, x), y});
    replacement = {models::Vector::Constant(1, -1.5), -1.0};
  } else {
    const double xs[4][2] = {{1.0, 0.5}, {-0.5, 1.0}, {0.8, -1.2}, {-1.0, -0.3}};
    const double ys[4] = {1.0, -1.0, 1.0, -1.0};
    for (int i = 0; i < 4; ++i) {
      models::Vector x(2);
      x << xs[i][0], xs[i][1];
      recs.push_back({x, ys[i]});
    }
    models::Vector x(2);
    x << -1.0, 1.5;
    replacement = {x, -1.0};
  }
  const models::Dataset D(recs);
  const models::Dataset DPrime = models::Neighbour::replace(0, replacement).apply(D);
  auto LD = std::make_shared<const models::EmpiricalLoss>(loss, D);
  auto LDPrime = std::make_shared<const models::EmpiricalLoss>(loss, DPrime);
  return {empiricalGradient(LD, dim), empiricalGradient(LDPrime, dim)};
}

/// A noisy-GD run (exact convolution) on a distributed mesh with a Gaussian start p_0 = p'_0 = N(m0, v0 I), plus the
/// tracing diffusion on the same mesh and the R_2 functional.
struct Run {
  meshes::DistributedBoxMesh mesh;
  solver::NoisyGdSettings settings;
  solver::GradientField gD, gDPrime;
  solver::NoisyGradientDescent gd;
  solver::FieldGatherer gatherer;
  solver::DivergenceFunctionals functionals;
  meshes::VecHandle u, work;
  solver::TracingDiffusion tracing;

  static std::vector<meshes::Axis> axes(int dim, int cells, double halfWidth) {
    std::vector<meshes::Axis> a;
    for (int d = 0; d < dim; ++d) a.push_back(meshes::Axis::uniform(-halfWidth, halfWidth, cells));
    return a;
  }
  static solver::NoisyGdSettings gdSettings(double eta, std::array<double, 3> variance) {
    solver::NoisyGdSettings s;
    s.eta = eta;
    s.noiseVariance = variance;
    s.diffusion = solver::DiffusionMethod::ExactConvolution;
    return s;
  }
  static solver::TracingSettings tracingSettings(double eta, std::array<double, 3> variance, double bound) {
    solver::TracingSettings t;
    t.eta = eta;
    t.noiseVariance = variance;
    t.lemma4Bound = bound;
    return t;
  }

  Run(int dim, int cells, double halfWidth, double eta, std::array<double, 3> variance, solver::GradientField a,
      solver::GradientField b, double lemma4Bound, std::array<double, 3> m0, double v0)
      : mesh(PETSC_COMM_WORLD, meshes::BoxMesh(axes(dim, cells, halfWidth)), 2),
        settings(gdSettings(eta, variance)),
        gD(a),
        gDPrime(b),
        gd(mesh, a, b, settings),
        gatherer(mesh),
        functionals(mesh, {2.0}),
        tracing(mesh.box(), a, b, tracingSettings(eta, variance, lemma4Bound)) {
    u = mesh.createVector();
    work = mesh.createVector();
    models::Vector mean(dim);
    for (int d = 0; d < dim; ++d) mean[d] = m0[d];
    const models::Gaussian g0(mean, v0 * models::Matrix::Identity(dim, dim));
    PetscScalar* x;
    VecGetArray(u, &x);
    double localMass = 0;
    mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
      const auto [lo, hi] = mesh.box().cellBounds(i, j, k);
      x[2 * l] = x[2 * l + 1] = g0.cellAverage(lo, hi);
      localMass += mesh.ownedVolumes()[l] * x[2 * l];
    });
    double mass;
    MPI_Allreduce(&localMass, &mass, 1, MPI_DOUBLE, MPI_SUM, mesh.comm());
    for (PetscInt l = 0; l < 2 * mesh.owned().size(); ++l) x[l] /= mass;
    VecRestoreArray(u, &x);
  }

  std::vector<double> field(int f) const { return gatherer.gather(u, f); }
  double renyi() const { return functionals.evaluate(u).renyi[0]; }
  double renyi(const std::vector<double>& p, const std::vector<double>& q) const {
    gatherer.scatter(p, work, 0);
    gatherer.scatter(q, work, 1);
    return functionals.evaluate(work).renyi[0];
  }
};

double relL1(const std::vector<double>& a, const std::vector<double>& b, const std::vector<double>& vol) {
  double num = 0, den = 0;
  for (std::size_t c = 0; c < a.size(); ++c) {
    num += vol[c] * std::fabs(a[c] - b[c]);
    den += vol[c] * std::fabs(b[c]);
  }
  return num / den;
}

/// max over cell centres of |g_D - g_D'| (S_g/n on the mesh), computed independently of TracingDiffusion.
double meshGradientGap(const meshes::BoxMesh& m, const solver::GradientField& a, const solver::GradientField& b) {
  double gap = 0;
  for (int k = 0; k < m.cells(2); ++k)
    for (int j = 0; j < m.cells(1); ++j)
      for (int i = 0; i < m.cells(0); ++i) {
        const auto x = m.centreAt({i, j, k});
        const auto ga = a(x), gb = b(x);
        double n2 = 0;
        for (int d = 0; d < m.dim(); ++d) n2 += (ga[d] - gb[d]) * (ga[d] - gb[d]);
        gap = std::max(gap, std::sqrt(n2));
      }
  return gap;
}

}  // namespace

BOOST_AUTO_TEST_CASE(tracing_at_eta_is_the_noisy_gd_step) {
  // psi_eta = T_D, psi'_eta = T_D' and the convolution N(0, 2 eta Sigma): the same operators as the step, so the
  // densities must agree to round-off (in fact bitwise: G_eta = 1 * g_D + 0 * g_D').
  std::printf("\ntracing at s = eta vs the noisy-GD step (exact convolution): relative L1 differences\n");
  std::printf("%4s %10s %6s %4s %14s %14s %8s\n", "dim", "loss", "cells", "k", "|p_eta - p|", "|p'_eta - p'|", "time");
  for (int dim : {1, 2}) {
    for (const char* lossName : {"quadratic", "logistic"}) {
      const bool quad = std::string(lossName) == "quadratic";
      const auto lg = logisticPair(dim, 0.5);
      const auto gD = quad ? quadraticGradient(1.0, {0.4, 0.2, 0}) : lg.gD;
      const auto gDPrime = quad ? quadraticGradient(1.0, {0.0, 0.0, 0}) : lg.gDPrime;
      const int cells = dim == 1 ? 800 : 100;
      const std::array<double, 3> variance =
          dim == 1 ? std::array<double, 3>{0.3, 1, 1} : std::array<double, 3>{0.3, 0.2, 1};
      Run r(dim, cells, 6.0, 0.2, variance, gD, gDPrime, INFINITY, {0.2, -0.1, 0}, 0.5);
      for (int k = 0; k < 3; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        r.tracing.setStart(r.gatherer, r.u);
        const auto st = r.tracing.at(r.settings.eta);
        r.gd.step(r.u);
        const auto p = r.field(0), q = r.field(1);
        const double eP = relL1(st.p, p, r.tracing.cellVolumes()), eQ = relL1(st.pPrime, q, r.tracing.cellVolumes());
        std::printf("%4d %10s %6d %4d %14.3e %14.3e %7.2fs\n", dim, lossName, cells, k, eP, eQ, seconds(t0));
        BOOST_TEST(eP <= 1e-13);
        BOOST_TEST(eQ <= 1e-13);
      }
    }
  }
  std::fflush(stdout);
}

BOOST_AUTO_TEST_CASE(quadratic_drift_is_constant_and_lemma4_is_tight) {
  // g = lambda (theta - xbar): U2 = lambda (xbar' - xbar)/2 is constant, so V_s = U2, V'_s = -U2 and
  // |V_s - V'_s| = lambda |xbar - xbar'| = |g_D - g_D'| = S_g/n everywhere (Lemma 4 with equality).
  std::printf("\nquadratic loss: drift V_s against the constant U2 (cells with p_s >= 1e-12 max p_s)\n");
  std::printf("%4s %4s %8s %10s %14s %14s %14s %8s\n", "dim", "k", "s/eta", "defined", "max|V-U2|/|U2|",
              "max|V'+U2|/|U2|", "supGap/bound-1", "above");
  const double lambda = 1.0;
  for (int dim : {1, 2}) {
    const std::array<double, 3> xbar{0.4, -0.3, 0}, xbarPrime{0, 0, 0};
    const auto gD = quadraticGradient(lambda, xbar), gDPrime = quadraticGradient(lambda, xbarPrime);
    double bound = 0;
    std::array<double, 3> u2{0, 0, 0};
    for (int a = 0; a < dim; ++a) {
      u2[a] = lambda * (xbarPrime[a] - xbar[a]) / 2;
      bound += 4 * u2[a] * u2[a];
    }
    bound = std::sqrt(bound);
    const double u2norm = bound / 2;
    Run r(dim, dim == 1 ? 600 : 96, 6.0, 0.25, {0.5, 0.4, 1}, gD, gDPrime, bound, {0.1, 0.2, 0}, 0.6);
    BOOST_TEST(std::fabs(r.tracing.discreteLemma4Bound() - bound) <= 1e-14 * bound);
    for (int k = 0; k < 3; ++k) {
      r.tracing.setStart(r.gatherer, r.u);
      for (double frac : {0.0, 0.25, 0.5, 1.0}) {
        const auto st = r.tracing.at(r.settings.eta * frac);
        double eV = 0, eVp = 0;
        for (std::size_t c = 0; c < st.p.size(); ++c) {
          double nv = 0, nvp = 0;
          for (int a = 0; a < dim; ++a) {
            const double v = st.v[c * dim + a], vp = st.vPrime[c * dim + a];
            if (!std::isnan(v)) nv += (v - u2[a]) * (v - u2[a]);
            if (!std::isnan(vp)) nvp += (vp + u2[a]) * (vp + u2[a]);
          }
          eV = std::max(eV, std::sqrt(nv) / u2norm);
          eVp = std::max(eVp, std::sqrt(nvp) / u2norm);
        }
        std::printf("%4d %4d %8.2f %10ld %14.3e %14.3e %14.3e %8ld\n", dim, k, frac, st.definedBoth, eV, eVp,
                    st.supGap / bound - 1, st.cellsAboveBound);
        BOOST_TEST(eV <= 1e-10);
        BOOST_TEST(eVp <= 1e-10);
        BOOST_TEST(std::fabs(st.supGap / bound - 1) <= 1e-10);
        BOOST_TEST(st.cellsAboveBound == 0);
        BOOST_TEST(st.definedBoth > 0);
        // Every cell where both are defined has |V - V'| = bound (not only the sup).
        double minGap = INFINITY;
        for (std::size_t c = 0; c < st.p.size(); ++c) {
          if (std::isnan(st.v[c * dim]) || std::isnan(st.vPrime[c * dim])) continue;
          double g2 = 0;
          for (int a = 0; a < dim; ++a) g2 += std::pow(st.v[c * dim + a] - st.vPrime[c * dim + a], 2);
          minGap = std::min(minGap, std::sqrt(g2));
        }
        BOOST_TEST(std::fabs(minGap / bound - 1) <= 1e-10);
      }
      r.gd.step(r.u);
    }
  }
  std::fflush(stdout);
}

BOOST_AUTO_TEST_CASE(logistic_lemma4_and_renyi_continuity) {
  // Regularised logistic regression, four records, D' replaces one. S_g/n := max over the mesh of |g_D - g_D'|.
  // Per step k: R_2 along the tracing path s in [0, eta]; s = 0 is R_2(phi # p_k || phi # p'_k) (phi = id - eta U1,
  // computed here independently with PushForward), s = eta the step's value.
  for (int dim : {1, 2}) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto lg = logisticPair(dim, 0.5);
    const int cells = dim == 1 ? 800 : 120;
    const double eta = 0.2;
    const std::array<double, 3> variance{0.3, 0.3, 1};
    const meshes::BoxMesh probe(Run::axes(dim, cells, 6.0));
    const double bound = meshGradientGap(probe, lg.gD, lg.gDPrime);
    Run r(dim, cells, 6.0, eta, variance, lg.gD, lg.gDPrime, bound, {0.2, -0.1, 0}, 0.5);
    BOOST_TEST(std::fabs(r.tracing.discreteLemma4Bound() - bound) <= 1e-14 * bound);
    const solver::GradientField U1 = [&lg](const solver::ParameterPoint& t) {
      const auto a = lg.gD(t), b = lg.gDPrime(t);
      return solver::ParameterPoint{0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2])};
    };
    const solver::PushForward phi(r.mesh.box(), U1, eta);
    const int m = 4, K = 4;
    std::printf("\nlogistic loss, %d-D, %d cells per axis, eta = %.2f, Sigma = %.2f I, S_g/n on the mesh = %.6f\n", dim,
                cells, eta, variance[0], bound);
    std::printf("%3s %13s %13s", "k", "R(eta k)", "R(s=0)");
    for (int j = 1; j <= m; ++j) std::printf("    R(s=%d/%d eta)", j, m);
    std::printf(" %13s %12s %11s %9s %6s\n", "R(eta(k+1))", "step contrib", "phi change", "supGap/Sg", "above");
    double prevR = r.renyi();
    for (int k = 0; k < K; ++k) {
      r.tracing.setStart(r.gatherer, r.u);
      // phi # p_k, phi # p'_k independently.
      auto pPhi = r.field(0), qPhi = r.field(1);
      phi.apply(pPhi);
      phi.apply(qPhi);
      const double rPhi = r.renyi(pPhi, qPhi);
      const auto s0 = r.tracing.at(0.0);
      const double r0 = r.renyi(s0.p, s0.pPrime);
      BOOST_TEST(std::fabs(r0 - rPhi) <= 1e-12 * std::max(rPhi, 1e-300) + 1e-300);
      BOOST_TEST(s0.cellsAboveBound == 0);
      const auto path = r.tracing.run(m);
      std::vector<double> rs;
      double worstGap = s0.supGap;
      long above = s0.cellsAboveBound;
      for (const auto& st : path) {
        rs.push_back(r.renyi(st.p, st.pPrime));
        worstGap = std::max(worstGap, st.supGap);
        above += st.cellsAboveBound;
        BOOST_TEST(st.cellsAboveBound == 0);
        BOOST_TEST(st.supGap <= bound * (1 + 1e-10));
        BOOST_TEST(st.definedBoth > 0);
      }
      r.gd.step(r.u);
      const double rNext = r.renyi();
      BOOST_TEST(std::fabs(rs.back() - rNext) <= 1e-12 * rNext);
      std::printf("%3d %13.6e %13.6e", k, prevR, r0);
      for (double v : rs) std::printf(" %16.9e", v);
      std::printf(" %13.6e %12.5e %11.3e %9.6f %6ld\n", rNext, rNext - prevR, r0 - prevR, worstGap / bound, above);
      // phi is a bijection (eta * beta < 1): R(phi # p_k || phi # p'_k) = R(p_k || p'_k) up to the push-forward's
      // discretisation error.
      if (k > 0) BOOST_TEST(std::fabs(r0 - prevR) <= 1e-3 * prevR);
      // Continuity at s -> 0: R(s) -> R(s = 0) (linearly in s).
      if (k == K - 1) {
        std::printf("    continuity at s -> 0 (k = %d): R(0) = %.12e\n    %10s %16s %14s %8s\n", k, r0, "s/eta",
                    "R(s)", "|R(s) - R(0)|", "ratio");
        double prev = 0;
        for (double frac : {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6}) {
          const auto st = r.tracing.at(eta * frac);
          const double rs_ = r.renyi(st.p, st.pPrime);
          const double e = std::fabs(rs_ - r0);
          std::printf("    %10.0e %16.10e %14.4e %8.2f\n", frac, rs_, e, prev > 0 ? prev / e : 0.0);
          if (prev > 0) BOOST_TEST(e < prev);
          prev = e;
          BOOST_TEST(st.cellsAboveBound == 0);
        }
        BOOST_TEST(prev <= 1e-5 * r0);
      }
      prevR = rNext;
    }
    std::printf("    (%.1f s)\n", seconds(t0));
    std::fflush(stdout);
  }
}

BOOST_AUTO_TEST_CASE(conservation_of_the_tracing_densities) {
  // mass(p_s) + reported outflow = mass(p_k) to 1e-13 for every s, also for the drift measures V_s p_s; the box is
  // chosen tight enough that some mass leaves it.
  std::printf("\nconservation (worst over s in {0, eta/4, ..., eta} and three steps)\n%4s %14s %14s %14s\n", "dim",
              "mass error", "drift error", "outflow");
  for (int dim : {1, 2}) {
    const auto lg = logisticPair(dim, 0.5);
    Run r(dim, dim == 1 ? 400 : 80, 3.0, 0.3, {0.5, 0.5, 1}, lg.gD, lg.gDPrime, INFINITY, {0.8, -0.5, 0}, 0.6);
    double worstMass = 0, worstDrift = 0, outflow = 0;
    for (int k = 0; k < 3; ++k) {
      r.tracing.setStart(r.gatherer, r.u);
      auto states = r.tracing.run(4);
      states.push_back(r.tracing.at(0.0));
      for (const auto& st : states) {
        worstMass = std::max({worstMass, st.massErrorP, st.massErrorPPrime});
        worstDrift = std::max(worstDrift, st.driftMassError);
        outflow = std::max(outflow, st.pushP.density.total() + st.diffusionP.density.total());
      }
      r.gd.step(r.u);
    }
    std::printf("%4d %14.3e %14.3e %14.3e\n", dim, worstMass, worstDrift, outflow);
    BOOST_TEST(worstMass <= 1e-13);
    BOOST_TEST(worstDrift <= 1e-13);
    BOOST_TEST(outflow > 1e-8);  // the check is not vacuous
  }
  std::fflush(stdout);
}

BOOST_AUTO_TEST_CASE(co_transport_primitives) {
  // PushForward::coTransport and GaussianConvolution::coTransport: the density is exactly apply()'s; a passive field
  // c * density stays c * density; a general passive ratio stays within [min, max] of the source ratios; passive mass
  // is conserved with its outflow. 1-D with a folding map (eta beta > 1), 2-D with shears.
  for (int dim : {1, 2}) {
    std::vector<meshes::Axis> axes;
    for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-4, 4, dim == 1 ? 300 : 70));
    const meshes::BoxMesh mesh(axes);
    std::vector<double> p(mesh.totalCells()), vol(p.size()), ratio(p.size());
    std::size_t c = 0;
    for (int j = 0; j < mesh.cells(1); ++j)
      for (int i = 0; i < mesh.cells(0); ++i, ++c) {
        const auto x = mesh.centre(i, j, 0);
        p[c] = std::exp(-0.5 * (x[0] - 0.5) * (x[0] - 0.5) - 0.8 * x[1] * x[1]) * (1.2 + std::sin(2 * x[0]));
        vol[c] = mesh.cellVolume(i, j, 0);
        ratio[c] = std::tanh(x[0] - 0.3 * x[1]) + 0.2 * std::cos(3 * x[1]);
      }
    const double eta = dim == 1 ? 1.6 : 0.4;  // 1-D: f(x) = x - eta g(x) folds where g' > 1/eta
    const solver::GradientField g = [](const solver::ParameterPoint& t) {
      return solver::ParameterPoint{t[0] - 0.8 * std::sin(t[0]) + 0.1 * t[1], 0.7 * t[1] + 0.2 * std::tanh(t[0]), 0};
    };
    const solver::PushForward push(mesh, g, eta);
    const solver::GaussianConvolution conv(mesh, {0.3, 0.2, 0}, solver::GaussianConvolution::Route::Direct);
    const double cst = -0.37;
    std::vector<std::vector<double>> w(2, std::vector<double>(p.size()));
    double wMass0 = 0, wAbs0 = 0;
    for (std::size_t l = 0; l < p.size(); ++l) {
      w[0][l] = cst * p[l];
      w[1][l] = ratio[l] * p[l];
      wMass0 += vol[l] * w[1][l];
      wAbs0 += vol[l] * std::fabs(w[1][l]);
    }
    const double rMin = *std::min_element(ratio.begin(), ratio.end());
    const double rMax = *std::max_element(ratio.begin(), ratio.end());
    auto plain = p;
    const auto o1 = push.apply(plain);
    const auto o2 = conv.apply(plain);
    auto q = p;
    const auto c1 = push.coTransport(q, w);
    const auto c2 = conv.coTransport(q, w);
    BOOST_TEST(q == plain);  // bitwise
    BOOST_TEST(c1.density.mass == o1.mass);
    BOOST_TEST(c2.density.mass == o2.mass);
    const double pMax = *std::max_element(q.begin(), q.end());
    double eConst = 0, excess = 0, wMass = c1.passive[1].total() + c2.passive[1].total();
    for (std::size_t l = 0; l < q.size(); ++l) {
      wMass += vol[l] * w[1][l];
      if (q[l] < 1e-12 * pMax) continue;
      eConst = std::max(eConst, std::fabs(w[0][l] / q[l] - cst) / std::fabs(cst));
      const double rr = w[1][l] / q[l];
      excess = std::max({excess, rr - rMax, rMin - rr});
    }
    std::printf("\nco-transport primitives, %d-D: constant ratio error %.2e, convex-combination excess %.2e, passive "
                "mass error %.2e\n",
                dim, eConst, excess, std::fabs(wMass - wMass0) / wAbs0);
    BOOST_TEST(eConst <= 1e-12);
    BOOST_TEST(excess <= 1e-12);
    BOOST_TEST(std::fabs(wMass - wMass0) <= 1e-13 * wAbs0);
  }
  std::fflush(stdout);
}

BOOST_AUTO_TEST_CASE(drift_accuracy_under_refinement) {
  // 1-D logistic loss, one step from a Gaussian, at s = 0 (pure push-forward through phi) and s = eta/2. Reference:
  // the same construction on 12800 cells (16x finer than the finest mesh tested), restricted conservatively
  // (V_ref = sum (U2 p) / sum p over the fine cells of a coarse cell). Pointwise error (max over cells with
  // p_s >= 1e-3 max p_s) and the weak error |int phi (V p - V_ref p_ref)| for phi(x) = cos(x). docs/tracing.md §3.
  const double eta = 0.5, L = 7.0;
  const std::array<double, 3> variance{0.3, 1, 1};
  const auto lg = logisticPair(1, 0.5);
  const models::Gaussian g0(models::Vector::Constant(1, 0.3), models::Matrix::Constant(1, 1, 0.5));
  auto start = [&](const meshes::BoxMesh& m, std::vector<double>& p) {
    p.resize(m.totalCells());
    for (int i = 0; i < m.cells(0); ++i)
      p[i] = g0.cellAverage({m.axis(0).face(i), 0, 0}, {m.axis(0).face(i + 1), 0, 0});
  };
  solver::TracingSettings ts;
  ts.eta = eta;
  ts.noiseVariance = variance;
  const int finest = 12800;
  const meshes::BoxMesh fine({meshes::Axis::uniform(-L, L, finest)});
  solver::TracingDiffusion tf(fine, lg.gD, lg.gDPrime, ts);
  std::vector<double> p0;
  start(fine, p0);
  tf.setStart(p0, p0);
  for (double frac : {0.0, 0.5}) {
    const auto ref = tf.at(eta * frac);
    std::printf("\ndrift accuracy, 1-D logistic, s = %.1f eta, reference %d cells\n%8s %14s %7s %14s %7s\n", frac,
                finest, "cells", "max|V-Vref|", "rate", "weak err", "rate");
    double prevMax = 0, prevWeak = 0;
    for (int cells : {100, 200, 400, 800}) {
      const meshes::BoxMesh mesh({meshes::Axis::uniform(-L, L, cells)});
      solver::TracingDiffusion t(mesh, lg.gD, lg.gDPrime, ts);
      std::vector<double> p;
      start(mesh, p);
      t.setStart(p, p);
      const auto st = t.at(eta * frac);
      const int r = finest / cells;
      const double pMax = *std::max_element(st.p.begin(), st.p.end());
      double eMax = 0, weak = 0;
      for (int i = 0; i < cells; ++i) {
        double pr = 0, wr = 0;
        for (int f = i * r; f < (i + 1) * r; ++f) {
          pr += ref.p[f];
          wr += std::isnan(ref.v[f]) ? 0.0 : ref.v[f] * ref.p[f];
        }
        pr /= r;
        wr /= r;
        const double x = mesh.axis(0).centre(i), h = mesh.axis(0).width(i);
        const double vp = std::isnan(st.v[i]) ? 0.0 : st.v[i] * st.p[i];
        weak += h * std::cos(x) * (vp - wr);
        if (st.p[i] >= 1e-3 * pMax) eMax = std::max(eMax, std::fabs(st.v[i] - wr / pr));
      }
      weak = std::fabs(weak);
      std::printf("%8d %14.4e %7.2f %14.4e %7.2f\n", cells, eMax, prevMax > 0 ? std::log2(prevMax / eMax) : 0.0, weak,
                  prevWeak > 0 ? std::log2(prevWeak / weak) : 0.0);
      if (prevMax > 0) {
        BOOST_TEST(eMax < prevMax);          // at least first order pointwise
        BOOST_TEST(weak < 0.35 * prevWeak);  // second order in the weak sense
      }
      prevMax = eMax;
      prevWeak = weak;
    }
    BOOST_TEST(prevMax <= 1e-3 * tf.discreteLemma4Bound());
  }
  std::fflush(stdout);
}
