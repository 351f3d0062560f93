// Gaussian laws of models/Gaussian.hpp: cell averages (diagonal and full covariance, tails), the closed-form Rényi and
// KL divergences of MATH.md §6 against quadrature of their defining integrals (§3), and the Ornstein–Uhlenbeck law
// against RK4 integration of its moment equations (§6) and the continuous-time bound of §5 item 7.
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "models/Gaussian.hpp"
#include "models/GaussianFunctionals.hpp"

using namespace fpdp::models;
using Box = std::array<double, 3>;

namespace {

// ---- Reference quadrature, independent of the library's Newton-built rule: Golub–Welsch (nodes = eigenvalues of
// the Jacobi matrix of the Legendre recurrence, weights = 2 * first eigenvector component squared).
struct Rule {
  std::vector<double> nodes, weights;
};

Rule golubWelsch(int n) {
  Matrix jacobi = Matrix::Zero(n, n);
  for (int k = 1; k < n; ++k) jacobi(k, k - 1) = jacobi(k - 1, k) = k / std::sqrt(4.0 * k * k - 1);
  const Eigen::SelfAdjointEigenSolver<Matrix> eig(jacobi);
  Rule rule;
  for (int i = 0; i < n; ++i) {
    rule.nodes.push_back(eig.eigenvalues()[i]);
    rule.weights.push_back(2 * eig.eigenvectors()(0, i) * eig.eigenvectors()(0, i));
  }
  return rule;
}

// Composite rule on [lo, hi]: `panels` equal panels with a 20-point Gauss rule each.
std::vector<std::pair<double, double>> compositeNodes(double lo, double hi, int panels) {
  static const Rule rule = golubWelsch(20);
  std::vector<std::pair<double, double>> nodes;
  const double width = (hi - lo) / panels;
  for (int p = 0; p < panels; ++p) {
    const double mid = lo + (p + 0.5) * width;
    for (std::size_t q = 0; q < rule.nodes.size(); ++q) {
      nodes.emplace_back(mid + 0.5 * width * rule.nodes[q], 0.5 * width * rule.weights[q]);
    }
  }
  return nodes;
}

// Brute-force probability of a box: tensor composite Gauss quadrature of Gaussian::density.
double bruteForceProbability(const Gaussian& g, const Box& lo, const Box& hi, int panelsPerAxis) {
  const int d = g.dim();
  std::vector<std::vector<std::pair<double, double>>> axes;
  for (int i = 0; i < d; ++i) axes.push_back(compositeNodes(lo[i], hi[i], panelsPerAxis));
  // Up to millions of terms: accumulate in long double so that summation error stays far below the tolerances.
  Vector x(d);
  long double sum = 0;
  if (d == 2) {
    for (const auto& [x0, w0] : axes[0])
      for (const auto& [x1, w1] : axes[1]) {
        x << x0, x1;
        sum += static_cast<long double>(w0 * w1) * g.density(x);
      }
  } else {
    for (const auto& [x0, w0] : axes[0])
      for (const auto& [x1, w1] : axes[1])
        for (const auto& [x2, w2] : axes[2]) {
          x << x0, x1, x2;
          sum += static_cast<long double>(w0 * w1 * w2) * g.density(x);
        }
  }
  return static_cast<double>(sum);
}

// Phi(b) - Phi(a) in long double, from the same double end points the library sees.
long double erfcReference(double lo, double hi, double mean, double sd) {
  const long double a = (static_cast<long double>(lo) - mean) / sd, b = (static_cast<long double>(hi) - mean) / sd;
  const long double r = 1 / std::sqrt(2.0L);
  if (a >= 0) return 0.5L * (std::erfc(a * r) - std::erfc(b * r));
  if (b <= 0) return 0.5L * (std::erfc(-b * r) - std::erfc(-a * r));
  return 0.5L * (std::erf(b * r) - std::erf(a * r));
}

double relative(double approx, double exact) { return std::abs(approx - exact) / std::abs(exact); }

Matrix rotation2(double angle) {
  Matrix r(2, 2);
  r << std::cos(angle), -std::sin(angle), std::sin(angle), std::cos(angle);
  return r;
}

// Correlated 2-D covariance: sd 1 and 0.6, correlation 0.8.
Matrix correlated2() {
  Matrix c(2, 2);
  c << 1.0, 0.48, 0.48, 0.36;
  return c;
}

// Full 3-D covariance R diag(1.4, 0.5, 0.2) R^T with R a product of rotations about three axes.
Matrix correlated3() {
  const Eigen::Matrix3d r = (Eigen::AngleAxisd(0.7, Eigen::Vector3d::UnitZ()) *
                             Eigen::AngleAxisd(-0.4, Eigen::Vector3d::UnitY()) *
                             Eigen::AngleAxisd(1.1, Eigen::Vector3d::UnitX()))
                                .toRotationMatrix();
  return r * Eigen::Vector3d(1.4, 0.5, 0.2).asDiagonal() * r.transpose();
}

// Sum of cellAverage * volume over an n^d grid of the box [lo, hi].
double sumOfCells(const Gaussian& g, const Box& lo, const Box& hi, const std::array<int, 3>& cells) {
  const int d = g.dim();
  std::array<double, 3> h{1, 1, 1};
  for (int i = 0; i < d; ++i) h[i] = (hi[i] - lo[i]) / cells[i];
  const int n2 = d == 3 ? cells[2] : 1;
  double sum = 0;
  for (int i = 0; i < cells[0]; ++i)
    for (int j = 0; j < cells[1]; ++j)
      for (int k = 0; k < n2; ++k) {
        const Box cLo{lo[0] + i * h[0], lo[1] + j * h[1], d == 3 ? lo[2] + k * h[2] : 0.0};
        const Box cHi{i + 1 == cells[0] ? hi[0] : lo[0] + (i + 1) * h[0], j + 1 == cells[1] ? hi[1] : lo[1] + (j + 1) * h[1],
                      d == 3 ? (k + 1 == n2 ? hi[2] : lo[2] + (k + 1) * h[2]) : 0.0};
        double volume = 1;
        for (int a = 0; a < d; ++a) volume *= cHi[a] - cLo[a];
        sum += g.cellAverage(cLo, cHi) * volume;
      }
  return sum;
}

// Box of +-w marginal standard deviations around the mean.
std::pair<Box, Box> marginalBox(const Gaussian& g, double w) {
  Box lo{0, 0, 0}, hi{0, 0, 0};
  for (int i = 0; i < g.dim(); ++i) {
    const double sd = std::sqrt(g.covariance()(i, i));
    lo[i] = g.mean()[i] - w * sd;
    hi[i] = g.mean()[i] + w * sd;
  }
  return {lo, hi};
}

// A cell of widths `width` * marginal sd centred at mean + `distance` * L e (L the Cholesky factor of the
// covariance), i.e. at Mahalanobis distance `distance` from the mean.
std::pair<Box, Box> cellAtMahalanobisDistance(const Gaussian& g, const Vector& direction, double distance, double width) {
  const Matrix chol = g.covariance().llt().matrixL();
  const Vector centre = g.mean() + distance * chol * direction.normalized();
  Box lo{0, 0, 0}, hi{0, 0, 0};
  for (int i = 0; i < g.dim(); ++i) {
    const double halfWidth = 0.5 * width * std::sqrt(g.covariance()(i, i));
    lo[i] = centre[i] - halfWidth;
    hi[i] = centre[i] + halfWidth;
  }
  return {lo, hi};
}

// ---- Ornstein–Uhlenbeck moments by classical RK4 on m' = -A(m - c), C' = -AC - CA^T + 2 Sigma (MATH.md §6).
std::pair<Vector, Matrix> rk4Moments(const Matrix& A, const Vector& c, const Matrix& Sigma, Vector m, Matrix C,
                                     double t, int steps) {
  const double h = t / steps;
  const auto meanRate = [&](const Vector& x) -> Vector { return -A * (x - c); };
  const auto covRate = [&](const Matrix& X) -> Matrix { return -A * X - X * A.transpose() + 2 * Sigma; };
  for (int s = 0; s < steps; ++s) {
    const Vector k1 = meanRate(m), k2 = meanRate(m + 0.5 * h * k1), k3 = meanRate(m + 0.5 * h * k2),
                 k4 = meanRate(m + h * k3);
    m += h / 6 * (k1 + 2 * k2 + 2 * k3 + k4);
    const Matrix K1 = covRate(C), K2 = covRate(C + 0.5 * h * K1), K3 = covRate(C + 0.5 * h * K2),
                 K4 = covRate(C + h * K3);
    C += h / 6 * (K1 + 2 * K2 + 2 * K3 + K4);
  }
  return {m, C};
}

Matrix spd(const Matrix& m) { return m * m.transpose() + 0.3 * Matrix::Identity(m.rows(), m.cols()); }

}  // namespace

