// Geometry of tensor box meshes: uniform and graded axes, cell bounds, volumes.
#define BOOST_TEST_MODULE meshes
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <algorithm>
#include <array>
#include <tuple>

#include "meshes/BallCellIntersection.hpp"
#include "meshes/BoxMesh.hpp"

using fpdp::meshes::Axis;
using fpdp::meshes::BoxMesh;

BOOST_AUTO_TEST_CASE(uniform_axis_has_exact_end_points_and_equal_widths) {
  const Axis a = Axis::uniform(-6.0, 6.0, 7);
  BOOST_TEST(a.cells() == 7);
  BOOST_TEST(a.face(0) == -6.0);
  BOOST_TEST(a.face(7) == 6.0);
  for (int i = 0; i < 7; ++i) BOOST_TEST(std::fabs(a.width(i) - 12.0 / 7) <= 1e-14);
  BOOST_TEST(a.isUniform());
}

BOOST_AUTO_TEST_CASE(fine_uniform_axes_far_from_zero_stay_uniform) {
  // Faces lower + h i round at their own magnitude: on many cells, or far from 0, the widths differ from h by more
  // than 1e-12 relative, and the axis is still uniform (the convolution's tables and transforms need it).
  for (const auto& [lo, hi, n] : {std::tuple{-7.75, 9.25, 7680}, std::tuple{-7.75, 9.25, 61440}, std::tuple{1e3, 1e3 + 1.0, 4096}}) {
    const Axis a = Axis::uniform(lo, hi, n);
    double worst = 0.0;
    for (int i = 0; i < n; ++i) worst = std::max(worst, std::fabs(a.width(i) * n / (hi - lo) - 1.0));
    BOOST_TEST_INFO(n << " cells on [" << lo << ", " << hi << "], widths off by " << worst);
    BOOST_TEST(a.isUniform());
    // Every window of cells too (the hockey-stick kink windows, HockeyStickKinks.cpp).
    bool everyWindow = true;
    for (int i = 1; i + 2 < n; ++i) everyWindow = everyWindow && a.equalWidths(i - 1, i + 2);
    BOOST_TEST(everyWindow);
  }
  // A grading far below a cell's width in ratio is still seen, in the whole axis and in its windows.
  const Axis graded = Axis::graded(-7.75, 9.25, 7680, 1.0 + 1e-9);
  BOOST_TEST(!graded.isUniform());
  BOOST_TEST(!graded.equalWidths(0, 3));
  BOOST_TEST(!graded.equalWidths(7676, 7679));
}

BOOST_AUTO_TEST_CASE(graded_axis_grows_geometrically_from_the_middle) {
  const double r = 1.05;
  for (int n : {10, 11}) {
    const Axis a = Axis::graded(-3.0, 5.0, n, r);
    BOOST_TEST(a.face(0) == -3.0);
    BOOST_TEST(a.face(n) == 5.0);
    BOOST_TEST(!a.isUniform());
    const double middle = 0.5 * (n - 1);
    for (int i = 0; i + 1 < n; ++i) {
      // Away from the middle each cell is r times its inner neighbour.
      const double expected = std::pow(r, std::fabs(i + 1 - middle) - std::fabs(i - middle));
      BOOST_TEST(std::fabs(a.width(i + 1) / a.width(i) - expected) <= 1e-12);
    }
    double total = 0;
    for (int i = 0; i < n; ++i) total += a.width(i);
    BOOST_TEST(std::fabs(total - 8.0) <= 1e-13);
  }
  BOOST_TEST(Axis::graded(0.0, 1.0, 5, 1.0).isUniform());
  BOOST_CHECK_THROW(Axis::graded(0.0, 1.0, 5, 0.9), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(cell_bounds_and_volumes) {
  const BoxMesh m({Axis::uniform(0.0, 1.0, 4), Axis::graded(-1.0, 1.0, 6, 1.1)});
  const auto [lo, hi] = m.cellBounds(2, 3, 0);
  BOOST_TEST(lo[0] == 0.5);
  BOOST_TEST(hi[0] == 0.75);
  BOOST_TEST(lo[1] == m.axis(1).face(3));
  BOOST_TEST(hi[1] == m.axis(1).face(4));
  BOOST_TEST(lo[2] == 0.0);
  BOOST_TEST(std::fabs(m.cellVolume(2, 3, 0) - 0.25 * m.axis(1).width(3)) <= 1e-16);
  double total = 0;
  for (int j = 0; j < 6; ++j)
    for (int i = 0; i < 4; ++i) total += m.cellVolume(i, j, 0);
  BOOST_TEST(std::fabs(total - 2.0) <= 1e-14);
}

namespace {
/// An independent reference for 2-D: the midpoint rule, in phi with x = c_x + r sin(phi) (which removes the chord's
/// square-root end points), of the chord along y inside the disc, max(0, min(y1, s) - max(y0, -s)) with s the half
/// chord; the integrand is then continuous and piecewise smooth, and the rule converges at second order.
double areaReference(const std::array<double, 3>& lo, const std::array<double, 3>& hi, const std::array<double, 3>& c,
                     double r, int n) {
  const double a = std::clamp((lo[0] - c[0]) / r, -1.0, 1.0), b = std::clamp((hi[0] - c[0]) / r, -1.0, 1.0);
  const double p0 = std::asin(a), p1 = std::asin(b), dp = (p1 - p0) / n;
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    const double phi = p0 + (i + 0.5) * dp, s = r * std::cos(phi);
    sum += std::max(0.0, std::min(hi[1] - c[1], s) - std::max(lo[1] - c[1], -s)) * r * std::cos(phi);
  }
  return sum * dp;
}

/// A reference for 3-D from the 2-D areas (checked above): the midpoint rule in psi with z = c_z + r sin(psi) of the
/// slice's area, many points, no knowledge of where the slices' shapes change.
double volumeReference(const std::array<double, 3>& lo, const std::array<double, 3>& hi,
                       const std::array<double, 3>& c, double r, int n) {
  const double a = std::clamp((lo[2] - c[2]) / r, -1.0, 1.0), b = std::clamp((hi[2] - c[2]) / r, -1.0, 1.0);
  const double p0 = std::asin(a), p1 = std::asin(b), dp = (p1 - p0) / n;
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    const double psi = p0 + (i + 0.5) * dp;
    sum += fpdp::meshes::cellMeasureInBall(lo, hi, c, r * std::cos(psi), 2) * r * std::cos(psi);
  }
  return sum * dp;
}
}  // namespace

