// Geometry of tensor box meshes: uniform and graded axes, cell bounds, volumes.
#define BOOST_TEST_MODULE meshes
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <tuple>

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
  }
  // A grading far below a cell's width in ratio is still seen.
  BOOST_TEST(!Axis::graded(-7.75, 9.25, 7680, 1.0 + 1e-9).isUniform());
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
