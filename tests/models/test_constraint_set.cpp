// Pi_C of projected noisy GD (models/ConstraintSet.hpp): the projection's defining properties.
#include <boost/test/unit_test.hpp>

#include "models/ConstraintSet.hpp"

using fpdp::models::ConstraintSet;
using fpdp::models::Vector;

BOOST_AUTO_TEST_SUITE(constraint_set)

BOOST_AUTO_TEST_CASE(none_is_identity) {
  ConstraintSet c;
  Vector x(2);
  x << 3.0, -7.0;
  BOOST_TEST((c.project(x) - x).norm() == 0.0);
  BOOST_TEST(c.contains(x));
}

BOOST_AUTO_TEST_CASE(box_clamps_each_axis_and_is_idempotent) {
  Vector lo(2), hi(2), x(2);
  lo << -1.0, 0.0;
  hi << 1.0, 2.0;
  const auto c = ConstraintSet::box(lo, hi);
  x << 3.0, 0.5;
  const Vector px = c.project(x);
  BOOST_TEST(px[0] == 1.0);
  BOOST_TEST(px[1] == 0.5);
  BOOST_TEST((c.project(px) - px).norm() == 0.0);
  BOOST_TEST(!c.contains(x));
  BOOST_TEST(c.contains(px));
  // Variational inequality of a projection onto a convex set: <x - Pi x, y - Pi x> <= 0 for y in C.
  Vector y(2);
  y << -0.3, 1.7;
  BOOST_TEST((x - px).dot(y - px) <= 0.0);
}

BOOST_AUTO_TEST_CASE(ball_projects_radially) {
  Vector centre(2), x(2);
  centre << 1.0, 1.0;
  const auto c = ConstraintSet::ball(centre, 2.0);
  x << 1.0 + 6.0, 1.0 + 8.0;  // distance 10
  const Vector px = c.project(x);
  BOOST_TEST((px - centre).norm() == 2.0, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(px[0] == 1.0 + 1.2, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(px[1] == 1.0 + 1.6, boost::test_tools::tolerance(1e-15));
  Vector inside(2);
  inside << 1.5, 0.5;
  BOOST_TEST((c.project(inside) - inside).norm() == 0.0);
}

BOOST_AUTO_TEST_CASE(invalid_sets_are_rejected) {
  Vector lo(1), hi(1);
  lo << 1.0;
  hi << 1.0;
  BOOST_CHECK_THROW(ConstraintSet::box(lo, hi), std::invalid_argument);
  BOOST_CHECK_THROW(ConstraintSet::ball(lo, 0.0), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