BOOST_AUTO_TEST_CASE(cells_inside_a_ball_are_measured_exactly) {
  using fpdp::meshes::cellMeasureInBall;
  const std::array<double, 3> c{0.2, -0.1, 0.05};
  const double r = 1.3;
  // Whole, empty, and cut cells against the references (whose own error is below 1e-10 of the cell): 2-D to 1e-9 of
  // the cell, 3-D to 1e-7 (Gauss-Legendre on the pieces between the heights where the slice's circle passes a corner
  // or touches an edge line; measured up to 6e-8).
  BOOST_TEST(cellMeasureInBall({0.0, 0.0, 0.0}, {0.1, 0.2, 0.0}, c, r, 2) == 0.1 * 0.2);
  BOOST_TEST(cellMeasureInBall({2.0, 0.0, 0.0}, {2.1, 0.2, 0.0}, c, r, 2) == 0.0);
  unsigned seed = 12345;
  const auto uniform = [&seed](double a, double b) {
    seed = seed * 1103515245u + 12345u;
    return a + (b - a) * ((seed >> 8) & 0xffffff) / double(0x1000000);
  };
  int cut2 = 0, cut3 = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const double h = uniform(0.01, 0.4);
    std::array<double, 3> lo{uniform(-1.6, 1.6), uniform(-1.6, 1.6), uniform(-1.6, 1.6)};
    std::array<double, 3> hi{lo[0] + h, lo[1] + h * uniform(0.5, 2.0), lo[2] + h * uniform(0.5, 2.0)};
    const double area = cellMeasureInBall(lo, hi, c, r, 2), cell2 = (hi[0] - lo[0]) * (hi[1] - lo[1]);
    const double ref2 = areaReference(lo, hi, c, r, 100000);
    BOOST_TEST_INFO("2-D cell [" << lo[0] << ", " << hi[0] << "] x [" << lo[1] << ", " << hi[1] << "]");
    BOOST_TEST(std::fabs(area - ref2) <= 1e-9 * cell2);
    if (area > 0 && area < cell2) ++cut2;
    const double volume = cellMeasureInBall(lo, hi, c, r, 3), cell3 = cell2 * (hi[2] - lo[2]);
    const double ref3 = volumeReference(lo, hi, c, r, 20000);
    BOOST_TEST_INFO("3-D cell, z in [" << lo[2] << ", " << hi[2] << "]");
    BOOST_TEST(std::fabs(volume - ref3) <= 1e-7 * cell3);
    if (volume > 0 && volume < cell3) ++cut3;
  }
  BOOST_TEST(cut2 >= 20);  // the trials cut enough cells to mean something
  BOOST_TEST(cut3 >= 20);
  // A mesh covering the ball: the cells' measures sum to the disc's and the ball's.
  for (const int dim : {2, 3}) {
    const int n = dim == 2 ? 64 : 24;
    double total = 0.0;
    const double lower = -1.6, h = 3.2 / n;
    for (int k = 0; k < (dim == 3 ? n : 1); ++k)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
          total += cellMeasureInBall({lower + i * h, lower + j * h, lower + k * h},
                                     {lower + (i + 1) * h, lower + (j + 1) * h, lower + (k + 1) * h}, {0, 0, 0}, r, dim);
    const double exact = dim == 2 ? M_PI * r * r : 4.0 / 3.0 * M_PI * r * r * r;
    BOOST_TEST_INFO("dim " << dim);
    BOOST_TEST(std::fabs(total - exact) <= (dim == 2 ? 1e-12 : 1e-8) * exact);
  }
}
