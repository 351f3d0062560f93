#include "meshes/BallCellIntersection.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace fpdp::meshes {

namespace {

/// An antiderivative of sqrt(r^2 - x^2) on [-r, r].
double rootAntiderivative(double x, double r) {
  const double t = std::clamp(x / r, -1.0, 1.0);
  return 0.5 * r * r * (t * std::sqrt(std::max(0.0, 1.0 - t * t)) + std::asin(t));
}

/// Adds to `cuts` the points +-sqrt(r^2 - d^2) strictly inside (a, b): where a circle of radius r about 0 meets the
/// line at distance d (or where the slice circle of a sphere passes distance d).
void addCrossings(std::vector<double>& cuts, double d, double r, double a, double b) {
  if (std::fabs(d) >= r) return;
  const double x = std::sqrt(r * r - d * d);
  for (const double c : {-x, x})
    if (c > a && c < b) cuts.push_back(c);
}

/// The area of [x0, x1] x [y0, y1] inside the disc x^2 + y^2 <= r^2 (centred coordinates).
double rectangleInDisc(double x0, double x1, double y0, double y1, double r) {
  if (r <= 0.0) return 0.0;
  const double a = std::max(x0, -r), b = std::min(x1, r);
  if (a >= b || y0 >= y1) return 0.0;
  // Where the chord's expression changes: the circle meets y = y0 or y = y1 at x = +-sqrt(r^2 - y^2).
  std::vector<double> cuts{a, b};
  for (const double y : {y0, y1}) addCrossings(cuts, y, r, a, b);
  std::sort(cuts.begin(), cuts.end());
  double area = 0.0;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const double u = cuts[k], v = cuts[k + 1];
    if (v <= u) continue;
    // The chord at the piece's middle says which bounds are active on the whole piece.
    const double m = 0.5 * (u + v), s = std::sqrt(std::max(0.0, r * r - m * m));
    const bool topIsCircle = s < y1, bottomIsCircle = -s > y0;
    const double top = topIsCircle ? s : y1, bottom = bottomIsCircle ? -s : y0;
    if (top <= bottom) continue;
    const double root = rootAntiderivative(v, r) - rootAntiderivative(u, r);  // int sqrt(r^2 - x^2)
    const double width = v - u;
    area += (topIsCircle ? root : y1 * width) - (bottomIsCircle ? -root : y0 * width);
  }
  return std::clamp(area, 0.0, (x1 - x0) * (y1 - y0));
}

/// Gauss-Legendre nodes and weights on [-1, 1], 8 points.
constexpr std::array<double, 8> kNodes{-0.9602898564975363, -0.7966664774136267, -0.5255324099163290,
                                       -0.1834346424956498, 0.1834346424956498,  0.5255324099163290,
                                       0.7966664774136267,  0.9602898564975363};
constexpr std::array<double, 8> kWeights{0.1012285362903763, 0.2223810344533745, 0.3137066458778873,
                                         0.3626837833783620, 0.3626837833783620, 0.3137066458778873,
                                         0.2223810344533745, 0.1012285362903763};

}  // namespace

double cellMeasureInBall(const std::array<double, 3>& lo, const std::array<double, 3>& hi,
                         const std::array<double, 3>& centre, double r, int dim) {
  const double x0 = lo[0] - centre[0], x1 = hi[0] - centre[0], y0 = lo[1] - centre[1], y1 = hi[1] - centre[1];
  if (dim == 2) return rectangleInDisc(x0, x1, y0, y1, r);
  const double z0 = std::max(lo[2] - centre[2], -r), z1 = std::min(hi[2] - centre[2], r);
  if (z0 >= z1) return 0.0;
  // The slice at height z is the disc of radius rho(z) = sqrt(r^2 - z^2); its area over the rectangle has kinks where
  // rho equals the distance to an edge line (|x0|, |x1|, |y0|, |y1|) or to a corner.
  std::vector<double> cuts{z0, z1};
  std::vector<double> distances{std::fabs(x0), std::fabs(x1), std::fabs(y0), std::fabs(y1)};
  for (const double x : {x0, x1})
    for (const double y : {y0, y1}) distances.push_back(std::hypot(x, y));
  for (const double d : distances) addCrossings(cuts, d, r, z0, z1);
  std::sort(cuts.begin(), cuts.end());
  double volume = 0.0;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const double u = cuts[k], v = cuts[k + 1];
    if (v <= u) continue;
    // At a piece's ends the area grows like a power 3/2 of the distance (the circle crossing an edge line); the map
    // z = mid + half (3t - t^3) / 2, flat at t = +-1, makes the integrand smooth enough for the rule.
    const double half = 0.5 * (v - u), mid = 0.5 * (u + v);
    for (std::size_t q = 0; q < kNodes.size(); ++q) {
      const double t = kNodes[q];
      const double z = mid + half * 0.5 * (3.0 * t - t * t * t), jacobian = half * 1.5 * (1.0 - t * t);
      volume += jacobian * kWeights[q] * rectangleInDisc(x0, x1, y0, y1, std::sqrt(std::max(0.0, r * r - z * z)));
    }
  }
  return std::clamp(volume, 0.0, (x1 - x0) * (y1 - y0) * (hi[2] - lo[2]));
}

}  // namespace fpdp::meshes
