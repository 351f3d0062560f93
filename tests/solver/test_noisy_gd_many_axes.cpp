// The noisy-GD step's operators on whole fields of 4 to 6 axes (meshes::BoxMesh beyond PETSc's DMDA): the push-forward
// by shears (PushForward) and the exact Gaussian convolution (GaussianConvolution), against the exact Gaussian
// recursion of MATH.md §6 for quadratic losses L(theta) = (1/2) (theta - c)^T H (theta - c):
//   m <- m - eta H (m - c),   V <- (I - eta H) V (I - eta H)^T + 2 eta sigma^2 I.
// Diagonal H: the exact cell averages (products of the axis probabilities), their L1 error and its order on
// refinement. A full H (the shears' inversions couple every axis): the mean and covariance of the computed law.
// Mass: what the mesh holds plus the outflow is 1 to round-off, and no cell is negative.
// The divergences of whole fields (wholeFieldDivergences) against the Gaussian closed forms of MATH.md §6 and §7: on
// exact cell averages (the quadrature's order), and after noisy-GD steps (the whole chain's). A 4-D logistic
// regression (no closed form) against a Monte Carlo run of the algorithm itself, with confidence intervals.
#define BOOST_TEST_MODULE noisy_gd_many_axes
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "models/Dataset.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "solver/functionals/WholeFieldDivergences.hpp"
#include "solver/noisygd/GaussianConvolution.hpp"
#include "solver/noisygd/PushForward.hpp"

using namespace fpdp;

namespace {

constexpr double kEta = 0.2, kSigma = 0.5;

meshes::BoxMesh cube(int dim, int cells, double halfWidth) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-halfWidth, halfWidth, cells));
  return meshes::BoxMesh(std::move(axes));
}

/// Cell averages of N(m, diag(v)) on the mesh: products of the axis probabilities over the cell volumes.
std::vector<double> diagonalGaussianAverages(const meshes::BoxMesh& mesh, const models::Vector& m,
                                             const models::Vector& v) {
  const int d = mesh.dim();
  models::Matrix S = models::Matrix::Zero(d, d);
  for (int a = 0; a < d; ++a) S(a, a) = v(a);
  const models::Gaussian g(m, S);
  std::vector<std::vector<double>> axisAverage(static_cast<std::size_t>(d));
  for (int a = 0; a < d; ++a)
    for (int i = 0; i < mesh.cells(a); ++i) {
      const auto& ax = mesh.axis(a);
      axisAverage[a].push_back(g.axisProbability(a, ax.face(i), ax.face(i + 1)) / ax.width(i));
    }
  std::vector<double> out(mesh.totalCells());
  for (std::size_t c = 0; c < out.size(); ++c) {
    const auto idx = mesh.indexOf(c);
    double f = 1.0;
    for (int a = 0; a < d; ++a) f *= axisAverage[a][static_cast<std::size_t>(idx[a])];
    out[c] = f;
  }
  return out;
}

double cellVolume(const meshes::BoxMesh& mesh) {
  double v = 1.0;
  for (int a = 0; a < mesh.dim(); ++a) v *= mesh.axis(a).width(0);
  return v;
}

solver::GradientField quadraticGradient(const models::Matrix& H, const models::Vector& c) {
  return [H, c](const solver::ParameterPoint& t) {
    solver::ParameterPoint g{};
    const int d = static_cast<int>(c.size());
    for (int a = 0; a < d; ++a)
      for (int b = 0; b < d; ++b) g[a] += H(a, b) * (t[b] - c(b));
    return g;
  };
}

struct StepResult {
  std::vector<double> field;
  double startMass = 0.0;  // the start's cell averages hold the Gaussian's mass in the box only
  double outflow = 0.0;
};

double massOf(const meshes::BoxMesh& mesh, const std::vector<double>& field) {
  double mass = 0.0;
  for (double f : field) mass += f;
  return mass * cellVolume(mesh);
}

/// K noisy-GD steps on whole fields: push-forward through theta - eta H (theta - c), then the exact convolution.
StepResult noisyGd(const meshes::BoxMesh& mesh, std::vector<double> field, const models::Matrix& H,
                   const models::Vector& c, int K) {
  const solver::PushForward push(mesh, quadraticGradient(H, c), kEta);
  meshes::AxisValues s{};
  for (int a = 0; a < mesh.dim(); ++a) s[a] = std::sqrt(2.0 * kEta) * kSigma;
  const solver::GaussianConvolution noise(mesh, s);
  StepResult r;
  r.startMass = massOf(mesh, field);
  for (int k = 0; k < K; ++k) {
    r.outflow += push.apply(field).total();
    r.outflow += noise.apply(field).total();
  }
  r.field = std::move(field);
  return r;
}

