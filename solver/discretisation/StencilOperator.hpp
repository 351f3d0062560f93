#pragma once
// An assembled star-stencil matrix on a DMDA, stored as one coefficient array per stencil point (or a box stencil,
// Shape::Box, for the products of the exponential integrator with a full diffusion tensor). The
// second-order Fokker–Planck operator with isotropic or diagonal noise couples a cell only to its 2d face neighbours
// (Scharfetter–Gummel fluxes) and never couples the interlaced fields (p and q evolve independently). Stored this
// way, a product, a residual or a Gauss–Seidel sweep is one pass over the coefficients that reads the neighbours at
// fixed offsets: no column indices, no row pointers. That is the traffic that bounds these kernels (docs/scaling.md
// §2): a 5-point row costs 40 B of coefficients against 64 B in AIJ (8 B value and 4 B column index per entry).
//
// The kernels work on the DMDA's ghosted local layout. On one rank (no periodic axes) the ghosted block is the owned
// block, so a global vector's array can be passed directly; on several ranks the caller exchanges the ghosts first
// (DMGlobalToLocal) and, after a sweep, copies the owned values back (copyOwned).
#include <petscdmda.h>
#include <petscmat.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/discretisation/StaggeredArrays.hpp"

namespace fpdp::solver {

class StencilOperator {
  static constexpr int kReach = 1;  // cells per axis a coupling may reach

public:
  /// The couplings a stencil may hold: the face neighbours only (Star), or also the cells diagonal across an edge or
  /// a corner (Box: the mixed derivatives of a full diffusion tensor, AnisotropicDiffusion.hpp; 9 points in 2-D, 19
  /// or 27 in 3-D, padded with zeros to that set). Box stencils need a box-stencil DMDA on several ranks (the corner
  /// ghosts) and serve products and residuals; the multigrid smoother keeps to stars.
  enum class Shape { Star, Box };
  /// The most points a stencil holds (the 3-D box).
  static constexpr int kMaxPoints = 27;

  /// Reads A (assembled on dm, a DMDA with no periodic axis). Returns false, leaving the object empty, if A couples
  /// two fields or anything but the 2d face neighbours (a star stencil), or if dm is not such a DMDA; collective.
  /// forSmoothing: also keep the inverse diagonal that symmetricGaussSeidel needs (8 B per row).
  bool build(Mat A, DM dm, bool forSmoothing = false);

  /// One row's couplings: (cell offset, value) pairs of the same field, the diagonal included; zeros are no coupling.
  struct RowEntries {
    int count = 0;
    std::array<std::array<int, 3>, 27> offset{};
    std::array<double, 27> value{};
    void add(int dx, int dy, int dz, double v) {
      offset[static_cast<std::size_t>(count)] = {dx, dy, dz};
      value[static_cast<std::size_t>(count++)] = v;
    }
  };
  /// Fills the row of owned cell (i, j, k), field f (at most 27 entries).
  using RowSource = std::function<void(PetscInt i, PetscInt j, PetscInt k, int f, RowEntries& row)>;
  /// The same from the rows themselves, without an assembled matrix (the exponential integrator's operator: no
  /// AIJ assembly, 26 ms of a 256^2 run). Returns false as above for anything but a stencil of that shape, or a
  /// coupling outside the box; collective.
  bool build(DM dm, const RowSource& rows, bool forSmoothing = false, Shape shape = Shape::Star);
  /// A star row: the diagonal and the face neighbours' coefficients, in the order -x, +x, -y, +y, -z, +z (0: no
  /// coupling, e.g. through a wall).
  struct StarRow {
    double diagonal = 0.0;
    std::array<double, 6> neighbour{};
  };
  using StarRowSource = std::function<void(PetscInt i, PetscInt j, PetscInt k, int f, StarRow& row)>;
  /// The same for rows known to be stars: no per-entry checks (the Fokker–Planck operator's second-order rows; at
  /// 256^2 with two fields the build took 7.5 ms through RowEntries). Gives the object build(dm, RowSource) gives for
  /// the same rows, to the last bit. Collective.
  bool buildStar(DM dm, const StarRowSource& rows, bool forSmoothing = false);
  bool empty() const { return coefficients_.empty(); }