BOOST_AUTO_TEST_SUITE(gaussian)

BOOST_AUTO_TEST_CASE(constructor_rejects_invalid_covariances) {
  const Vector mean = Vector::Zero(2);
  Matrix nonSymmetric(2, 2);
  nonSymmetric << 1, 0.2, 0.1, 1;
  Matrix indefinite(2, 2);
  indefinite << 1, 2, 2, 1;
  BOOST_CHECK_THROW(Gaussian(mean, nonSymmetric), std::invalid_argument);
  BOOST_CHECK_THROW(Gaussian(mean, indefinite), std::invalid_argument);
  BOOST_CHECK_THROW(Gaussian(mean, Matrix::Zero(2, 2)), std::invalid_argument);
  BOOST_CHECK_THROW(Gaussian(mean, Matrix::Identity(3, 3)), std::invalid_argument);
  Matrix withNan = Matrix::Identity(2, 2);
  withNan(1, 1) = std::numeric_limits<double>::quiet_NaN();
  BOOST_CHECK_THROW(Gaussian(mean, withNan), std::invalid_argument);
  const Gaussian g(mean, Matrix::Identity(2, 2));
  BOOST_CHECK_THROW(g.cellAverage({0, 0, 0}, {1, 1, 0}, 0), std::invalid_argument);
  BOOST_CHECK_THROW(g.cellAverage({0, 0, 0}, {1, 1, 0}, 17), std::invalid_argument);
  BOOST_CHECK_THROW(g.cellAverage({0, 1, 0}, {1, 1, 0}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(density_matches_the_bivariate_formula) {
  const double s1 = 1.0, s2 = 0.6, rho = 0.8;
  const Vector mean = (Vector(2) << 0.3, -0.2).finished();
  const Gaussian g(mean, correlated2());
  for (const auto& [x, y] : std::vector<std::pair<double, double>>{{0.3, -0.2}, {1.0, 0.5}, {-2.0, 1.5}, {4.0, -3.0}}) {
    const double z1 = (x - mean[0]) / s1, z2 = (y - mean[1]) / s2;
    const double expected = std::exp(-(z1 * z1 - 2 * rho * z1 * z2 + z2 * z2) / (2 * (1 - rho * rho))) /
                            (2 * std::numbers::pi * s1 * s2 * std::sqrt(1 - rho * rho));
    BOOST_TEST(relative(g.density((Vector(2) << x, y).finished()), expected) < 1e-13);
  }
}

BOOST_AUTO_TEST_CASE(diagonal_cells_sum_to_the_box_probability_2d) {
  const Matrix cov = Eigen::Vector2d(0.25, 1.69).asDiagonal();  // sd 0.5 and 1.3
  const Gaussian g((Vector(2) << 0.2, -0.4).finished(), cov);
  const auto [lo, hi] = marginalBox(g, 8);
  const double box = g.boxProbability(lo, hi);
  const long double oneAxis = std::erf(8 / std::sqrt(2.0L));
  BOOST_TEST(std::abs(box - static_cast<double>(oneAxis * oneAxis)) < 1e-15);
  BOOST_TEST(std::abs(sumOfCells(g, lo, hi, {40, 48, 1}) - box) < 1e-13);
  BOOST_TEST(std::abs(sumOfCells(g, lo, hi, {7, 300, 1}) - box) < 1e-13);
}

BOOST_AUTO_TEST_CASE(full_covariance_cells_sum_to_the_box_probability_2d) {
  const Gaussian g((Vector(2) << 0.3, -0.2).finished(), correlated2());
  const auto [lo, hi] = marginalBox(g, 8);
  const double box = g.boxProbability(lo, hi);
  BOOST_TEST(relative(box, bruteForceProbability(g, lo, hi, 64)) < 1e-13);
  BOOST_TEST(std::abs(sumOfCells(g, lo, hi, {40, 40, 1}) - box) < 1e-13);
  BOOST_TEST(std::abs(sumOfCells(g, lo, hi, {13, 90, 1}) - box) < 1e-13);
}

BOOST_AUTO_TEST_CASE(full_covariance_cells_match_brute_force_quadrature_2d) {
  // A rotated covariance takes the conditional route; the reference integrates density() directly.
  const Matrix cov = rotation2(0.6) * Eigen::Vector2d(2.0, 0.15).asDiagonal() * rotation2(0.6).transpose();
  const Gaussian g((Vector(2) << -0.5, 1.0).finished(), cov);
  const std::vector<Vector> directions{(Vector(2) << 1, 0).finished(), (Vector(2) << 0, 1).finished(),
                                       (Vector(2) << 1, 1).finished(), (Vector(2) << -1, 2).finished()};
  for (const Vector& direction : directions) {
    for (const double distance : {0.0, 0.7, 2.5, 5.0, 10.0}) {
      for (const double width : {0.05, 0.3, 1.0}) {
        const auto [lo, hi] = cellAtMahalanobisDistance(g, direction, distance, width);
        const double volume = (hi[0] - lo[0]) * (hi[1] - lo[1]);
        const double reference = bruteForceProbability(g, lo, hi, 16) / volume;
        BOOST_TEST_CONTEXT("distance " << distance << " width " << width << " direction " << direction.transpose()) {
          BOOST_TEST(relative(g.cellAverage(lo, hi), reference) < 1e-10);
          BOOST_TEST(relative(g.cellAverage(lo, hi, 16), reference) < 1e-10);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(full_covariance_3d_cells_sum_to_the_box_probability) {
  const Gaussian g((Vector(3) << 0.1, -0.3, 0.5).finished(), correlated3());
  const auto [lo, hi] = marginalBox(g, 7);
  const double box = g.boxProbability(lo, hi);
  BOOST_TEST(box < 1.0);
  BOOST_TEST(box > 1.0 - 1e-10);  // +-7 marginal sd: each axis misses 2.6e-12
  BOOST_TEST(std::abs(sumOfCells(g, lo, hi, {14, 14, 14}) - box) < 1e-10);
  BOOST_TEST(std::abs(sumOfCells(g, lo, hi, {9, 20, 11}) - box) < 1e-10);
}

// A box reaching thousands of standard deviations out (the whole mesh from -5000 in truncatedInitialMass, as a
// case file may ask): the same probability as the box cut at 40 standard deviations, where the tails underflow.
// The outer panels resolved the integrand's slope out to the far end: 10^7 panels, 3.4 GB and minutes in 2-D (ctest's
// timeout ends that).
BOOST_AUTO_TEST_CASE(full_covariance_boxes_far_beyond_the_tails_take_no_panels_there) {
  const Gaussian g2((Vector(2) << 0.0, 0.0).finished(), (Matrix(2, 2) << 1.0, 0.2, 0.2, 0.8).finished());
  const double whole2 = g2.boxProbability({-5000, -5000, 0}, {5, 5, 0});
  BOOST_TEST(relative(whole2, g2.boxProbability({-40, -5000, 0}, {5, 5, 0})) < 1e-15);
  BOOST_TEST(relative(whole2, bruteForceProbability(g2, {-12, -12, 0}, {5, 5, 0}, 64)) < 1e-12);
  BOOST_TEST(g2.boxProbability({-5000, -5000, 0}, {-4000, 5, 0}) == 0.0);
  // A line of cells 52 wide along axis 1, in the row from -5000 on axis 0 (the initial state of such a mesh): zeros
  // far out, and the cell around the mean as boxProbability gives it.
  std::vector<double> faces{-5000, -4948, -52, 0, 52}, out(4);
  g2.lineBoxProbabilities(1, faces, {-5000, 0, 0}, {-4948, 0, 0}, out);
  for (const double v : out) BOOST_TEST(v == 0.0);
  g2.lineBoxProbabilities(1, faces, {-52, 0, 0}, {0, 0, 0}, out);
  BOOST_TEST(relative(out[2], g2.boxProbability({-52, -52, 0}, {0, 0, 0})) < 1e-13);
  BOOST_TEST(out[0] == 0.0);
}

BOOST_AUTO_TEST_CASE(full_covariance_3d_cells_match_brute_force_quadrature) {
  const Gaussian g((Vector(3) << 0.1, -0.3, 0.5).finished(), correlated3());
  const std::vector<Vector> directions{(Vector(3) << 1, 0, 0).finished(), (Vector(3) << 0.3, -1, 0.5).finished(),
                                       (Vector(3) << -0.2, 0.4, 1).finished()};
  for (const Vector& direction : directions) {
    for (const double distance : {0.0, 2.0, 10.0}) {
      const auto [lo, hi] = cellAtMahalanobisDistance(g, direction, distance, 0.2);
      const double reference = bruteForceProbability(g, lo, hi, 3);
      BOOST_TEST_CONTEXT("distance " << distance << " direction " << direction.transpose()) {
        BOOST_TEST(relative(g.boxProbability(lo, hi), reference) < 1e-10);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(tail_cells_match_the_erfc_reference) {
  const double mean = 0.3, sd = 0.7;
  const Gaussian g1((Vector(1) << mean).finished(), (Matrix(1, 1) << sd * sd).finished());
  // Cell ends in units of sd from the mean: far tails on both sides, narrow cells where erfc differences cancel,
  // and cells straddling the mean.
  const std::vector<std::pair<double, double>> cells{{10, 10.1},   {10, 10.5},      {-10.3, -10},    {9.99, 10.01},
                                                     {10, 10 + 1e-6}, {20, 21},    {-30, -29.5},    {3, 30},
                                                     {0.5, 0.5 + 1e-6}, {-1e-7, 1e-7}, {-0.2, 0.9}, {-37, -36.9}};
  for (const auto& [a, b] : cells) {
    const Box lo{mean + a * sd, 0, 0}, hi{mean + b * sd, 0, 0};
    const double reference = static_cast<double>(erfcReference(lo[0], hi[0], mean, sd));
    BOOST_TEST_CONTEXT("cell [" << a << ", " << b << "] sd") {
      BOOST_TEST(reference > 0);
      BOOST_TEST(relative(g1.boxProbability(lo, hi), reference) < 1e-10);
      BOOST_TEST(relative(g1.cellAverage(lo, hi), reference / (hi[0] - lo[0])) < 1e-10);
    }
  }
  // 2-D diagonal: the product of the two axes.
  const Gaussian g2((Vector(2) << mean, -1.0).finished(), Eigen::Vector2d(sd * sd, 4.0).asDiagonal().toDenseMatrix());
  const Box lo{mean + 10 * sd, -1.0 - 2 * 12, 0}, hi{mean + 10.2 * sd, -1.0 - 2 * 11.9, 0};
  const double reference =
      static_cast<double>(erfcReference(lo[0], hi[0], mean, sd) * erfcReference(lo[1], hi[1], -1.0, 2.0));
  BOOST_TEST(relative(g2.boxProbability(lo, hi), reference) < 1e-10);
}

BOOST_AUTO_TEST_CASE(renyi_and_kl_match_quadrature_1d) {
  // E_alpha = int p^alpha q^(1-alpha), R_alpha = log(E_alpha)/(alpha - 1), KL = int p log(p/q) (MATH.md §3), by the
  // trapezoid rule on +-40 sd (spectrally accurate for these rapidly decaying smooth integrands).
  struct Case {
    double m1, v1, m2, v2, alpha;
  };
  for (const Case& c : {Case{0.3, 1.44, -0.1, 1.0, 1.5}, Case{0.3, 1.44, -0.1, 1.0, 2.0}, Case{0.3, 1.44, -0.1, 1.0, 3.0},
                        Case{-1.0, 0.5, 0.4, 2.0, 5.0}, Case{0.0, 1.0, 0.25, 1.0, 20.0}}) {
    const auto logDensity = [](double x, double m, double v) {
      return -0.5 * (x - m) * (x - m) / v - 0.5 * std::log(2 * std::numbers::pi * v);
    };
    const double sdMax = std::sqrt(std::max(c.v1, c.v2));
    const double lo = std::min(c.m1, c.m2) - 40 * sdMax, hi = std::max(c.m1, c.m2) + 40 * sdMax;
    const int n = 40000;
    const double h = (hi - lo) / n;
    double e = 0, kl = 0;
    for (int i = 0; i <= n; ++i) {
      const double x = lo + i * h, w = (i == 0 || i == n) ? 0.5 * h : h;
      const double lp = logDensity(x, c.m1, c.v1), lq = logDensity(x, c.m2, c.v2);
      e += w * std::exp(c.alpha * lp + (1 - c.alpha) * lq);
      kl += w * std::exp(lp) * (lp - lq);
    }
    const Vector m1 = (Vector(1) << c.m1).finished(), m2 = (Vector(1) << c.m2).finished();
    const Matrix S1 = (Matrix(1, 1) << c.v1).finished(), S2 = (Matrix(1, 1) << c.v2).finished();
    BOOST_TEST_CONTEXT("alpha " << c.alpha << " v1 " << c.v1 << " v2 " << c.v2) {
      BOOST_TEST(relative(gaussianRenyi(m1, S1, m2, S2, c.alpha), std::log(e) / (c.alpha - 1)) < 1e-9);
      BOOST_TEST(relative(gaussianKL(m1, S1, m2, S2), kl) < 1e-9);
    }
  }
}

BOOST_AUTO_TEST_CASE(equal_covariances_give_the_mahalanobis_form) {
  Matrix S(2, 2);
  S << 1.5, 0.4, 0.4, 0.8;
  const Vector m2 = (Vector(2) << 0.7, -1.1).finished();
  for (const Vector& dm : {Vector((Vector(2) << 0.3, -0.2).finished()), Vector((Vector(2) << 1e-9, 2e-9).finished()),
                           Vector((Vector(2) << -4.0, 3.0).finished())}) {
    const Vector m1 = m2 + dm;
    const Vector representedDm = m1 - m2;  // dm as the doubles m1, m2 carry it (1e-9 keeps only ~7 digits)
    const double mahalanobis = representedDm.dot(S.llt().solve(representedDm));
    for (const double alpha : {1.5, 2.0, 10.0, 100.0}) {
      BOOST_TEST(relative(gaussianRenyi(m1, S, m2, S, alpha), alpha * mahalanobis / 2) < 1e-12);
    }
    BOOST_TEST(relative(gaussianKL(m1, S, m2, S), mahalanobis / 2) < 1e-12);
  }
  // Identical laws: 0 up to the O(eps^2) log-determinant term of the round-off in S2^{-1/2} S1 S2^{-1/2} = I.
  BOOST_TEST(gaussianRenyi(m2, S, m2, S, 2.0) >= 0.0);
  BOOST_TEST(gaussianRenyi(m2, S, m2, S, 2.0) < 1e-30);
  BOOST_TEST(gaussianKL(m2, S, m2, S) < 1e-30);
  BOOST_CHECK_THROW(gaussianRenyi(m2, S, m2, S, 1.0), std::invalid_argument);
  BOOST_CHECK_THROW(gaussianRenyi(m2, S, m2, S, 0.5), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(renyi_is_infinite_beyond_the_positive_definite_boundary) {
  // S_alpha = alpha S2 + (1 - alpha) S1 with S2^{-1} S1 having eigenvalues 2 and 0.5: singular at alpha = 2.
  const Vector m1 = (Vector(2) << 0.2, 0.1).finished(), m2 = Vector::Zero(2);
  const Matrix S2 = (Matrix(2, 2) << 1.0, 0.3, 0.3, 0.5).finished();
  const Matrix chol = S2.llt().matrixL();
  const Matrix S1 = chol * rotation2(0.4) * Eigen::Vector2d(2.0, 0.5).asDiagonal() * rotation2(0.4).transpose() *
                    chol.transpose();
  const double inf = std::numeric_limits<double>::infinity();
  BOOST_TEST(gaussianRenyi(m1, S1, m2, S2, 2 + 1e-9) == inf);
  BOOST_TEST(gaussianRenyi(m1, S1, m2, S2, 3.0) == inf);
  const double inside = gaussianRenyi(m1, S1, m2, S2, 2 - 1e-9);
  BOOST_TEST(std::isfinite(inside));
  // Near the boundary the log-determinant term -log(e)/(2(alpha-1)) with e ~ 1e-9 dominates: about 10.
  BOOST_TEST(inside > 10.0);
  // In 1-D with S1 = 2, S2 = 1 the boundary alpha = 2 is hit exactly: S_alpha = 0 is not positive definite.
  const Matrix one = Matrix::Identity(1, 1), two = 2 * Matrix::Identity(1, 1);
  BOOST_TEST(gaussianRenyi(Vector::Zero(1), two, Vector::Zero(1), one, 2.0) == inf);
  BOOST_TEST(std::isfinite(gaussianRenyi(Vector::Zero(1), two, Vector::Zero(1), one, 1.999)));
}

BOOST_AUTO_TEST_CASE(kl_is_the_limit_of_renyi) {
  const Vector m1 = (Vector(2) << 0.5, -0.3).finished(), m2 = (Vector(2) << -0.2, 0.1).finished();
  const Matrix S1 = (Matrix(2, 2) << 1.2, 0.3, 0.3, 0.7).finished();
  const Matrix S2 = (Matrix(2, 2) << 0.9, -0.2, -0.2, 1.1).finished();
  const double kl = gaussianKL(m1, S1, m2, S2);
  BOOST_TEST(relative(gaussianRenyi(m1, S1, m2, S2, 1 + 1e-6), kl) < 1e-5);
  // Closed form of MATH.md §6 written with inverse and determinants, as a cross-check of the eigenvalue route.
  const Matrix S2inv = S2.inverse();
  const Vector dm = m1 - m2;
  const double direct =
      0.5 * ((S2inv * S1).trace() + dm.dot(S2inv * dm) - 2 + std::log(S2.determinant() / S1.determinant()));
  BOOST_TEST(relative(kl, direct) < 1e-13);
  const double alpha = 1.7;
  const Matrix Sa = alpha * S2 + (1 - alpha) * S1;
  const double renyiDirect = 0.5 * alpha * dm.dot(Sa.inverse() * dm) -
                             std::log(Sa.determinant() / (std::pow(S1.determinant(), 1 - alpha) *
                                                          std::pow(S2.determinant(), alpha))) /
                                 (2 * (alpha - 1));
  BOOST_TEST(relative(gaussianRenyi(m1, S1, m2, S2, alpha), renyiDirect) < 1e-13);
}

BOOST_AUTO_TEST_CASE(renyi_is_nondecreasing_in_alpha) {
  const Vector m1 = (Vector(2) << 0.5, -0.3).finished(), m2 = (Vector(2) << -0.2, 0.1).finished();
  const Matrix S1 = (Matrix(2, 2) << 1.2, 0.3, 0.3, 0.7).finished();
  const Matrix S2 = (Matrix(2, 2) << 0.9, -0.2, -0.2, 1.1).finished();
  const double kl = gaussianKL(m1, S1, m2, S2);
  double previous = kl;
  int finiteCount = 0;
  for (double alpha = 1.05; alpha < 40; alpha += 0.05) {
    const double r = gaussianRenyi(m1, S1, m2, S2, alpha);
    BOOST_TEST_CONTEXT("alpha " << alpha) { BOOST_TEST(r >= previous); }
    if (std::isfinite(r)) ++finiteCount;
    previous = r;
  }
  BOOST_TEST(finiteCount > 10);  // the sweep crosses from finite values to +inf
  BOOST_TEST(!std::isfinite(previous));
}

BOOST_AUTO_TEST_CASE(ou_law_matches_rk4_moments) {
  for (const int d : {2, 3}) {
    Matrix a(d, d), s(d, d), c0(d, d);
    if (d == 2) {
      a << 1.0, 0.4, -0.3, 0.8;
      s << 0.5, 0.2, 0.1, 0.3;
      c0 << 0.2, -0.1, 0.3, 0.4;
    } else {
      a << 1.0, 0.4, -0.3, 0.1, 0.8, 0.2, 0.5, -0.2, 0.9;
      s << 0.5, 0.2, 0.1, -0.1, 0.3, 0.2, 0.0, 0.1, 0.4;
      c0 << 0.2, -0.1, 0.3, 0.1, 0.4, 0.0, -0.2, 0.1, 0.3;
    }
    const Matrix A = spd(a), Sigma = spd(s), C0 = spd(c0);
    const Vector c = Vector::LinSpaced(d, -1.0, 2.0), m0 = Vector::LinSpaced(d, 0.5, -0.7);
    for (const double t : {0.05, 0.8, 3.0}) {
      const Gaussian law = ornsteinUhlenbeckLaw(A, c, Sigma, m0, C0, t);
      const auto [m, C] = rk4Moments(A, c, Sigma, m0, C0, t, 4000);
      BOOST_TEST_CONTEXT("d " << d << " t " << t) {
        BOOST_TEST((law.mean() - m).norm() < 1e-10);
        BOOST_TEST((law.covariance() - C).norm() < 1e-10 * C.norm());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(ou_law_keeps_relative_accuracy_at_small_times) {
  // Taylor expansion at t -> 0 from a point m0 (C0 = 0): with the moment equations of MATH.md §6,
  //   m(t) - m0 = A(c - m0) t - A^2 (c - m0) t^2/2 + O(t^3),   C(t) = 2 Sigma t - (A Sigma + Sigma A) t^2 + O(t^3).
  // At t = 1e-7 the neglected terms are 1e-14 relative; computing 1 - e^{-x} without expm1 would err by ~1e-9.
  // m0 = 0 so that the displacement is not hidden by the round-off of storing m0 + displacement.
  const Matrix A = spd((Matrix(2, 2) << 1.0, 0.4, -0.3, 0.8).finished());
  const Matrix Sigma = spd((Matrix(2, 2) << 0.5, 0.2, 0.1, 0.3).finished());
  const Vector c = (Vector(2) << 1.0, -2.0).finished(), m0 = Vector::Zero(2);
  const double t = 1e-7;
  const Gaussian law = ornsteinUhlenbeckLaw(A, c, Sigma, m0, Matrix::Zero(2, 2), t);
  const Vector expectedDisplacement = A * (c - m0) * t - A * A * (c - m0) * (t * t / 2);
  BOOST_TEST((law.mean() - m0 - expectedDisplacement).norm() < 1e-12 * expectedDisplacement.norm());
  const Matrix expectedCovariance = 2 * Sigma * t - (A * Sigma + Sigma * A) * (t * t);
  BOOST_TEST((law.covariance() - expectedCovariance).norm() < 1e-12 * expectedCovariance.norm());
}

BOOST_AUTO_TEST_CASE(ou_stationary_covariance_solves_the_lyapunov_equation) {
  const Matrix A = spd((Matrix(3, 3) << 1.0, 0.4, -0.3, 0.1, 0.8, 0.2, 0.5, -0.2, 0.9).finished());
  const Matrix Sigma = spd((Matrix(3, 3) << 0.5, 0.2, 0.1, -0.1, 0.3, 0.2, 0.0, 0.1, 0.4).finished());
  const Vector c = (Vector(3) << 1.0, -2.0, 0.5).finished();
  const double slowest = Eigen::SelfAdjointEigenSolver<Matrix>(A).eigenvalues().minCoeff();
  const double t = 50 / slowest;  // e^{-2 a_min t} = e^{-100}: the initial law is forgotten to round-off
  const Gaussian law = ornsteinUhlenbeckLaw(A, c, Sigma, Vector::Zero(3), Matrix::Identity(3, 3), t);
  const Matrix& C = law.covariance();
  BOOST_TEST((A * C + C * A.transpose() - 2 * Sigma).norm() < 1e-13 * Sigma.norm());
  BOOST_TEST((law.mean() - c).norm() < 1e-14 * c.norm());
}

BOOST_AUTO_TEST_CASE(ou_point_start_renyi_matches_the_tanh_formula) {
  // MATH.md §5 item 7: theta_0 a point, A = lambda I, Sigma = sigma^2 I, centres c and c':
  // R_alpha(t) = alpha lambda |c - c'|^2 / (2 sigma^2) * tanh(lambda t / 2).
  const double lambda = 1.3, sigma = 0.7;
  const Matrix A = lambda * Matrix::Identity(2, 2), Sigma = sigma * sigma * Matrix::Identity(2, 2);
  const Matrix pointStart = Matrix::Zero(2, 2);
  const Vector m0 = Vector::Zero(2);
  const Vector c = (Vector(2) << 0.4, -0.1).finished(), cPrime = (Vector(2) << 0.1, 0.3).finished();
  for (const double t : {1e-6, 1e-3, 0.3, 2.0, 10.0}) {
    const Gaussian p = ornsteinUhlenbeckLaw(A, c, Sigma, m0, pointStart, t);
    const Gaussian q = ornsteinUhlenbeckLaw(A, cPrime, Sigma, m0, pointStart, t);
    for (const double alpha : {1.5, 4.0}) {
      const double expected = alpha * lambda * (c - cPrime).squaredNorm() / (2 * sigma * sigma) * std::tanh(lambda * t / 2);
      BOOST_TEST_CONTEXT("t " << t << " alpha " << alpha) {
        BOOST_TEST(relative(gaussianRenyi(p.mean(), p.covariance(), q.mean(), q.covariance(), alpha), expected) < 1e-10);
      }
    }
  }
  // At t = 0 a point start has no density.
  BOOST_CHECK_THROW(ornsteinUhlenbeckLaw(A, c, Sigma, m0, pointStart, 0.0), std::invalid_argument);
  BOOST_CHECK_THROW(ornsteinUhlenbeckLaw(-A, c, Sigma, m0, pointStart, 1.0), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

// TensorCellAverages gives cellAverage's values: bit for bit with per-axis factors for a diagonal covariance (the same
// products in the same order), within 1e-13 relative with a full one (lines along axis 0, integrated exactly along
// that axis instead of the last); on a graded, offset block of cells.
BOOST_AUTO_TEST_CASE(tensor_cell_averages_equal_cell_average) {
  std::array<std::vector<double>, 3> faces;
  for (int a = 0; a < 3; ++a)
    for (int i = 0; i <= 9; ++i) faces[static_cast<std::size_t>(a)].push_back(-3.0 + 0.07 * i * i + 0.1 * a);
  fpdp::models::Matrix diag = fpdp::models::Matrix::Zero(3, 3);
  diag.diagonal() << 0.5, 1.2, 0.8;
  fpdp::models::Matrix full = diag;
  full(0, 1) = full(1, 0) = 0.2;
  for (const auto& cov : {diag, full}) {
    const fpdp::models::Gaussian g(fpdp::models::Vector::Constant(3, 0.3), cov);
    const fpdp::models::TensorCellAverages averages(g, faces, {2, 1, 3}, {5, 7, 4});
    for (int k = 3; k < 7; ++k)
      for (int j = 1; j < 8; ++j)
        for (int i = 2; i < 7; ++i) {
          const std::array<double, 3> lo{faces[0][i], faces[1][j], faces[2][k]};
          const std::array<double, 3> hi{faces[0][i + 1], faces[1][j + 1], faces[2][k + 1]};
          if (g.isDiagonal()) BOOST_TEST(averages(i, j, k) == g.cellAverage(lo, hi));
          else BOOST_TEST(relative(averages(i, j, k), g.cellAverage(lo, hi)) < 1e-13);
        }
  }
}

// Lines of cells along each axis, through the centre and far into the tails (where the cells need several panels
// and the face tail probabilities are tiny), against boxProbability cell by cell (which integrates the last axis
// exactly, a different factorisation), in 2-D and 3-D.
BOOST_AUTO_TEST_CASE(line_box_probabilities_match_box_probability) {
  Matrix cov2(2, 2);
  cov2 << 0.5, 0.3, 0.3, 0.4;
  const std::vector<Gaussian> laws{Gaussian((Vector(3) << 0.1, -0.3, 0.5).finished(), correlated3()),
                                   Gaussian((Vector(2) << 0.2, -0.1).finished(), cov2)};
  for (const Gaussian& g : laws) {
    const int d = g.dim();
    for (int axis = 0; axis < d; ++axis) {
      std::vector<double> faces;
      for (int m = 0; m <= 40; ++m) faces.push_back(-6.0 + 0.3 * m + 0.002 * m * m);  // graded, past 6 sd
      for (const double offset : {0.0, 1.3, -4.7}) {
        Box lo{0, 0, 0}, hi{0, 0, 0};
        for (int a = 0; a < d; ++a) {
          lo[a] = offset + 0.1 * a;
          hi[a] = lo[a] + 0.17;
        }
        std::vector<double> line(faces.size() - 1);
        g.lineBoxProbabilities(axis, faces, lo, hi, line);
        for (std::size_t m = 0; m < line.size(); ++m) {
          Box cellLo = lo, cellHi = hi;
          cellLo[axis] = faces[m];
          cellHi[axis] = faces[m + 1];
          // Far out the density itself, exp(-Q/2) with Q the squared Mahalanobis distance, is only known to
          // relative ~eps Q/2 (the round-off of Q); the tolerance grows accordingly.
          Vector centre(d);
          for (int a = 0; a < d; ++a) centre[a] = 0.5 * (cellLo[a] + cellHi[a]) - g.mean()[a];
          const double q = centre.dot(g.covariance().ldlt().solve(centre));
          BOOST_TEST_CONTEXT("d " << d << " axis " << axis << " offset " << offset << " cell " << m << " Q " << q) {
            BOOST_TEST(line[m] > 0);
            BOOST_TEST(relative(line[m], g.boxProbability(cellLo, cellHi)) < 1e-13 * (1 + q / 200));
          }
        }
      }
    }
  }
  // Narrow cells (width below 0.05 conditional sd) take the interval probability of the one-cell path.
  const Gaussian& g = laws[0];
  const std::vector<double> faces{0.0, 1e-3, 2e-3, 0.5, 0.5 + 1e-7};
  const Box lo{-0.2, 0.1, 0.4}, hi{-0.1, 0.3, 0.6};
  std::vector<double> line(faces.size() - 1);
  g.lineBoxProbabilities(1, faces, lo, hi, line);
  for (std::size_t m = 0; m < line.size(); ++m) {
    Box cellLo = lo, cellHi = hi;
    cellLo[1] = faces[m];
    cellHi[1] = faces[m + 1];
    BOOST_TEST(relative(line[m], g.boxProbability(cellLo, cellHi)) < 1e-13);
  }
}

BOOST_AUTO_TEST_CASE(line_box_probabilities_below_a_floor_are_bounded_not_integrated) {
  // A narrow correlated 3-D law on cells several times its spread (the slow case: far cells need thousands of
  // panels for a relatively accurate e^-300). With a floor, a cell whose probability is bounded by it gets half the
  // bound, within floor/2 of the truth; every other cell the same bits as without the floor.
  Matrix cov(3, 3);
  cov << 0.036, -0.002, 0.008, -0.002, 0.041, 0.010, 0.008, 0.010, 0.036;
  const Gaussian g((Vector(3) << 0.5, 0.14, -0.02).finished(), cov);
  std::vector<double> faces;
  for (int m = 0; m <= 12; ++m) faces.push_back(-7.0 + 14.0 * m / 12);
  const double floor = 1e-20;
  long bounded = 0;
  for (int j : {5, 6, 7})  // the lines through the law's cells (the far lines' exact path takes seconds each)
    for (int k : {5, 6, 7}) {
      const Box lo{0, faces[j], faces[k]}, hi{0, faces[j + 1], faces[k + 1]};
      std::vector<double> exact(12), floored(12);
      g.lineBoxProbabilities(0, faces, lo, hi, exact);
      g.lineBoxProbabilities(0, faces, lo, hi, floored, 8, floor);
      for (std::size_t m = 0; m < 12; ++m) {
        BOOST_TEST_CONTEXT("cell " << m << ", " << j << ", " << k) {
          if (floored[m] != exact[m]) {
            ++bounded;
            BOOST_TEST(std::fabs(floored[m] - exact[m]) <= 0.5 * floor);
            BOOST_TEST(exact[m] <= floor);
          }
        }
      }
    }
  BOOST_TEST_MESSAGE(bounded << " of 108 cells bounded, not integrated");
  BOOST_TEST(bounded >= 50);  // the floor acts: most of each line is far tail
}

BOOST_AUTO_TEST_CASE(line_box_probabilities_reject_bad_arguments) {
  const Gaussian g((Vector(3) << 0.1, -0.3, 0.5).finished(), correlated3());
  const Box lo{-0.2, 0.1, 0.4}, hi{-0.1, 0.3, 0.6};
  std::vector<double> out(2);
  const std::vector<double> good{0.0, 0.1, 0.2}, decreasing{0.0, 0.2, 0.1};
  BOOST_CHECK_THROW(g.lineBoxProbabilities(3, good, lo, hi, out), std::invalid_argument);
  BOOST_CHECK_THROW(g.lineBoxProbabilities(0, decreasing, lo, hi, out), std::invalid_argument);
  BOOST_CHECK_THROW(g.lineBoxProbabilities(0, good, lo, hi, std::span<double>(out.data(), 1)), std::invalid_argument);
  BOOST_CHECK_THROW(g.lineBoxProbabilities(0, good, hi, lo, out), std::invalid_argument);
  BOOST_CHECK_THROW(g.lineBoxProbabilities(0, good, lo, hi, out, 17), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(hockey_stick_by_lines_2d_matches_the_closed_forms) {
  // The 2-D path for unequal covariances (conditional laws along lines, tanh-sinh across them) against the closed form
  // of equal covariances, approached by covariances that differ by 1e-9 (the path is taken, the value moves by about
  // 1e-9), and against the 1-D unequal-variance form for a product law whose second axis is shared.
  Vector m1(2), m2(2);
  m1 << 0.5, -0.3;
  m2 << 0.0, 0.2;
  Matrix S(2, 2);
  S << 1.0, 0.3, 0.3, 0.8;
  for (double eps : {0.0, 0.3, 1.0}) {
    const double closed = gaussianHockeyStick(m1, S, m2, S, eps);
    const double lines = gaussianHockeyStick(m1, S, m2, (1.0 + 1e-9) * S, eps);
    BOOST_TEST(std::fabs(lines - closed) <= 1e-8 * closed, "eps " << eps << ": " << lines << " vs " << closed);
  }
  // p = N(0.3, 0.7) x N(0, 1), q = N(0, 1) x N(0, 1): the second axis integrates out.
  Vector a(2), b(2), a1(1), b1(1);
  a << 0.3, 0.0;
  b << 0.0, 0.0;
  a1 << 0.3;
  b1 << 0.0;
  Matrix Sa = Matrix::Identity(2, 2), Sb = Matrix::Identity(2, 2);
  Sa(0, 0) = 0.7;
  for (double eps : {0.0, 0.1, 0.5}) {
    const double lines = gaussianHockeyStick(a, Sa, b, Sb, eps);
    const double one = gaussianHockeyStick(a1, Sa.topLeftCorner(1, 1), b1, Sb.topLeftCorner(1, 1), eps);
    BOOST_TEST(std::fabs(lines - one) <= 1e-12 * one, "eps " << eps << ": " << lines << " vs " << one);
  }
}