/// The exact law after K steps from N(m0, V0).
models::Gaussian exactLaw(const models::Matrix& H, const models::Vector& c, models::Vector m, models::Matrix V, int K) {
  const int d = static_cast<int>(c.size());
  const models::Matrix A = models::Matrix::Identity(d, d) - kEta * H;
  for (int k = 0; k < K; ++k) {
    m = c + A * (m - c);
    V = A * V * A.transpose() + 2.0 * kEta * kSigma * kSigma * models::Matrix::Identity(d, d);
  }
  return models::Gaussian(m, V);
}

void checkMassAndSign(const meshes::BoxMesh& mesh, const StepResult& r) {
  double smallest = 0.0;
  for (double f : r.field) smallest = std::min(smallest, f);
  const double mass = massOf(mesh, r.field);
  BOOST_TEST(std::fabs(mass + r.outflow - r.startMass) < 1e-12,  // round-off of sums of 10^5 cells
             "mass + outflow - start mass = " << mass + r.outflow - r.startMass);
  BOOST_TEST(smallest == 0.0, "smallest cell value " << smallest);
}

}  // namespace

BOOST_AUTO_TEST_CASE(lines_of_a_six_axis_mesh_cover_every_cell_once) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < 6; ++a) axes.push_back(meshes::Axis::graded(-1.0, 1.0 + a, 3 + a % 3, 1.0 + 0.1 * a));
  const meshes::BoxMesh mesh(std::move(axes));
  double volume = 1.0;
  for (int a = 0; a < 6; ++a) volume *= mesh.axis(a).upper() - mesh.axis(a).lower();
  for (int axis = 0; axis < 6; ++axis) {
    std::vector<int> seen(mesh.totalCells(), 0);
    double swept = 0.0;
    mesh.forEachLine(axis, [&](const meshes::BoxMesh::Line& line) {
      BOOST_TEST(line.index[axis] == 0);
      for (int i = 0; i < mesh.cells(axis); ++i) {
        const auto at = static_cast<std::size_t>(line.offset + i * line.stride);
        ++seen[at];
        auto idx = line.index;
        idx[axis] = i;
        BOOST_TEST((mesh.indexOf(at) == idx));
        swept += line.crossSection * mesh.axis(axis).width(i);
      }
    });
    for (int n : seen) BOOST_TEST(n == 1);
    BOOST_TEST(std::fabs(swept - volume) < 1e-12 * volume);
  }
}

BOOST_AUTO_TEST_CASE(four_axes_diagonal_quadratic_converges_to_the_exact_cell_averages) {
  // L1 errors of the cell averages after K steps on 8^4, 12^4 and 16^4 cells: the push-forward is third order, the
  // convolution exact for the within-cell quadratics, so the order is at least 2.
  const int d = 4, K = 3;
  models::Matrix H = models::Matrix::Zero(d, d);
  const double lambda[4] = {1.0, 1.5, 0.7, 1.2};
  for (int a = 0; a < d; ++a) H(a, a) = lambda[a];
  models::Vector c(d), m0 = models::Vector::Zero(d), v0 = models::Vector::Constant(d, 0.3);
  c << 0.3, -0.2, 0.1, 0.0;
  const models::Gaussian exact = exactLaw(H, c, m0, v0.asDiagonal(), K);
  const models::Vector vK = exact.covariance().diagonal();
  std::vector<double> errors;
  for (int n : {8, 12, 16}) {
    const auto mesh = cube(d, n, 3.0);
    const auto r = noisyGd(mesh, diagonalGaussianAverages(mesh, m0, v0), H, c, K);
    checkMassAndSign(mesh, r);
    const auto want = diagonalGaussianAverages(mesh, exact.mean(), vK);
    double l1 = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) l1 += std::fabs(r.field[i] - want[i]);
    errors.push_back(l1 * cellVolume(mesh));
    std::printf("4-D diagonal, %d^4 cells: L1 error %.3e\n", n, errors.back());
  }
  const double order1 = std::log(errors[0] / errors[1]) / std::log(12.0 / 8.0);
  const double order2 = std::log(errors[1] / errors[2]) / std::log(16.0 / 12.0);
  std::printf("observed orders %.2f, %.2f\n", order1, order2);
  BOOST_TEST(order1 > 1.8);
  BOOST_TEST(order2 > 1.8);
  BOOST_TEST(errors[2] < 2e-2);
}

