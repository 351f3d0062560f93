// Cell averages of Gaussians on grids of any dimension (models/GaussianGridAverages.hpp) and the coordinates that make
// a full noise covariance diagonal (models/DecorrelatedCoordinates.hpp): against the products of one-axis
// probabilities, against Gaussian::cellAverage's adaptive rule on three axes, and against block-diagonal laws in five.
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/DecorrelatedCoordinates.hpp"
#include "models/Gaussian.hpp"
#include "models/GaussianFunctionals.hpp"
#include "models/GaussianGridAverages.hpp"

using namespace fpdp::models;

namespace {

std::vector<double> uniformFaces(double lo, double hi, int n) {
  std::vector<double> f;
  for (int i = 0; i <= n; ++i) f.push_back(lo + (hi - lo) * i / n);
  return f;
}

Matrix spd(int d, unsigned seed) {
  // A fixed, well-conditioned covariance with every correlation non-zero.
  Matrix A(d, d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) A(i, j) = std::sin(1.0 + seed + 3.7 * i + 1.3 * j * j) * 0.35;
  return A * A.transpose() + 0.6 * Matrix::Identity(d, d);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gaussian_grid_averages)

BOOST_AUTO_TEST_CASE(diagonal_covariance_is_the_product_of_axis_probabilities) {
  Vector m(4);
  m << 0.2, -0.1, 0.4, 0.0;
  Matrix C = Matrix::Zero(4, 4);
  C.diagonal() << 0.5, 1.2, 0.8, 2.0;
  std::vector<std::vector<double>> faces{uniformFaces(-3, 3, 5), uniformFaces(-4, 4, 6), uniformFaces(-3, 3, 4),
                                         uniformFaces(-5, 5, 7)};
  const auto u = gaussianGridAverages(m, C, faces, 4);
  BOOST_REQUIRE_EQUAL(u.size(), 5u * 6u * 4u * 7u);
  for (std::size_t k = 0; k < u.size(); k += 11) {
    std::size_t rest = k;
    double expected = 1.0;
    for (int a = 0; a < 4; ++a) {
      const auto& f = faces[static_cast<std::size_t>(a)];
      const std::size_t n = f.size() - 1, i = rest % n;
      rest /= n;
      const double s = std::sqrt(C(a, a));
      expected *= normalIntervalProbability((f[i] - m[a]) / s, (f[i + 1] - m[a]) / s) / (f[i + 1] - f[i]);
    }
    BOOST_TEST(u[k] == expected, boost::test_tools::tolerance(1e-15));
  }
}

BOOST_AUTO_TEST_CASE(full_covariance_in_three_axes_agrees_with_the_adaptive_rule) {
  // Gaussian::cellAverage integrates with adaptive panels of 8 points; the fixed rule here (4 points per outer axis)
  // must agree to far below a scheme's error wherever the density is not negligible.
  Vector m(3);
  m << 0.3, -0.2, 0.1;
  const Matrix C = spd(3, 1);
  const Gaussian g(m, C);
  std::vector<std::vector<double>> faces{uniformFaces(-4, 4, 16), uniformFaces(-4, 4, 16), uniformFaces(-4, 4, 16)};
  const auto u = gaussianGridAverages(m, C, faces, 4);
  double peak = *std::max_element(u.begin(), u.end()), worst = 0.0, worstNear = 0.0;
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 16; ++j)
      for (int i = 0; i < 16; ++i) {
        const double expected = g.cellAverage({faces[0][i], faces[1][j], faces[2][k]},
                                              {faces[0][i + 1], faces[1][j + 1], faces[2][k + 1]});
        const double value = u[static_cast<std::size_t>(i + 16 * (j + 16 * k))];
        BOOST_REQUIRE(value > 0.0);
        if (expected > 1e-6 * peak) worst = std::max(worst, std::fabs(value - expected) / expected);
        if (expected > 1e-2 * peak) worstNear = std::max(worstNear, std::fabs(value - expected) / expected);
      }
  BOOST_TEST_MESSAGE("largest relative difference from the adaptive rule: " << worst << " (near the mode " << worstNear << ")");
  // Measured (2026-12-07): 4.6e-7 over the cells above 1e-6 of the peak, 4.9e-9 above 1e-2; four times as margin.
  // A wrong conditional mean or variance is wrong by O(1).
  BOOST_TEST(worst < 2e-6);
  BOOST_TEST(worstNear < 2e-8);
}