  /// Stored stencil points (the diagonal first): 2d + 1 for a star; 9, 19 or 27 for a box.
  int points() const { return static_cast<int>(shifts_.size()); }
  /// Whether the ghosted layout equals the owned one (one rank): global arrays can then be passed as ghosted ones.
  bool ghostedIsOwned() const { return ghostedIsOwned_; }
  int dimension() const { return dim_; }
  /// Interlaced fields per cell (rows per cell).
  PetscInt fields() const { return dof_; }
  const meshes::OwnedBlock& owned() const { return owned_; }
  /// Point o's cell offset per axis (point 0: the diagonal).
  const std::array<int, 3>& shift(int o) const { return shifts_[static_cast<std::size_t>(o)]; }
  /// Point o's coefficient per owned row (owned layout: cells x fields, interlaced); o < storedPoints().
  std::span<const double> coefficients(int o) const { return coefficients_.span(static_cast<std::size_t>(o)); }
  /// Points with a coefficient array: all of them, or, for a compressed box, the star's 2d + 1 (first in the order
  /// of the points). Compressed (box stencils of two interlaced fields whose off-axis coefficients are constant along
  /// every run of a line, as a constant Sigma gives on a uniform mesh): the off-axis points are stored as one value
  /// per run and field. At 256^2 the 2-D box then streams 5 arrays instead of 9 per product, the 3-D one 7 instead
  /// of 19 (152 -> 56 B per row).
  int storedPoints() const { return static_cast<int>(coefficients_.arrays()); }
  bool compressed() const { return !runConstants_.empty(); }

  /// The kernels (the residual here, the Clenshaw steps of ClenshawWavefront) run as vector FMA instructions where
  /// the processor has AVX2 + FMA, as portable code elsewhere; both round the same way (every multiply-add fused),
  /// so the results are the same bits (solver/discretisation/StencilKernels.hpp).
  /// Whether the vector copies are in use: available and not switched off.
  static bool vectorKernels();
  /// Switches the vector copies off (false) or back on where available (true): for tests and comparisons.
  static void useVectorKernels(bool enabled);

  /// r = b - A x. x: ghosted layout; b, r: owned layout (r may alias b).
  void residual(const double* x, const double* b, double* r) const;
  /// One term of the forward Chebyshev recurrence with its sum (docs/scheme.md §3, "Operators without detailed
  /// balance"): t <- scale (A x) + 2 x - t, then s <- s + weight t. Returns max |t| over the owned rows (a maximum:
  /// the same bits in any summation order and on any number of ranks). x: ghosted layout; t, s: owned layout.
  double chebyshevStep(const double* x, double* t, double* s, double scale, double weight) const;

  /// One symmetric Gauss–Seidel sweep (forward over the owned rows in local order, then backward) for A x = b, in
  /// place on the ghosted x; the ghost values stay fixed, as in PETSc's SOR_LOCAL_SYMMETRIC_SWEEP with omega = 1.
  /// zeroGuess: the incoming x (ghosts included) is taken as 0 (SOR_ZERO_INITIAL_GUESS). b: owned layout.
  void symmetricGaussSeidel(double* x, const double* b, bool zeroGuess) const;
  /// One half of that sweep: forward (backward = false) or backward over the owned rows, in place on the ghosted x,
  /// the ghost values fixed; zeroGuess as above. On several ranks the level smoother refreshes the ghosts between
  /// the two halves (GeometricMultigrid.cpp).
  void gaussSeidelSweep(double* x, const double* b, bool backward, bool zeroGuess) const;

  /// Copies the owned values of a ghosted array into an owned-layout array.
  void copyOwned(const double* ghosted, double* owned) const;