BOOST_AUTO_TEST_CASE(a_full_hessian_in_four_and_five_axes_converges_to_the_exact_moments) {
  // A rotated H couples every axis: each shear's inversion solves for up to d - 1 coordinates. The computed law's
  // mean and covariance (cell-average moments, with the uniform cells' h^2/12 added to the variances) against the
  // exact recursion on two meshes: each shear is taken at the other coordinates' cell centres, an O(h^2) error.
  for (int d : {4, 5}) {
    const int K = 2;
    models::Matrix H = models::Matrix::Identity(d, d);
    for (int a = 0; a + 1 < d; ++a) H(a, a + 1) = H(a + 1, a) = 0.3;
    models::Vector c = models::Vector::LinSpaced(d, -0.2, 0.2), m0 = models::Vector::Zero(d);
    const models::Vector v0 = models::Vector::Constant(d, 0.3);
    const models::Gaussian exact = exactLaw(H, c, m0, v0.asDiagonal(), K);
    const std::array<int, 2> cells = d == 4 ? std::array<int, 2>{12, 16} : std::array<int, 2>{8, 10};
    std::array<double, 2> meanError{}, covError{};
    for (int level = 0; level < 2; ++level) {
      const int n = cells[static_cast<std::size_t>(level)];
      const auto mesh = cube(d, n, 3.0);
      const auto r = noisyGd(mesh, diagonalGaussianAverages(mesh, m0, v0), H, c, K);
      checkMassAndSign(mesh, r);
      const double vol = cellVolume(mesh), h = mesh.axis(0).width(0);
      double mass = 0.0;
      models::Vector mean = models::Vector::Zero(d);
      models::Matrix second = models::Matrix::Zero(d, d);
      for (std::size_t cell = 0; cell < r.field.size(); ++cell) {
        const auto x = mesh.centreAt(mesh.indexOf(cell));
        const double w = r.field[cell] * vol;
        mass += w;
        for (int a = 0; a < d; ++a) {
          mean(a) += w * x[a];
          for (int b = 0; b < d; ++b) second(a, b) += w * x[a] * x[b];
        }
      }
      mean /= mass;
      models::Matrix cov = second / mass - mean * mean.transpose();
      cov.diagonal().array() += h * h / 12.0;
      meanError[level] = (mean - exact.mean()).cwiseAbs().maxCoeff();
      covError[level] = (cov - exact.covariance()).cwiseAbs().maxCoeff();
      std::printf("%d-D full H, %d^%d cells: mean error %.2e, covariance error %.2e (h^2 = %.2e)\n", d, n, d,
                  meanError[level], covError[level], h * h);
      BOOST_TEST(covError[level] < 0.3 * h * h);
    }
    const double covOrder = std::log(covError[0] / covError[1]) / std::log(static_cast<double>(cells[1]) / cells[0]);
    std::printf("%d-D full H: observed order of the covariance %.2f\n", d, covOrder);
    BOOST_TEST(covOrder > 1.8);
  }
}

namespace {

double Phi(double u) { return 0.5 * std::erfc(-u / std::sqrt(2.0)); }

/// The privacy profile of N(m1, V) against N(m2, V) at Mahalanobis distance mu (MATH.md §7).
double gaussianDelta(double mu, double eps) {
  return Phi(-eps / mu + mu / 2) - std::exp(eps) * Phi(-eps / mu - mu / 2);
}

double gaussianEpsilon(double mu, double delta) {
  double lo = 0.0, hi = 1.0;
  while (gaussianDelta(mu, hi) > delta) hi *= 2.0;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    (gaussianDelta(mu, mid) > delta ? lo : hi) = mid;
  }
  return hi;
}

double relative(double value, double exact) { return std::fabs(value - exact) / std::fabs(exact); }

}  // namespace

