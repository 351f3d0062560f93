#include "meshes/BoxMesh.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fpdp::meshes {

Axis Axis::uniform(double lower, double upper, int cells) {
  if (!(cells >= 1)) throw std::invalid_argument("Axis::uniform: cells must be >= 1, got " + std::to_string(cells));
  if (!(upper > lower)) throw std::invalid_argument("Axis::uniform: upper must exceed lower");
  std::vector<double> f(static_cast<std::size_t>(cells) + 1);
  const double h = (upper - lower) / cells;
  for (int i = 0; i <= cells; ++i) f[i] = lower + h * i;
  f.back() = upper;  // exact end point, no accumulated rounding
  return Axis(std::move(f));
}

Axis Axis::graded(double lower, double upper, int cells, double ratio) {
  if (!(ratio >= 1.0)) throw std::invalid_argument("Axis::graded: ratio must be >= 1");
  if (ratio == 1.0) return uniform(lower, upper, cells);
  if (!(cells >= 1)) throw std::invalid_argument("Axis::graded: cells must be >= 1");
  // Relative widths: distance of each cell from the middle (in cells) sets its width ratio^distance.
  std::vector<double> widths(static_cast<std::size_t>(cells));
  const double middle = 0.5 * (cells - 1);
  for (int i = 0; i < cells; ++i) widths[i] = std::pow(ratio, std::fabs(i - middle));
  double total = 0.0;
  for (double w : widths) total += w;
  std::vector<double> f(static_cast<std::size_t>(cells) + 1);
  f[0] = lower;
  double acc = 0.0;
  for (int i = 0; i < cells; ++i) {
    acc += widths[i];
    f[i + 1] = lower + (upper - lower) * (acc / total);
  }
  f.back() = upper;
  return fromFaces(std::move(f));
}

Axis Axis::fromFaces(std::vector<double> faces) {
  if (faces.size() < 2) throw std::invalid_argument("Axis::fromFaces: need at least two faces");
  for (std::size_t i = 1; i < faces.size(); ++i)
    if (!(faces[i] > faces[i - 1])) throw std::invalid_argument("Axis::fromFaces: faces must increase strictly");
  return Axis(std::move(faces));
}

std::pair<double, double> Axis::nearestFaces(double x) const {
  const auto it = std::upper_bound(faces_.begin(), faces_.end(), x);
  if (it == faces_.begin()) return {faces_.front(), faces_.front()};
  if (it == faces_.end()) return {faces_.back(), faces_.back()};
  return {*(it - 1), *it};
}

int Axis::faceIndexAt(double x, double relTol) const {
  const auto it = std::lower_bound(faces_.begin(), faces_.end(), x);
  const int above = static_cast<int>(std::min<std::ptrdiff_t>(it - faces_.begin(), cells()));
  for (int i : {std::max(above - 1, 0), above}) {
    const double h = width(std::min(i, cells() - 1));
    if (std::fabs(faces_[static_cast<std::size_t>(i)] - x) <= relTol * h) return i;
  }
  return -1;
}

namespace {
/// The rounding a face lower + h i carries: its terms' magnitude (|lower| and |h i| <= upper - lower, even where they
/// cancel near 0), which against a small width exceeds any relative tolerance.
double faceRounding(const Axis& a) {
  return 8.0 * std::numeric_limits<double>::epsilon() * (std::abs(a.lower()) + std::abs(a.upper()));
}
}  // namespace

bool Axis::isUniform(double relTol) const {
  // Seen without the rounding term: 7680 cells on [-7.75, 9.25], widths off by 1.5e-12 relative, taken as graded and
  // convolved by the direct sum of erfc's, 60x slower than on 3840 cells.
  const double h = (upper() - lower()) / cells(), rounding = faceRounding(*this);
  for (int i = 0; i < cells(); ++i)
    if (std::abs(width(i) - h) > relTol * h + rounding) return false;
  return true;
}

