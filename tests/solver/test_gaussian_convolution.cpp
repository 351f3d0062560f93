// The exact Gaussian convolution's two routes (docs/noisy-gd.md §3): the transform route (TiltedConvolution, FFTs with
// exponential tilts) against the direct sum, cell by cell relative to each value (the far tails included), the outflow
// at the walls, and mass to round-off; RealFft's lengths.
#define BOOST_TEST_MODULE gaussian_convolution
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "solver/noisygd/GaussianConvolution.hpp"
#include "solver/numerics/RealFft.hpp"

using namespace fpdp;
using Route = solver::GaussianConvolution::Route;

namespace {

struct Comparison {
  double worstRelative = 0;   // over cells whose direct value is at least 1e-280 of the peak
  double worstTiny = 0;       // largest |difference| / peak elsewhere (where the kernel's entries are subnormal)
  double outflowRelative = 0;
  double massError = 0;       // |mass after + outflow - mass before| / mass before, transform route
  int passes = 0;
  long summed = 0;
};

double massOf(const meshes::BoxMesh& mesh, const std::vector<double>& v) {
  double m = 0;
  std::size_t c = 0;
  for (int j = 0; j < mesh.cells(1); ++j)
    for (int i = 0; i < mesh.cells(0); ++i, ++c) m += v[c] * mesh.cellVolume(i, j, 0);
  return m;
}

Comparison compare(const meshes::BoxMesh& mesh, meshes::AxisValues s,
                   const std::vector<double>& start) {
  const solver::GaussianConvolution direct(mesh, s, Route::Direct), transform(mesh, s, Route::Transform);
  auto a = start, b = start;
  const auto outA = direct.apply(a);
  const auto outB = transform.apply(b);
  Comparison r;
  const double peak = *std::max_element(a.begin(), a.end());
  for (std::size_t c = 0; c < a.size(); ++c) {
    const double diff = std::abs(a[c] - b[c]);
    BOOST_REQUIRE(b[c] >= 0.0);
    if (a[c] >= 1e-280 * peak)
      r.worstRelative = std::max(r.worstRelative, diff / a[c]);
    else
      r.worstTiny = std::max(r.worstTiny, diff / peak);
  }
  for (int side = 0; side < 6; ++side) {
    const double d = std::abs(outA.mass[side] - outB.mass[side]);
    if (outA.mass[side] > 0) r.outflowRelative = std::max(r.outflowRelative, d / outA.mass[side]);
    else BOOST_TEST(outB.mass[side] == 0.0);
  }
  const double before = massOf(mesh, start);
  r.massError = std::abs(massOf(mesh, b) + outB.total() - before) / before;
  r.passes = transform.transformWork().passes;
  r.summed = transform.transformWork().summed;
  return r;
}

std::vector<double> sample(const meshes::BoxMesh& mesh, const std::function<double(double)>& f) {
  std::vector<double> v(static_cast<std::size_t>(mesh.cells(0)));
  for (int i = 0; i < mesh.cells(0); ++i) v[static_cast<std::size_t>(i)] = f(mesh.centre(i, 0, 0)[0]);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(transform_route_equals_the_direct_sum_cell_by_cell) {
  // Shapes that exercise the tilts: a Gaussian whose tails fall 300 orders of magnitude inside the box, a bimodal
  // density with a narrow bump 1e-3 of the peak, a box with empty cells (the kernel's own tails make the result),
  // exponential tails (log y straight), a narrow start (a point-like mass), mass beside a wall; kernels from 1 to 72 cells per sd. Every
  // cell down to 1e-280 of the peak within 1e-13 of the direct sum (measured: at most 2.5e-14); below that the
  // kernel's own entries are subnormal and both routes lose digits (differences below 1e-290 of the peak).
  struct Shape {
    const char* name;
    std::function<double(double)> f;
  };
  const std::vector<Shape> shapes{
      {"gaussian", [](double x) { return std::exp(-x * x / (2 * 0.04)); }},
      {"bimodal", [](double x) { return std::exp(-x * x / (2 * 0.04)) + 1e-3 * std::exp(-(x - 0.6) * (x - 0.6) / 0.005); }},
      {"box", [](double x) { return std::abs(x) < 0.2 ? 1.0 : 0.0; }},
      {"exponential", [](double x) { return 1.0 / (1.0 + std::exp(std::abs(x) / 0.05)); }},
      {"narrow", [](double x) { return std::exp(-x * x / (2 * 1e-6)); }},
      {"at a wall", [](double x) { return std::exp(-(x - 0.8) * (x - 0.8) / (2 * 0.01)); }},  // outflow
  };
  for (const double cellsPerSd : {1.0, 3.0, 15.15, 72.0})
    for (const auto& shape : shapes) {
      // Widths that are binary fractions (2^-10, 2^-11): the axes are uniform to the last bit.
      const int cells = cellsPerSd > 50 ? 6144 : 2048;
      const double half = cellsPerSd > 50 ? 1.5 : 1.0;
      const meshes::BoxMesh mesh({meshes::Axis::uniform(-half, half, cells)});
      BOOST_REQUIRE(mesh.axis(0).isUniform());
      const double h = 2 * half / cells;
      const Comparison r = compare(mesh, {cellsPerSd * h, 0, 0}, sample(mesh, shape.f));
      std::printf("s/h %6.2f %-12s worst relative %.2e, subnormal %.1e, outflow %.1e, mass %.1e, passes %d, summed %ld\n",
                  cellsPerSd, shape.name, r.worstRelative, r.worstTiny, r.outflowRelative, r.massError, r.passes,
                  r.summed);
      BOOST_TEST(r.worstRelative <= 1e-13);
      BOOST_TEST(r.worstTiny <= 1e-290);
      BOOST_TEST(r.outflowRelative <= 1e-13);
      BOOST_TEST(r.massError <= 1e-13);  // round-off of sums over 2048 cells
    }
  std::fflush(stdout);
}

BOOST_AUTO_TEST_CASE(far_tails_are_not_rounding_noise) {
  // A plain FFT convolution would leave the tails at about 1e-17 of the peak; the tilted passes keep cells 1e-250 of
  // the peak to 1e-13 of themselves (the direct sum's own accuracy there is about 1e-14).
  const meshes::BoxMesh mesh({meshes::Axis::uniform(-1, 1, 2048)});
  auto start = sample(mesh, [](double x) { return std::exp(-x * x / (2 * 0.0006)); });
  const solver::GaussianConvolution direct(mesh, {0.01, 0, 0}, Route::Direct), transform(mesh, {0.01, 0, 0}, Route::Transform);
  auto a = start, b = start;
  direct.apply(a);
  transform.apply(b);
  const double peak = *std::max_element(a.begin(), a.end());
  int deep = 0;
  for (std::size_t c = 0; c < a.size(); ++c)
    if (a[c] < 1e-250 * peak && a[c] > 1e-300) {
      ++deep;
      BOOST_TEST(std::abs(b[c] - a[c]) <= 1e-13 * a[c]);
    }
  BOOST_TEST(deep > 10);
  BOOST_TEST(transform.transformWork().passes > 1);  // the tails took tilted passes
}

BOOST_AUTO_TEST_CASE(two_dimensions_and_a_non_uniform_axis) {
  // 2-D: the transform route on both axes (lines along x and y) against the direct sum; a graded axis keeps the
  // direct route (the kernels are tabulated by offset only on uniform axes).
  const meshes::BoxMesh mesh({meshes::Axis::uniform(-4, 4, 128), meshes::Axis::uniform(-2, 2, 64)});
  std::vector<double> start(mesh.totalCells());
  std::size_t c = 0;
  for (int j = 0; j < mesh.cells(1); ++j)
    for (int i = 0; i < mesh.cells(0); ++i, ++c) {
      const auto x = mesh.centre(i, j, 0);
      start[c] = std::exp(-0.5 * (x[0] - 0.3) * (x[0] - 0.3) / 0.2 - 0.5 * x[1] * x[1] / 0.1) * (1.2 + std::sin(2 * x[0]));
    }
  const Comparison r = compare(mesh, {0.4, 0.25, 0}, start);
  std::printf("2-D: worst relative %.2e, outflow %.1e, mass %.1e, passes %d, summed %ld\n", r.worstRelative,
              r.outflowRelative, r.massError, r.passes, r.summed);
  BOOST_TEST(r.worstRelative <= 1e-13);
  BOOST_TEST(r.outflowRelative <= 1e-13);
  BOOST_TEST(r.massError <= 1e-13);

  const meshes::BoxMesh graded({meshes::Axis::graded(-3, 3, 200, 1.01)});
  const solver::GaussianConvolution g(graded, {0.5, 0, 0}, Route::Transform);
  BOOST_TEST(!g.transformsAxis(0));
}

BOOST_AUTO_TEST_CASE(lines_of_subnormal_mass_keep_their_mass) {
  // Lines along y where the density is about 1e-320 (a 2-D tail): subnormal values hold a few significant digits, and
  // the transform route's mass check must allow their rounding (it stopped a 2-D Poisson run: "deposited 1.1141e-320
  // of a line's mass 1.1121e-320").
  const meshes::BoxMesh mesh({meshes::Axis::uniform(-1, 1, 256), meshes::Axis::uniform(-2, 2, 64)});
  std::vector<double> start(mesh.totalCells());
  std::size_t c = 0, subnormalLines = 0;
  for (int j = 0; j < mesh.cells(1); ++j)
    for (int i = 0; i < mesh.cells(0); ++i, ++c) {
      const auto x = mesh.centre(i, j, 0);
      start[c] = std::exp(-0.5 * x[0] * x[0] / 0.0006 - 0.5 * x[1] * x[1] / 0.1);
    }
  for (int i = 0; i < mesh.cells(0); ++i) {
    const double v = start[static_cast<std::size_t>(i + mesh.cells(0) * (mesh.cells(1) / 2))];
    subnormalLines += v > 0 && v < std::numeric_limits<double>::min();
  }
  BOOST_TEST_REQUIRE(subnormalLines > 0u);
  const Comparison r = compare(mesh, {0.002, 0.3, 0}, start);
  BOOST_TEST(r.worstRelative <= 1e-13);
  BOOST_TEST(r.massError <= 1e-13);
}

BOOST_AUTO_TEST_CASE(automatic_route_by_cost) {
  // Wide kernels (tens of cells per sd) go to the transform, kernels narrower than a cell stay direct; co-transport
  // is refused on the transform route (its passive deposits are the direct sum's).
  const meshes::BoxMesh mesh({meshes::Axis::uniform(-1, 1, 2048)});
  const solver::GaussianConvolution wide(mesh, {0.015, 0, 0}), narrow(mesh, {0.0005, 0, 0});
  BOOST_TEST(wide.transformsAxis(0));
  BOOST_TEST(!narrow.transformsAxis(0));
  std::vector<double> p(2048, 1.0);
  std::vector<std::vector<double>> w(1, p);
  BOOST_CHECK_THROW(wide.coTransport(p, w), std::logic_error);
  BOOST_CHECK_NO_THROW(narrow.coTransport(p, w));
}

BOOST_AUTO_TEST_CASE(fft_lengths) {
  BOOST_TEST(solver::RealFft::goodSize(1) == 1);
  BOOST_TEST(solver::RealFft::goodSize(7) == 8);
  BOOST_TEST(solver::RealFft::goodSize(2001) == 2025);
  BOOST_TEST(solver::RealFft::goodSize(2304) == 2304);
  BOOST_TEST(solver::RealFft::goodSize(4097) == 4320);
  // A transform and its inverse: n times the input.
  const solver::RealFft fft(30);
  solver::FftBuffer<double> x(30), back(30);
  solver::FftBuffer<std::complex<double>> spectrum(16);
  for (int i = 0; i < 30; ++i) x[static_cast<std::size_t>(i)] = std::sin(i) + 0.5;
  fft.forward(x, spectrum);
  BOOST_TEST(std::abs(spectrum[0].real() - [&] { double s = 0; for (int i = 0; i < 30; ++i) s += x[static_cast<std::size_t>(i)]; return s; }()) <= 1e-13);
  fft.inverse(spectrum, back);
  for (int i = 0; i < 30; ++i) BOOST_TEST(std::abs(back[static_cast<std::size_t>(i)] / 30 - x[static_cast<std::size_t>(i)]) <= 1e-15);
}