BOOST_AUTO_TEST_CASE(whole_field_divergences_of_exact_gaussians_in_four_axes_converge_at_fourth_order) {
  // N(m, I) against N(0, I) in 4-D, |m| = 0.9: KL = mu^2/2, R_alpha = alpha mu^2/2, TV = 2 Phi(mu/2) - 1, the
  // profile and eps(1e-3), on exact cell averages of the box [-6, 6]^4 (quadrature error only).
  const int d = 4;
  models::Vector m(d), zero = models::Vector::Zero(d), one = models::Vector::Ones(d);
  m << 0.6, -0.45, 0.3, 0.45;
  const double mu = m.norm();
  const solver::WholeFieldSettings settings{{2.0, 5.0}, {0.0, 0.5, 1.0}, {1e-3}};
  std::vector<double> worst;
  for (int n : {12, 18}) {
    const auto mesh = cube(d, n, 6.0);
    const auto v = solver::wholeFieldDivergences(mesh, diagonalGaussianAverages(mesh, m, one),
                                                 diagonalGaussianAverages(mesh, zero, one), settings);
    const double errors[] = {relative(v.pq.kl, mu * mu / 2),
                             relative(v.qp.kl, mu * mu / 2),
                             relative(v.pq.renyi[0], mu * mu),
                             relative(v.qp.renyi[1], 2.5 * mu * mu),
                             relative(v.tv, 2 * Phi(mu / 2) - 1),
                             relative(v.pq.hockeyStick[1], gaussianDelta(mu, 0.5)),
                             relative(v.qp.hockeyStick[2], gaussianDelta(mu, 1.0)),
                             relative(v.pq.epsilon[0].epsilon, gaussianEpsilon(mu, 1e-3)),
                             relative(v.qp.epsilon[0].epsilon, gaussianEpsilon(mu, 1e-3))};
    worst.push_back(*std::max_element(std::begin(errors), std::end(errors)));
    std::printf("4-D exact Gaussians, %d^4 cells: KL %.10f (exact %.10f), R_5(q||p) %.8f (%.8f), "
                "eps(1e-3) %.8f (%.8f); largest relative error %.2e\n",
                n, v.pq.kl, mu * mu / 2, v.qp.renyi[1], 2.5 * mu * mu, v.pq.epsilon[0].epsilon,
                gaussianEpsilon(mu, 1e-3), worst.back());
    BOOST_TEST(v.negativeCellsP + v.negativeCellsQ == 0);
    BOOST_TEST(v.pq.klWallShare < 1e-4);  // the walls 6 standard deviations out: 5e-5 on 12^4
  }
  const double order = std::log(worst[0] / worst[1]) / std::log(18.0 / 12.0);
  std::printf("observed order of the largest error %.2f\n", order);
  BOOST_TEST(order > 3.0);
  BOOST_TEST(worst[1] < 2e-3);
}

BOOST_AUTO_TEST_CASE(whole_field_divergences_of_unequal_covariances_match_the_closed_forms) {
  // N(m, S1) against N(0, S2), diagonal and unequal (the privacy loss is quadratic): KL and R_2 both ways against
  // models::gaussianKL and gaussianRenyi, in 5-D.
  const int d = 5;
  models::Vector m = models::Vector::LinSpaced(d, -0.3, 0.3), zero = models::Vector::Zero(d);
  const models::Vector v1 = models::Vector::LinSpaced(d, 0.8, 1.1), v2 = models::Vector::Constant(d, 1.0);
  const models::Matrix S1 = v1.asDiagonal(), S2 = v2.asDiagonal();
  const auto mesh = cube(d, 12, 6.0);
  const auto v = solver::wholeFieldDivergences(mesh, diagonalGaussianAverages(mesh, m, v1),
                                               diagonalGaussianAverages(mesh, zero, v2), {{2.0}, {}, {}});
  const double kl = models::gaussianKL(m, S1, zero, S2), klBack = models::gaussianKL(zero, S2, m, S1);
  const double r2 = models::gaussianRenyi(m, S1, zero, S2, 2.0), r2Back = models::gaussianRenyi(zero, S2, m, S1, 2.0);
  std::printf("5-D unequal covariances, 12^5 cells: KL %.8f (%.8f), KL(q||p) %.8f (%.8f), R_2 %.8f (%.8f), "
              "R_2(q||p) %.8f (%.8f)\n",
              v.pq.kl, kl, v.qp.kl, klBack, v.pq.renyi[0], r2, v.qp.renyi[0], r2Back);
  BOOST_TEST(relative(v.pq.kl, kl) < 1e-2);
  BOOST_TEST(relative(v.qp.kl, klBack) < 1e-2);
  BOOST_TEST(relative(v.pq.renyi[0], r2) < 1e-2);
  BOOST_TEST(relative(v.qp.renyi[0], r2Back) < 1e-2);
}