bool Axis::equalWidths(int first, int last, double relTol) const {
  // Seen without the rounding term: 19200 cells on [-3, 4.5], whose hockey-stick kink windows were taken as graded,
  // so that TV lost its kink correction and changed by 3.4e-8 from 9600 cells.
  first = std::max(first, 0), last = std::min(last, cells() - 1);
  if (first > last) return true;
  const double h = width(first), rounding = faceRounding(*this);
  for (int i = first + 1; i <= last; ++i)
    if (std::abs(width(i) - h) > relTol * h + 2.0 * rounding) return false;
  return true;
}

int Axis::locate(double x) const {
  if (!(x >= faces_.front())) return -1;
  if (x > faces_.back()) return cells();
  if (x == faces_.back()) return cells() - 1;
  return static_cast<int>(std::upper_bound(faces_.begin(), faces_.end(), x) - faces_.begin()) - 1;
}

BoxMesh::BoxMesh(std::vector<Axis> axes)
    : dim_(static_cast<int>(axes.size())),
      axes_{Axis::uniform(0, 1, 1), Axis::uniform(0, 1, 1), Axis::uniform(0, 1, 1),
            Axis::uniform(0, 1, 1), Axis::uniform(0, 1, 1), Axis::uniform(0, 1, 1)} {
  if (dim_ < 1 || dim_ > kMaxDimension)
    throw std::invalid_argument("BoxMesh: the dimension must be 1 to " + std::to_string(kMaxDimension) + ", got " +
                                std::to_string(dim_));
  for (int a = 0; a < dim_; ++a) axes_[a] = std::move(axes[a]);
}

std::size_t BoxMesh::totalCells() const {
  std::size_t n = 1;
  for (int a = 0; a < kMaxDimension; ++a) n *= static_cast<std::size_t>(cells(a));
  return n;
}

std::ptrdiff_t BoxMesh::stride(int axis) const {
  std::ptrdiff_t s = 1;
  for (int a = 0; a < axis; ++a) s *= cells(a);
  return s;
}

std::array<double, kMaxDimension> BoxMesh::centreAt(const CellIndex& index) const {
  std::array<double, kMaxDimension> c{};
  for (int a = 0; a < dim_; ++a) c[a] = axes_[a].centre(index[a]);
  return c;
}

CellIndex BoxMesh::indexOf(std::size_t offset) const {
  CellIndex index{};
  for (int a = 0; a < dim_; ++a) {
    index[a] = static_cast<int>(offset % static_cast<std::size_t>(cells(a)));
    offset /= static_cast<std::size_t>(cells(a));
  }
  return index;
}

double BoxMesh::cellVolume(int i, int j, int k) const {
  double v = axes_[0].width(i);
  if (dim_ > 1) v *= axes_[1].width(j);
  if (dim_ > 2) v *= axes_[2].width(k);
  return v;
}

std::array<double, 3> BoxMesh::centre(int i, int j, int k) const {
  std::array<double, 3> c{axes_[0].centre(i), 0.0, 0.0};
  if (dim_ > 1) c[1] = axes_[1].centre(j);
  if (dim_ > 2) c[2] = axes_[2].centre(k);
  return c;
}

std::pair<std::array<double, 3>, std::array<double, 3>> BoxMesh::cellBounds(long i, long j, long k) const {
  std::array<double, 3> lo{0, 0, 0}, hi{0, 0, 0};
  const long idx[3] = {i, j, k};
  for (int a = 0; a < dim_; ++a) {
    lo[a] = axes_[a].face(static_cast<int>(idx[a]));
    hi[a] = axes_[a].face(static_cast<int>(idx[a]) + 1);
  }
  return {lo, hi};
}

std::array<double, 3> BoxMesh::lower() const {
  std::array<double, 3> l{0, 0, 0};
  for (int a = 0; a < dim_; ++a) l[a] = axes_[a].lower();
  return l;
}

std::array<double, 3> BoxMesh::upper() const {
  std::array<double, 3> u{0, 0, 0};
  for (int a = 0; a < dim_; ++a) u[a] = axes_[a].upper();
  return u;
}

double BoxMesh::minWidth() const {
  double m = INFINITY;
  for (int a = 0; a < dim_; ++a)
    for (int i = 0; i < cells(a); ++i) m = std::min(m, axes_[a].width(i));
  return m;
}

}  // namespace fpdp::meshes