BOOST_AUTO_TEST_CASE(full_covariance_in_five_axes_with_independent_blocks) {
  // Axes 0 and 1 independent of each other and of a full 3 x 3 block on axes 2..4: each cell average is the product
  // of the two axes' interval probabilities and the block's cell average (Gaussian::cellAverage), while the rule here
  // (3 points on axes 0..3, axis 4 exact) sees only a full 5 x 5 covariance.
  Vector m(5);
  m << 0.1, -0.3, 0.2, 0.0, -0.1;
  Matrix C = Matrix::Zero(5, 5);
  C(0, 0) = 0.7;
  C(1, 1) = 1.3;
  const Matrix block = spd(3, 4);
  C.bottomRightCorner(3, 3) = block;
  Vector mb(3);
  mb << m[2], m[3], m[4];
  const Gaussian g(mb, block);
  const int n = 8;
  std::vector<std::vector<double>> faces(5, uniformFaces(-4, 4, n));
  const auto u = gaussianGridAverages(m, C, faces, 3);
  const auto& f = faces[0];
  double worst = 0.0, worstNear = 0.0;
  const double peak = *std::max_element(u.begin(), u.end());
  for (std::size_t k = 0; k < u.size(); ++k) {
    std::size_t idx[5], rest = k;
    for (auto& i : idx) {
      i = rest % n;
      rest /= n;
    }
    double expected = g.cellAverage({f[idx[2]], f[idx[3]], f[idx[4]]}, {f[idx[2] + 1], f[idx[3] + 1], f[idx[4] + 1]});
    for (int a = 0; a < 2; ++a) {
      const double s = std::sqrt(C(a, a));
      expected *= normalIntervalProbability((f[idx[a]] - m[a]) / s, (f[idx[a] + 1] - m[a]) / s) / (f[idx[a] + 1] - f[idx[a]]);
    }
    BOOST_REQUIRE(u[k] > 0.0);
    if (expected > 1e-6 * peak) worst = std::max(worst, std::fabs(u[k] - expected) / expected);
    if (expected > 1e-2 * peak) worstNear = std::max(worstNear, std::fabs(u[k] - expected) / expected);
  }
  BOOST_TEST_MESSAGE("largest relative difference from the block product: " << worst << " (near the mode " << worstNear << ")");
  // Cells of width 1 against standard deviations of 0.8 to 1.4, 3 points per outer axis: measured (2026-12-07)
  // 2.4e-3 over the cells above 1e-6 of the peak, 1.3e-4 above 1e-2; four times as margin (the 4-point rule of
  // d <= 4 and finer cells are far more accurate: the tests above). A wrong coupling is wrong by O(1).
  BOOST_TEST(worst < 1e-2);
  BOOST_TEST(worstNear < 5.5e-4);
}

BOOST_AUTO_TEST_CASE(the_outer_rule_converges_at_its_order) {
  // One 4-D full-covariance cell of width h at the mean, against the same cell split into 2^3 outer sub-cells (the
  // last axis is exact): the difference falls like h^8 (4 points per outer axis) when h halves.
  Vector m = Vector::Zero(4);
  const Matrix C = spd(4, 7);
  std::vector<double> errors;
  for (double h : {1.6, 0.8}) {
    const std::vector<std::vector<double>> one{{-h / 2, h / 2}, {-h / 2, h / 2}, {-h / 2, h / 2}, {-h / 2, h / 2}};
    const std::vector<std::vector<double>> split{{-h / 2, 0, h / 2}, {-h / 2, 0, h / 2}, {-h / 2, 0, h / 2}, {-h / 2, h / 2}};
    const double coarse = gaussianGridAverages(m, C, one, 4)[0];
    const auto fine = gaussianGridAverages(m, C, split, 4);
    double mean = 0.0;
    for (double v : fine) mean += v / 8.0;
    errors.push_back(std::fabs(coarse - mean) / mean);
  }
  BOOST_TEST_MESSAGE("errors " << errors[0] << ", " << errors[1]);
  BOOST_TEST(errors[0] > 0.0);
  BOOST_TEST(errors[0] / errors[1] > 100.0);  // 2^8 = 256 in the limit
}