BOOST_AUTO_TEST_CASE(whole_field_kl_stays_finite_where_the_ratio_overflows) {
  // N(m, s^2 I) against N(0, s^2 I) in 4-D with narrow laws far apart: toward the corner near m, q lies in the
  // denormal range while p does not, so p/q overflows a double in some cells (seen: KL = NaN of a 6-D run on 5^6
  // cells while R_alpha, from logarithms, stayed finite). KL's terms take log r from the two logarithms there: KL is
  // finite, and where the mesh resolves the laws it approaches |m|^2 / (2 s^2).
  const int d = 4;
  const auto mesh = cube(d, 8, 6.0);
  long overflowing = 0;
  for (double s : {0.230, 0.233, 0.236, 0.239, 0.242, 0.245}) {
    const models::Vector m = models::Vector::Constant(d, 5.25), zero = models::Vector::Zero(d);
    const models::Vector v = models::Vector::Constant(d, s * s);
    const auto p = diagonalGaussianAverages(mesh, m, v), q = diagonalGaussianAverages(mesh, zero, v);
    for (std::size_t c = 0; c < p.size(); ++c)
      if (q[c] > 0.0 && !std::isfinite(p[c] / q[c])) ++overflowing;
    const auto w = solver::wholeFieldDivergences(mesh, p, q, {{2.0}, {}, {}});
    std::printf("4-D, s = %.3f: KL %.6g (closed form %.6g)\n", s, w.pq.kl, m.squaredNorm() / (2 * s * s));
    BOOST_TEST(!std::isnan(w.pq.kl));
    BOOST_TEST(!std::isnan(w.qp.kl));
    BOOST_TEST(w.pq.kl >= 0.0);
  }
  BOOST_TEST(overflowing > 0, "no cell of these pairs has p/q beyond a double: the test does not reach the case");
}

/// Quadratic noisy GD on D and D' (centres c and c' = 0), K steps from N(0, 0.3 I), a Hessian with next-neighbour
/// couplings 0.2: p_K and q_K are Gaussians of one covariance V_K, so R_2 = mu^2 and eps(delta) is the Gaussian pair's
/// at mu^2 = (m - m')^T V_K^-1 (m - m'). The errors of eps(1e-3) and R_2 on each mesh of `cells` per axis.
struct PairErrors {
  std::vector<double> eps, r2;
};
PairErrors pairAgainstTheClosedForm(int d, int K, const models::Vector& c, const std::vector<int>& cells) {
  models::Matrix H = models::Matrix::Identity(d, d);
  for (int a = 0; a + 1 < d; ++a) H(a, a + 1) = H(a + 1, a) = 0.2;
  const models::Vector cPrime = models::Vector::Zero(d), m0 = models::Vector::Zero(d);
  const models::Vector v0 = models::Vector::Constant(d, 0.3);
  const models::Gaussian lawP = exactLaw(H, c, m0, v0.asDiagonal(), K);
  const models::Gaussian lawQ = exactLaw(H, cPrime, m0, v0.asDiagonal(), K);
  const models::Vector dm = lawP.mean() - lawQ.mean();
  const double mu = std::sqrt(dm.dot(lawP.covariance().ldlt().solve(dm)));
  const double exactEps = gaussianEpsilon(mu, 1e-3), exactR2 = mu * mu;
  PairErrors errors;
  for (int n : cells) {
    const auto mesh = cube(d, n, 3.5);
    const auto start = diagonalGaussianAverages(mesh, m0, v0);
    const auto p = noisyGd(mesh, start, H, c, K), q = noisyGd(mesh, start, H, cPrime, K);
    checkMassAndSign(mesh, p);
    const auto v = solver::wholeFieldDivergences(mesh, p.field, q.field, {{2.0}, {}, {1e-3}});
    const double eps = std::max(v.pq.epsilon[0].epsilon, v.qp.epsilon[0].epsilon);
    errors.eps.push_back(std::fabs(eps - exactEps) / exactEps);
    errors.r2.push_back(std::fabs(v.pq.renyi[0] - exactR2) / exactR2);
    std::printf("%d-D noisy GD, %d^%d cells: eps(1e-3) %.6f (exact %.6f), R_2 %.6f (exact %.6f)\n", d, n, d, eps,
                exactEps, v.pq.renyi[0], exactR2);
  }
  return errors;
}