  /// {max over rows of sum_j |a_ij|, max over columns of sum_i |a_ij|}: the infinity and 1-norms, summed in the
  /// order PETSc's MatNorm sums an assembled matrix on one rank (equal to the last bit there). dm: the DMDA the
  /// stencil was built on. Collective.
  std::array<double, 2> norms(DM dm) const;
  /// max over the couplings i != j of |B_ij - B_ji| / max(|B_ij|, |B_ji|), B = W^-1 A W, W = diag(w) (w a global
  /// vector of dm); +inf if an entry is not finite. B_ij = (a_ij (1 / w_i)) w_j is computed as VecReciprocal and
  /// MatDiagonalScale compute it, so this equals detailedBalanceDefect (solver/propagation/ExponentialEvolution.hpp) of the
  /// assembled matrix.
  /// Collective.
  double detailedBalanceDefect(DM dm, Vec w) const;
  /// What the positive series of the exponential integrator needs to know of the signs (ExponentialEvolution.hpp):
  /// whether every coupling off the diagonal is >= 0 (A is a Metzler matrix: exp(tA) is then non-negative), the
  /// largest -a_ii (0 for a zero diagonal; +inf for a positive or non-finite entry) and the largest row sum
  /// sum_j a_ij (the growth of the max norm). Reduced over the ranks (maxima: the same bits on any number). Collective.
  struct Signs {
    bool metzler = true;
    double largestOutflow = 0.0;
    double largestRowSum = 0.0;
  };
  Signs signs(DM dm) const;

private:
  bool readLayout(DM dm);  // resets the object; false unless dm is a DMDA without periodic axes (collective)
  /// One row's couplings by shift index (kReach 1: 27 shifts), zero where there is none.
  using RowValues = std::array<double, 27>;
  /// The rows streamed into their final storage, never held twice (the 3-D box's set-up held 19 full arrays and
  /// then the 7 kept ones beside them: 416 B per cell, more than the whole run after it). fillRow(i, j, k, f,
  /// value) fills a zeroed RowValues, false for a coupling out of reach. The star's arrays are written as the rows
  /// come; a box's off-axis points kept as constants per run while they are, as full arrays from the row where
  /// one varies (then all points go through storeCoefficients). The same object, to the last bit, as
  /// storeCoefficients makes from the same rows; false as build returns it. Collective.
  template <class FillRow>
  bool buildStreamed(DM dm, FillRow&& fillRow, bool forSmoothing, Shape shape);
  void finishPoints(bool forSmoothing);  // the +-x points and, forSmoothing, the inverse diagonal
  void permuteArrays(std::vector<std::size_t> from);  // array t of coefficients_ takes array from[t]
  /// Per-run constants (per run, per off-axis point, per field) stored as distinct sets and an index per run.
  void storeRunConstants(const std::vector<double>& perRun, std::size_t offAxisPoints);
  /// The full-array form (build(Mat), and a box whose cross-diffusion points vary): refuses off-axis points unless
  /// shape is Box (collective) and stores one array per point.
  bool storeCoefficients(std::map<int, std::vector<double>>& byShift, int ok, DM dm, bool forSmoothing,
                         Shape shape = Shape::Star);
  double value(int o, std::size_t run, PetscInt q) const;  // point o's coefficient of owned row q in run `run`
  template <int NS, int NC>
  double compressedChebyshevKernel(const double* x, double* t, double* s, double scale, double weight) const;
  template <int NS, int NC>
  void compressedResidualKernel(const double* x, const double* b, double* r) const;
  template <class F>
  void dispatchCompressed(F&& f) const;
  struct Run {
    PetscInt q, g, n;       // first row in the owned and in the ghosted layout, rows
    std::uint32_t offsets;  // its points' offsets: the set at runOffsets_ + offsets * points()
  };
  void computeRuns();
  template <int N, class Span>
  void forEachRun(bool backward, Span&& span) const;
  template <int N>
  void residualKernel(const double* x, const double* b, double* r) const;
  template <int N>
  void sweepKernel(double* x, const double* b, bool backward) const;
  template <int N>
  double chebyshevKernel(const double* x, double* t, double* s, double scale, double weight) const;
  std::array<const double*, kMaxPoints> pointArrays() const;  // the points' arrays
  std::vector<int> pointsByColumn() const;
  template <class F>
  void forEachCoupling(F&& f) const;
  template <class F>
  void dispatch(F&& f) const;


  int dim_ = 1;
  PetscInt dof_ = 1;
  meshes::OwnedBlock owned_, ghosted_;
  bool ghostedIsOwned_ = true;
  std::vector<std::array<int, 3>> shifts_;           // per stored point: cell offset per axis; point 0 the diagonal
  StaggeredArrays coefficients_;  // per stored point, per owned row (cells x fields, interlaced), in one block
  std::vector<Run> runs_;
  std::vector<PetscInt> runOffsets_;  // the distinct sets of the points' ghosted-layout offsets (Run::offsets)
  std::vector<double> inverseDiagonal_;              // 1 / diagonal per owned row (only if built forSmoothing)
  std::vector<double> runConstants_;  // compressed: the distinct sets, per off-axis point, per field (2)
  std::vector<std::uint32_t> runConstantSet_;  // compressed: per run, its set in runConstants_
  int minusXPoint_ = 0, plusXPoint_ = 0;             // the points at -x and +x (the star always has them)
};

/// The vector whose array a StencilOperator kernel reads as x: x itself when ghosted is null (one rank), else
/// ghosted (a local vector of dm) after the ghost exchange from x.
Vec ghostedInput(DM dm, Vec x, Vec ghosted);

/// r = b - A x on PETSc vectors (global vectors of dm; r may be b): the ghost exchange into ghosted (null on one
/// rank), then op.residual. For PETSc callbacks: errors come back as a PETSc error code.
PetscErrorCode residual(const StencilOperator& op, DM dm, Vec x, Vec b, Vec r, Vec ghosted);

}  // namespace fpdp::solver