BOOST_AUTO_TEST_CASE(the_outside_bound_is_at_least_the_mass_outside) {
  Vector m(3);
  m << 0.5, -0.4, 0.2;
  const Matrix C = spd(3, 2);
  const Gaussian g(m, C);
  for (double half : {1.5, 2.5, 3.5}) {
    const double inside = g.boxProbability({-half, -half, -half}, {half, half, half});
    const double bound = gaussianOutsideBoxBound(m, C, {-half, -half, -half}, {half, half, half});
    BOOST_TEST(bound >= 1.0 - inside);
    BOOST_TEST(bound <= 3.0 * (1.0 - inside));  // the union bound is not loose by more than the axes' count here
  }
  Matrix D = Matrix::Zero(3, 3);
  D.diagonal() << 0.5, 1.0, 2.0;
  const Gaussian diagonal(m, D);
  BOOST_TEST(gaussianOutsideBoxBound(m, D, {-2, -2, -2}, {2, 2, 2}) ==
                 1.0 - diagonal.boxProbability({-2, -2, -2}, {2, 2, 2}),
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(rejects_what_is_not_a_covariance_or_a_grid) {
  Vector m = Vector::Zero(4);
  Matrix C = Matrix::Identity(4, 4);
  C(0, 1) = C(1, 0) = 2.0;  // not positive definite
  std::vector<std::vector<double>> faces(4, uniformFaces(-1, 1, 2));
  BOOST_CHECK_THROW(gaussianGridAverages(m, C, faces, 4), std::invalid_argument);
  faces[2] = {0.0, 0.0, 1.0};
  BOOST_CHECK_THROW(gaussianGridAverages(m, Matrix::Identity(4, 4), faces, 4), std::invalid_argument);
  BOOST_CHECK_THROW(gaussianGridAverages(m, Matrix::Identity(4, 4), std::vector<std::vector<double>>(4, uniformFaces(-1, 1, 2)), 0),
                    std::invalid_argument);
  BOOST_TEST(fullCovarianceNodes(331776, 4) == 4);     // 24^4
  BOOST_TEST(fullCovarianceNodes(2985984, 6) == 3);    // 12^6
  BOOST_TEST(fullCovarianceNodes(64000000, 6) == 2);   // 20^6
}

BOOST_AUTO_TEST_CASE(decorrelated_coordinates_make_sigma_diagonal) {
  for (int d : {4, 5, 6}) {
    const Matrix sigma = spd(d, static_cast<unsigned>(d));
    const DecorrelatedCoordinates y(sigma);
    BOOST_TEST(!y.isIdentity());
    const Matrix& L = y.parametersFromState();
    for (int i = 0; i < d; ++i) {
      BOOST_TEST(L(i, i) == 1.0);
      for (int j = i + 1; j < d; ++j) BOOST_TEST(L(i, j) == 0.0);
    }
    const Matrix rebuilt = L * y.noiseVariances().asDiagonal() * L.transpose();
    BOOST_TEST((rebuilt - sigma).cwiseAbs().maxCoeff() < 1e-14);
    const Matrix state = y.stateCovariance(sigma);
    BOOST_TEST((state - Matrix(y.noiseVariances().asDiagonal())).cwiseAbs().maxCoeff() < 1e-14);
    BOOST_TEST((y.stateFromParameters() * L - Matrix::Identity(d, d)).cwiseAbs().maxCoeff() < 1e-14);
    // The state box holds the image of every corner of the parameter box, and each of its walls is reached by one.
    std::vector<double> lower(static_cast<std::size_t>(d), -2.0), upper(static_cast<std::size_t>(d), 3.0), lo, hi;
    y.stateBox(lower, upper, lo, hi);
    std::vector<double> reachedLo(static_cast<std::size_t>(d), 1e300), reachedHi(static_cast<std::size_t>(d), -1e300);
    for (int corner = 0; corner < (1 << d); ++corner) {
      Vector theta(d);
      for (int a = 0; a < d; ++a) theta[a] = (corner >> a) & 1 ? upper[static_cast<std::size_t>(a)] : lower[static_cast<std::size_t>(a)];
      const Vector s = y.stateFromParameters() * theta;
      for (int a = 0; a < d; ++a) {
        BOOST_TEST(s[a] >= lo[static_cast<std::size_t>(a)] - 1e-12);
        BOOST_TEST(s[a] <= hi[static_cast<std::size_t>(a)] + 1e-12);
        reachedLo[static_cast<std::size_t>(a)] = std::min(reachedLo[static_cast<std::size_t>(a)], s[a]);
        reachedHi[static_cast<std::size_t>(a)] = std::max(reachedHi[static_cast<std::size_t>(a)], s[a]);
      }
    }
    for (int a = 0; a < d; ++a) {
      BOOST_TEST(reachedLo[static_cast<std::size_t>(a)] == lo[static_cast<std::size_t>(a)], boost::test_tools::tolerance(1e-12));
      BOOST_TEST(reachedHi[static_cast<std::size_t>(a)] == hi[static_cast<std::size_t>(a)], boost::test_tools::tolerance(1e-12));
    }
  }
  Matrix diagonal = Matrix::Zero(4, 4);
  diagonal.diagonal() << 0.3, 1.0, 2.0, 0.7;
  const DecorrelatedCoordinates same(diagonal);
  BOOST_TEST(same.isIdentity());
  BOOST_TEST(same.noiseVariances() == diagonal.diagonal());  // exactly Sigma's diagonal, no square of a root
}

BOOST_AUTO_TEST_SUITE_END()