BOOST_AUTO_TEST_CASE(eps_of_four_axis_noisy_gd_converges_to_the_closed_form) {
  models::Vector c(4);
  c << 0.4, -0.2, 0.1, 0.2;
  const auto errors = pairAgainstTheClosedForm(4, 3, c, {14, 20, 28});
  const double epsOrder = std::log(errors.eps[1] / errors.eps[2]) / std::log(28.0 / 20.0);
  const double r2Order = std::log(errors.r2[1] / errors.r2[2]) / std::log(28.0 / 20.0);
  std::printf("observed orders: eps %.2f, R_2 %.2f\n", epsOrder, r2Order);
  BOOST_TEST(epsOrder > 1.8);
  BOOST_TEST(r2Order > 1.8);
  BOOST_TEST(errors.eps[2] < 1e-2);
}

BOOST_AUTO_TEST_CASE(six_axis_noisy_gd_approaches_the_closed_form) {
  // 7^6 and 9^6 cells: h = 1 and 0.78 against a spread of about 0.55, coarse; the errors fall with h.
  const auto errors = pairAgainstTheClosedForm(6, 2, models::Vector::LinSpaced(6, 0.3, -0.2), {7, 9});
  BOOST_TEST(errors.eps[1] < errors.eps[0]);
  BOOST_TEST(errors.r2[1] < errors.r2[0]);
  BOOST_TEST(errors.eps[1] < 0.1);
}

