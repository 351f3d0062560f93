#pragma once
// Cell-centred tensor-product box meshes in 1 to kMaxDimension (6) dimensions: geometry only.
//
// An axis is a strictly increasing list of face coordinates x_0 < x_1 < ... < x_N; cell i is [x_i, x_{i+1}],
// its centre is the midpoint and its width x_{i+1} - x_i. A box mesh is the tensor product of dim axes.
// Cells are numbered x-fastest (i + nx*(j + ny*k), and so on for further axes), which is PETSc DMDA's natural order
// and HDF5's C order (with the axes reversed). PETSc's DMDA holds at most three axes: the (i, j, k) accessors below
// serve the distributed meshes of d <= 3; whole fields of any dimension use the index-array accessors and lines.
// Nothing here knows about densities, losses or privacy.
#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace fpdp::meshes {

/// The most axes a box mesh holds.
inline constexpr int kMaxDimension = 6;
/// A cell index or a point with one entry per axis (entries >= the mesh's dimension: 0).
using CellIndex = std::array<int, kMaxDimension>;
/// One number per axis (entries >= the mesh's dimension: 0), e.g. a kernel's standard deviations.
using AxisValues = std::array<double, kMaxDimension>;

/// Face coordinates of one axis; uniform or graded.
class Axis {
public:
  /// N equal cells on [lower, upper].
  static Axis uniform(double lower, double upper, int cells);
  /// N cells on [lower, upper] whose widths grow by the factor `ratio` (>= 1) per cell from the middle of the axis
  /// towards both walls (symmetric geometric grading: fine where the density lives, coarse in the tails).
  /// ratio = 1 is the uniform axis.
  static Axis graded(double lower, double upper, int cells, double ratio);
  /// Cells given by their faces (strictly increasing, at least two faces).
  static Axis fromFaces(std::vector<double> faces);

  int cells() const { return static_cast<int>(faces_.size()) - 1; }
  double lower() const { return faces_.front(); }
  double upper() const { return faces_.back(); }
  double face(int i) const { return faces_[static_cast<std::size_t>(i)]; }
  double centre(int i) const { return 0.5 * (faces_[i] + faces_[i + 1]); }
  double width(int i) const { return faces_[i + 1] - faces_[i]; }
  /// Distance between the centres of cells i and i+1 (the length the face flux between them sees).
  double centreDistance(int i) const { return centre(i + 1) - centre(i); }
  const std::vector<double>& faces() const { return faces_; }
  /// Whether all cells are equally wide: within relTol of the mean width plus the rounding of face coordinates of
  /// the box's magnitude (which, against a small width, exceeds any relative tolerance).
  bool isUniform(double relTol = 1e-12) const;
  /// Whether cells first..last (inclusive, clipped to the axis) are equally wide: within relTol of the first one's
  /// width plus the rounding of face coordinates, as in isUniform.
  bool equalWidths(int first, int last, double relTol = 1e-12) const;
  /// Index of the cell [x_i, x_{i+1}) holding x (the last cell is closed: x = upper is in it); -1 below the axis
  /// (or NaN), cells() above it. Binary search over the faces.
  int locate(double x) const;
  /// Index of the face at x within relTol times the adjacent cell width (round-off), or -1 if x is not a face.
  int faceIndexAt(double x, double relTol = 1e-9) const;
  /// The faces nearest to x from below and from above (equal at the ends of the axis).
  std::pair<double, double> nearestFaces(double x) const;

private:
  explicit Axis(std::vector<double> faces) : faces_(std::move(faces)) {}
  std::vector<double> faces_;
};

/// Tensor product of dim (1..kMaxDimension) axes. Unused axes (index >= dim) are a single unit cell [0, 1],
/// so code for d <= 3 can loop over three indices whatever the dimension.
class BoxMesh {
public:
  explicit BoxMesh(std::vector<Axis> axes);

  int dim() const { return dim_; }
  const Axis& axis(int a) const { return axes_[static_cast<std::size_t>(a)]; }
  int cells(int a) const { return axes_[a].cells(); }
  std::size_t totalCells() const;
  /// Distance in the natural order between neighbours along `axis` (1 for axis 0).
  std::ptrdiff_t stride(int axis) const;
  /// (i, j, k) accessors: the first three axes (meshes of d <= 3).
  double cellVolume(int i, int j, int k) const;
  /// Centre of cell (i, j, k); components >= dim are 0.
  std::array<double, 3> centre(int i, int j, int k) const;
  /// Lower and upper corners of cell (i, j, k); components >= dim are 0.
  std::pair<std::array<double, 3>, std::array<double, 3>> cellBounds(long i, long j, long k) const;
  std::array<double, 3> lower() const;
  std::array<double, 3> upper() const;
  double minWidth() const;

  /// Centre of the cell with the given index (entries >= dim: 0), any dimension.
  std::array<double, kMaxDimension> centreAt(const CellIndex& index) const;
  /// The index of the cell at position `offset` of the natural order.
  CellIndex indexOf(std::size_t offset) const;

  /// A grid line along one axis of a whole field stored in natural order (x fastest).
  struct Line {
    CellIndex index;           // cell index of the line's first cell (index[axis] = 0)
    std::ptrdiff_t offset;     // position of that cell in the field
    std::ptrdiff_t stride;     // distance between consecutive cells of the line
    double crossSection;       // product of the other axes' widths (1 in 1-D)
  };
  /// Calls f(line) for every line along `axis`.
  template <class F>
  void forEachLine(int axis, F&& f) const {
    // The other axes' indices run like an odometer. For d <= 3, (axis + 1) % 3 runs fastest, then (axis + 2) % 3 (the
    // order in which callers' per-line caches are built); beyond, the lowest axis first: natural order.
    std::array<int, kMaxDimension> others{};
    int count = 0;
    if (dim_ <= 3) {
      for (int o : {(axis + 1) % 3, (axis + 2) % 3}) others[count++] = o;
    } else {
      for (int a = 0; a < dim_; ++a)
        if (a != axis) others[count++] = a;
    }
    Line line{CellIndex{}, 0, stride(axis), 1.0};
    for (;;) {
      line.offset = 0;
      line.crossSection = 1.0;
      for (int a = 0; a < dim_; ++a) {
        line.offset += line.index[a] * stride(a);
        if (a != axis) line.crossSection *= axes_[a].width(line.index[a]);
      }
      f(line);
      int c = 0;
      for (; c < count; ++c) {
        const int o = others[c];
        if (++line.index[o] < cells(o)) break;
        line.index[o] = 0;
      }
      if (c == count) return;
    }
  }

private:
  int dim_;
  std::array<Axis, kMaxDimension> axes_;
};

}  // namespace fpdp::meshes