BOOST_AUTO_TEST_CASE(four_axis_logistic_noisy_gd_agrees_with_monte_carlo) {
  // L_D(theta) = mean_i log(1 + exp(-y_i theta . x_i)) + (mu/2)|theta|^2 on 6 records in R^4 (models::LogisticLoss, the
  // loss fpdp's cases use), K = 4 steps of eta = 0.2, sigma = 0.5 from N(0, 0.3 I), on [-3, 3]^4. 400,000 particles of
  // the algorithm itself (theta <- theta - eta grad L_D(theta) + sqrt(2 eta) sigma Z) against the solver on 20^4 and
  // 30^4 cells: the means of every coordinate and the probabilities of the half-spaces theta_a > 0 and of the central
  // box within 4.5 standard errors (plus 0.05 h^2); the variances, which carry the scheme's O(h^2) error (0.17 h^2
  // against the closed form of the quadratic case above), approaching the Monte Carlo's at second order and within
  // 4.5 standard errors plus 0.25 h^2 on 30^4.
  const int d = 4, K = 4, particles = 400000;
  std::vector<models::Record> records;
  const double xs[6][4] = {{1.0, 0.5, -0.3, 0.2}, {-0.4, 1.2, 0.1, -0.6}, {0.3, -0.2, 0.9, 0.4},
                           {0.8, 0.1, 0.2, -1.0}, {-0.7, -0.5, 0.6, 0.3}, {0.2, 0.9, -0.8, 0.5}};
  const double ys[6] = {1, -1, 1, 1, -1, 1};
  for (int i = 0; i < 6; ++i) {
    models::Vector x(d);
    for (int a = 0; a < d; ++a) x(a) = xs[i][a];
    records.push_back({x, ys[i]});
  }
  const models::EmpiricalLoss loss(std::make_shared<models::LogisticLoss>(0.5), models::Dataset(records));
  const solver::GradientField gradient = [&loss](const solver::ParameterPoint& t) {
    double theta[4], g[4];
    for (int a = 0; a < 4; ++a) theta[a] = t[a];
    loss.gradientInto(theta, g);
    solver::ParameterPoint out{};
    for (int a = 0; a < 4; ++a) out[a] = g[a];
    return out;
  };
  // The algorithm itself.
  std::mt19937_64 rng(20261207);
  std::normal_distribution<double> z(0.0, 1.0);
  std::array<double, 4> mcMean{}, mcVariance{}, mcPositive{};
  double mcCentral = 0.0;
  for (int n = 0; n < particles; ++n) {
    double theta[4], g[4];
    for (int a = 0; a < d; ++a) theta[a] = std::sqrt(0.3) * z(rng);
    for (int k = 0; k < K; ++k) {
      loss.gradientInto(theta, g);
      for (int a = 0; a < d; ++a) theta[a] += -kEta * g[a] + std::sqrt(2.0 * kEta) * kSigma * z(rng);
    }
    bool inCentral = true;
    for (int a = 0; a < d; ++a) {
      mcMean[a] += theta[a];
      mcVariance[a] += theta[a] * theta[a];
      mcPositive[a] += theta[a] > 0.0;
      inCentral = inCentral && std::fabs(theta[a]) < 0.6;
    }
    mcCentral += inCentral;
  }
  const double N = particles;
  for (int a = 0; a < d; ++a) {
    mcMean[a] /= N;
    mcVariance[a] = mcVariance[a] / N - mcMean[a] * mcMean[a];
    mcPositive[a] /= N;
  }
  mcCentral /= N;
  // The solver on two meshes (the middle face of each axis at 0, the central box |theta_a| < 0.6 of whole cells).
  std::array<std::array<double, 4>, 2> varianceGap{};
  for (int level = 0; level < 2; ++level) {
    const int n = level == 0 ? 20 : 30;
    const auto mesh = cube(d, n, 3.0);
    std::vector<double> field =
        diagonalGaussianAverages(mesh, models::Vector::Zero(d), models::Vector::Constant(d, 0.3));
    const solver::PushForward push(mesh, gradient, kEta);
    meshes::AxisValues s{};
    for (int a = 0; a < d; ++a) s[a] = std::sqrt(2.0 * kEta) * kSigma;
    const solver::GaussianConvolution noise(mesh, s);
    for (int k = 0; k < K; ++k) {
      push.apply(field);
      noise.apply(field);
    }
    const double vol = cellVolume(mesh), h = mesh.axis(0).width(0);
    const int centralCells = static_cast<int>(std::lround(0.6 / h));
    std::array<double, 4> mean{}, second{}, positive{};
    double mass = 0.0, central = 0.0;
    for (std::size_t c = 0; c < field.size(); ++c) {
      const auto index = mesh.indexOf(c);
      const auto x = mesh.centreAt(index);
      const double m = field[c] * vol;
      mass += m;
      bool inCentral = true;
      for (int a = 0; a < d; ++a) {
        mean[a] += m * x[a];
        second[a] += m * (x[a] * x[a] + h * h / 12.0);  // the cell's own second moment of a uniform spread
        if (index[a] >= n / 2) positive[a] += m;
        inCentral = inCentral && index[a] >= n / 2 - centralCells && index[a] < n / 2 + centralCells;
      }
      if (inCentral) central += m;
    }
    const auto within = [&](const char* what, double solverValue, double mcValue, double standardError,
                            double discretisation) {
      std::printf("4-D logistic on %d^4 cells, %s: solver %.5f, Monte Carlo %.5f (+- %.5f)\n", n, what, solverValue,
                  mcValue, standardError);
      if (level == 1)
        BOOST_TEST(std::fabs(solverValue - mcValue) <= 4.5 * standardError + discretisation,
                   what << ": " << solverValue << " against " << mcValue);
    };
    for (int a = 0; a < d; ++a) {
      const double m = mean[a] / mass, var = second[a] / mass - m * m;
      within("mean", m, mcMean[a], std::sqrt(mcVariance[a] / N), 0.05 * h * h);
      // The variance's standard error for a near-Gaussian law: var sqrt(2 / N).
      within("variance", var, mcVariance[a], mcVariance[a] * std::sqrt(2.0 / N), 0.25 * h * h);
      const double pr = mcPositive[a];
      within("P(theta_a > 0)", positive[a] / mass, pr, std::sqrt(pr * (1 - pr) / N), 0.05 * h * h);
      varianceGap[static_cast<std::size_t>(level)][static_cast<std::size_t>(a)] = std::fabs(var - mcVariance[a]);
    }
    within("P(central box)", central / mass, mcCentral, std::sqrt(mcCentral * (1 - mcCentral) / N), 0.05 * h * h);
  }
  for (int a = 0; a < d; ++a) {
    const double order = std::log(varianceGap[0][a] / varianceGap[1][a]) / std::log(30.0 / 20.0);
    std::printf("4-D logistic, axis %d: the variance's gap to the Monte Carlo falls at order %.2f\n", a, order);
    BOOST_TEST(order > 1.5);
  }
}
