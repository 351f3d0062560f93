#include "solver/discretisation/StencilOperator.hpp"

#include "solver/discretisation/StencilKernels.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>

namespace fpdp::solver {

namespace {
// The shifts up to kReach cells per axis, numbered (sx + R) + W (sy + R) + W^2 (sz + R) with R = kReach,
// W = 2 R + 1; arrays are allocated for the shifts that occur.
constexpr int R = 1, W = 2 * R + 1, kShifts = W * W * W;
int shiftIndex(int sx, int sy, int sz) { return (sx + R) + W * (sy + R) + W * W * (sz + R); }
std::array<int, 3> shiftOf(int s) { return {s % W - R, (s / W) % W - R, s / (W * W) - R}; }
int axesOf(int sh) {
  const auto v = shiftOf(sh);
  return (v[0] != 0) + (v[1] != 0) + (v[2] != 0);
}
bool inDimension(int sh, int dim) {
  const auto v = shiftOf(sh);
  return (dim > 1 || v[1] == 0) && (dim > 2 || v[2] == 0);
}
/// The stored order of the points (the kernels sum in it, so it is kept to the last bit): the diagonal, those that
/// occur on some rank (`present`) by shift index, then the padding by shift index to the point counts the kernels are
/// built for (a star of 2d + 1; a box of 9 in 2-D, 19 with the edges or 27 with the corners too in 3-D). A
/// compressed box keeps this order within its star points and within its off-axis points.
std::vector<int> storedOrder(const std::array<int, kShifts>& present, int dim, bool offAxis, bool corner) {
  const int centre = shiftIndex(0, 0, 0);
  std::vector<int> order{centre};
  for (int sh = 0; sh < kShifts; ++sh)
    if (sh != centre && present[static_cast<std::size_t>(sh)]) order.push_back(sh);
  for (int sh = 0; sh < kShifts; ++sh) {
    const int axes = axesOf(sh);
    const bool wanted = axes == 1 || (offAxis && axes == 2) || (corner && axes == 3);
    if (inDimension(sh, dim) && wanted && std::find(order.begin(), order.end(), sh) == order.end())
      order.push_back(sh);
  }
  return order;
}
}  // namespace

bool StencilOperator::readLayout(DM dm) {
  *this = StencilOperator{};
  static_assert(R == kReach);
  MPI_Comm comm;
  FPDP_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(dm), &comm));
  PetscBool isDa = PETSC_FALSE;
  FPDP_PETSC(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(dm), DMDA, &isDa));
  PetscInt dim = 0, dof = 0, width = 0;
  DMBoundaryType bnd[3] = {DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE};
  if (isDa)
    FPDP_PETSC(DMDAGetInfo(dm, &dim, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &dof, &width, &bnd[0],
                           &bnd[1], &bnd[2], nullptr));
  int usable = isDa && width >= 1 && bnd[0] == DM_BOUNDARY_NONE && bnd[1] == DM_BOUNDARY_NONE &&
                       bnd[2] == DM_BOUNDARY_NONE
                   ? 1
                   : 0;
  int all = 0;
  FPDP_PETSC(MPI_Allreduce(&usable, &all, 1, MPI_INT, MPI_MIN, comm));
  if (!all) return false;
  dim_ = static_cast<int>(dim);
  dof_ = dof;
  owned_ = meshes::dmdaBlock(dm, false);
  ghosted_ = meshes::dmdaBlock(dm, true);
  ghostedIsOwned_ = meshes::ghostedIsOwned(dm);
  return true;
}

bool StencilOperator::build(Mat A, DM dm, bool forSmoothing) {
  if (!readLayout(dm)) return false;
  ISLocalToGlobalMapping ltog;
  FPDP_PETSC(DMGetLocalToGlobalMapping(dm, &ltog));
  const PetscInt* blocks;
  FPDP_PETSC(ISLocalToGlobalMappingGetBlockIndices(ltog, &blocks));
  const PetscInt rows = owned_.size() * dof_;
  std::map<int, std::vector<double>> byShift;
  byShift[shiftIndex(0, 0, 0)].assign(static_cast<std::size_t>(rows), 0.0);
  int ok = 1;
  PetscInt r = 0;
  std::vector<std::pair<PetscInt, int>> neighbours;  // (global block, shift index) of the cells within reach
  for (PetscInt k = owned_.start[2]; k < owned_.start[2] + owned_.count[2]; ++k)
    for (PetscInt j = owned_.start[1]; j < owned_.start[1] + owned_.count[1]; ++j)
      for (PetscInt i = owned_.start[0]; i < owned_.start[0] + owned_.count[0]; ++i) {
        neighbours.clear();
        const PetscInt c[3] = {i, j, k};
        for (int sz = dim_ > 2 ? -R : 0; sz <= (dim_ > 2 ? R : 0); ++sz)
          for (int sy = dim_ > 1 ? -R : 0; sy <= (dim_ > 1 ? R : 0); ++sy)
            for (int sx = -R; sx <= R; ++sx) {
              const PetscInt n[3] = {c[0] + sx, c[1] + sy, c[2] + sz};
              bool inside = true;
              for (int a = 0; a < 3; ++a)
                inside = inside && n[a] >= ghosted_.start[a] && n[a] < ghosted_.start[a] + ghosted_.count[a];
              if (inside) neighbours.emplace_back(blocks[ghosted_.local(n[0], n[1], n[2])], shiftIndex(sx, sy, sz));
            }
        const PetscInt self = blocks[ghosted_.local(i, j, k)];
        for (PetscInt f = 0; f < dof_; ++f, ++r) {
          const PetscInt row = self * dof_ + f;
          PetscInt nc;
          const PetscInt* cols;
          const PetscScalar* vals;
          FPDP_PETSC(MatGetRow(A, row, &nc, &cols, &vals));
          for (PetscInt q = 0; q < nc && ok; ++q) {
            if (vals[q] == 0.0) continue;  // a stored zero is no coupling
            const PetscInt block = cols[q] / dof_;
            int shift = -1;
            for (const auto& [b, s] : neighbours)
              if (b == block) shift = s;
            if (shift < 0 || cols[q] % dof_ != f) {
              ok = 0;  // not a face neighbour, or another field
              continue;
            }
            auto& coef = byShift[shift];
            if (coef.empty()) coef.assign(static_cast<std::size_t>(rows), 0.0);
            coef[static_cast<std::size_t>(r)] = vals[q];
          }
          FPDP_PETSC(MatRestoreRow(A, row, &nc, &cols, &vals));
        }
      }
  FPDP_PETSC(ISLocalToGlobalMappingRestoreBlockIndices(ltog, &blocks));
  return storeCoefficients(byShift, ok, dm, forSmoothing);
}

bool StencilOperator::build(DM dm, const RowSource& rowSource, bool forSmoothing, Shape shape) {
  if (!readLayout(dm)) return false;
  // Every entry as the coupling loop below reads it: a zero is no coupling, a later entry of a shift replaces an
  // earlier one, one beyond the reach or the ghosted block refuses the rows.
  RowEntries entries;
  const auto fill = [&](PetscInt i, PetscInt j, PetscInt k, PetscInt f, RowValues& value) {
    entries.count = 0;
    rowSource(i, j, k, static_cast<int>(f), entries);
    for (int e = 0; e < entries.count; ++e) {
      const auto& o = entries.offset[static_cast<std::size_t>(e)];
      const double v = entries.value[static_cast<std::size_t>(e)];
      if (v == 0.0) continue;
      const PetscInt n[3] = {i + o[0], j + o[1], k + o[2]};
      bool within = std::abs(o[0]) <= R && std::abs(o[1]) <= R && std::abs(o[2]) <= R;
      for (int a = 0; a < 3; ++a)
        within = within && n[a] >= ghosted_.start[a] && n[a] < ghosted_.start[a] + ghosted_.count[a];
      if (!within) return false;
      value[static_cast<std::size_t>(shiftIndex(o[0], o[1], o[2]))] = v;
    }
    return true;
  };
  return buildStreamed(dm, fill, forSmoothing, shape);
}

bool StencilOperator::buildStar(DM dm, const StarRowSource& rowSource, bool forSmoothing) {
  if (!readLayout(dm)) return false;
  StarRow row;
  std::array<std::size_t, 6> neighbourShift{};
  for (int n = 0; n < 2 * dim_; ++n) {
    std::array<int, 3> o{0, 0, 0};
    o[static_cast<std::size_t>(n / 2)] = n % 2 == 0 ? -1 : 1;
    neighbourShift[static_cast<std::size_t>(n)] = static_cast<std::size_t>(shiftIndex(o[0], o[1], o[2]));
  }
  // The diagonal as given (a zero included), a zero neighbour as no coupling.
  const auto fill = [&](PetscInt i, PetscInt j, PetscInt k, PetscInt f, RowValues& value) {
    row = StarRow{};
    rowSource(i, j, k, static_cast<int>(f), row);
    value[static_cast<std::size_t>(shiftIndex(0, 0, 0))] = row.diagonal;
    for (int n = 0; n < 2 * dim_; ++n) {
      const double v = row.neighbour[static_cast<std::size_t>(n)];
      if (v != 0.0) value[neighbourShift[static_cast<std::size_t>(n)]] = v;
    }
    return true;
  };
  return buildStreamed(dm, fill, forSmoothing, Shape::Star);
}

template <class FillRow>
bool StencilOperator::buildStreamed(DM dm, FillRow&& fillRow, bool forSmoothing, Shape shape) {
  MPI_Comm comm;
  FPDP_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(dm), &comm));
  const PetscInt rows = owned_.size() * dof_;
  const int centre = shiftIndex(0, 0, 0);
  // The star's points (the centre first, then by shift index) straight into their final arrays; a box's off-axis
  // points as one value per run and field while they are constant along it.
  std::vector<int> star{centre}, offAxis;
  for (int sh = 0; sh < kShifts; ++sh) {
    if (sh == centre || !inDimension(sh, dim_)) continue;
    (axesOf(sh) == 1 ? star : offAxis).push_back(sh);
  }
  coefficients_ = StaggeredArrays(star.size(), static_cast<std::size_t>(rows));
  computeRuns();  // no points yet: the runs alone, which do not depend on them
  const bool box = shape == Shape::Box;
  const std::size_t M = offAxis.size();
  std::vector<double> constants(box ? runs_.size() * M * 2 : 0, 0.0);
  std::array<int, kShifts> seen{};
  seen[static_cast<std::size_t>(centre)] = 1;  // the diagonal is always a point
  int ok = 1, constant = 1;
  // Once an off-axis point varies along a run: one full array per point, as storeCoefficients takes them. The star's
  // arrays leave the block (which is freed) and the off-axis points with couplings get arrays, the rows before
  // restored from the constants (which they equalled); a point without any coupling stays without one (its zeros).
  std::vector<double*> starOut(star.size());
  for (std::size_t t = 0; t < star.size(); ++t) starOut[t] = coefficients_[t];
  std::vector<std::vector<double>> starFull, offAxisFull;
  const auto leaveBlock = [&] {
    starFull.resize(star.size());
    for (std::size_t t = 0; t < star.size(); ++t) {
      starFull[t].assign(coefficients_[t], coefficients_[t] + rows);
      starOut[t] = starFull[t].data();
    }
    coefficients_ = StaggeredArrays();
  };
  const auto expandConstants = [&](PetscInt upTo) {
    offAxisFull.resize(M);
    for (std::size_t m = 0; m < M; ++m) {
      if (!seen[static_cast<std::size_t>(offAxis[m])]) continue;
      offAxisFull[m].assign(static_cast<std::size_t>(rows), 0.0);
      for (std::size_t q = 0; q < runs_.size() && runs_[q].q < upTo; ++q)
        for (PetscInt v = 0; v < runs_[q].n && runs_[q].q + v < upTo; ++v)
          offAxisFull[m][static_cast<std::size_t>(runs_[q].q + v)] = constants[2 * (q * M + m) + v % 2];
    }
  };
  RowValues value;
  std::size_t run = 0;
  PetscInt r = 0;
  for (PetscInt k = owned_.start[2]; k < owned_.start[2] + owned_.count[2] && ok; ++k)
    for (PetscInt j = owned_.start[1]; j < owned_.start[1] + owned_.count[1] && ok; ++j)
      for (PetscInt i = owned_.start[0]; i < owned_.start[0] + owned_.count[0] && ok; ++i)
        for (PetscInt f = 0; f < dof_ && ok; ++f, ++r) {
          value.fill(0.0);
          if (!fillRow(i, j, k, f, value)) {
            ok = 0;
            break;
          }
          for (std::size_t s = 0; s < star.size(); ++s) {
            const double v = value[static_cast<std::size_t>(star[s])];
            starOut[s][r] = v;
            if (v != 0.0) seen[static_cast<std::size_t>(star[s])] = 1;
          }
          while (r >= runs_[run].q + runs_[run].n) ++run;
          const PetscInt position = r - runs_[run].q;
          for (const int sh : offAxis)  // a zero is no coupling (the constant's 0, compared below)
            if (value[static_cast<std::size_t>(sh)] != 0.0) seen[static_cast<std::size_t>(sh)] = 1;
          if (!box) continue;
          for (std::size_t m = 0; m < M && constant; ++m) {
            const double v = value[static_cast<std::size_t>(offAxis[m])];
            double* kk = constants.data() + 2 * (run * M + m);
            if (position < 2) kk[position] = v;
            if (!(v == kk[position % 2])) {  // NaN never compares equal: not compressed
              constant = 0;
              expandConstants(r);
              std::vector<double>().swap(constants);
              leaveBlock();
            }
          }
          if (!constant)
            for (std::size_t m = 0; m < M; ++m) {
              const double v = value[static_cast<std::size_t>(offAxis[m])];
              if (v == 0.0) continue;
              if (offAxisFull[m].empty()) offAxisFull[m].assign(static_cast<std::size_t>(rows), 0.0);
              offAxisFull[m][static_cast<std::size_t>(r)] = v;
            }
        }
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm));
  if (!ok) {
    *this = StencilOperator{};
    return false;
  }
  // Every rank stores the same points (the union), so the kernels agree on the stencil.
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, seen.data(), kShifts, MPI_INT, MPI_MAX, comm));
  bool hasOffAxis = false, corner = false;
  for (const int sh : offAxis)
    if (seen[static_cast<std::size_t>(sh)]) hasOffAxis = true, corner = corner || axesOf(sh) > 2;
  if (hasOffAxis && !box) {  // storeCoefficients' rule: only a box may hold them
    *this = StencilOperator{};
    return false;
  }
  if (hasOffAxis) {
    int compressible = constant && !forSmoothing && dof_ == 2 ? 1 : 0;
    FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, &compressible, 1, MPI_INT, MPI_MIN, comm));
    if (!compressible) {
      // One full array per point, as storeCoefficients stores them (a graded mesh, widths that are not binary
      // fractions, or another rank's rows varying).
      if (constant) {
        expandConstants(rows);
        leaveBlock();
      }
      std::map<int, std::vector<double>> byShift;
      for (std::size_t t = 0; t < star.size(); ++t)
        if (star[t] == centre || seen[static_cast<std::size_t>(star[t])]) byShift[star[t]] = std::move(starFull[t]);
      std::vector<std::vector<double>>().swap(starFull);
      for (std::size_t m = 0; m < M; ++m)
        if (!offAxisFull[m].empty()) byShift[offAxis[m]] = std::move(offAxisFull[m]);
      std::vector<std::vector<double>>().swap(offAxisFull);
      return storeCoefficients(byShift, 1, dm, forSmoothing, shape);
    }
  }
  // The stored order, the star's points first; the star's arrays into it (array t takes the one streamed for
  // starOrder[t]).
  std::vector<int> starOrder, offAxisOrder;
  for (const int sh : storedOrder(seen, dim_, hasOffAxis, corner))
    (axesOf(sh) > 1 ? offAxisOrder : starOrder).push_back(sh);
  std::vector<std::size_t> from(star.size());
  for (std::size_t t = 0; t < star.size(); ++t)
    from[t] = static_cast<std::size_t>(std::find(star.begin(), star.end(), starOrder[t]) - star.begin());
  permuteArrays(std::move(from));
  shifts_.clear();
  for (const int sh : starOrder) shifts_.push_back(shiftOf(sh));
  if (hasOffAxis) {
    for (const int sh : offAxisOrder) shifts_.push_back(shiftOf(sh));
    // The streamed constants (per run, in offAxis's order) in the stored order of the points.
    const std::size_t kept = offAxisOrder.size();
    std::vector<double> perRun(runs_.size() * kept * 2, 0.0);
    for (std::size_t m = 0; m < kept; ++m) {
      const auto streamed =
          static_cast<std::size_t>(std::find(offAxis.begin(), offAxis.end(), offAxisOrder[m]) - offAxis.begin());
      for (std::size_t q = 0; q < runs_.size(); ++q)
        std::copy_n(constants.begin() + static_cast<std::ptrdiff_t>(2 * (q * M + streamed)), 2,
                    perRun.begin() + static_cast<std::ptrdiff_t>(2 * (q * kept + m)));
    }
    std::vector<double>().swap(constants);
    storeRunConstants(perRun, kept);
  }
  computeRuns();
  finishPoints(forSmoothing);
  return true;
}

// Array t of coefficients_ takes the values of array from[t] (a permutation), in place: one cycle at a time through
// one array's copy.
void StencilOperator::permuteArrays(std::vector<std::size_t> from) {
  const std::size_t rows = coefficients_.length();
  std::vector<double> held;
  for (std::size_t start = 0; start < from.size(); ++start) {
    if (from[start] == start) continue;
    if (held.empty()) held.resize(rows);
    // One cycle: start <- from[start] <- from[from[start]] ... back to start.
    std::copy(coefficients_[start], coefficients_[start] + rows, held.begin());
    std::size_t t = start;
    while (from[t] != start) {
      std::copy(coefficients_[from[t]], coefficients_[from[t]] + rows, coefficients_[t]);
      const std::size_t next = from[t];
      from[t] = t;
      t = next;
    }
    std::copy(held.begin(), held.end(), coefficients_[t]);
    from[t] = t;
  }
}

bool StencilOperator::storeCoefficients(std::map<int, std::vector<double>>& byShift, int ok, DM dm,
                                        bool forSmoothing, Shape shape) {
  MPI_Comm comm;
  FPDP_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(dm), &comm));
  const PetscInt rows = owned_.size() * dof_;
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm));
  if (!ok) {
    *this = StencilOperator{};
    return false;
  }
  // Every rank stores the same points (the union), so the kernels agree on the stencil.
  std::array<int, kShifts> present{};
  for (const auto& [sh, coef] : byShift) present[static_cast<std::size_t>(sh)] = coef.empty() ? 0 : 1;
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, present.data(), kShifts, MPI_INT, MPI_MAX, comm));
  // Only star stencils (the face neighbours): the wider Galerkin coarse-level stencils (up to 5 points per axis)
  // were measured slower in this form than PETSc's AIJ kernels (1024^2 multigrid step 141 -> 185 ms), and a star
  // DMDA does not exchange the corner ghosts off-axis points would read. A box (Shape::Box) is asked for where the
  // operator has them: the products of the exponential integrator for a full diffusion tensor.
  bool offAxis = false, corner = false;
  for (int sh = 0; sh < kShifts; ++sh)
    if (present[static_cast<std::size_t>(sh)]) offAxis = offAxis || axesOf(sh) > 1, corner = corner || axesOf(sh) > 2;
  if (offAxis && shape == Shape::Star) {
    *this = StencilOperator{};
    return false;
  }
  // One array per point (the layout measured fastest for the Chebyshev term: 0.091 s at 256^2 against 0.097 s with
  // the points of a row side by side), all in one staggered block (StaggeredArrays: separately allocated, the arrays
  // shared their cache sets, and the Chebyshev expansion at 256^2 took 52-55 ms instead of 40). The arrays are
  // copied into it, no longer moved: the set-up at 1024^2 took 536-552 ms before and 540-548 ms after.
  std::vector<std::vector<double>*> columns;  // per point; null: no coupling on this rank (zeros)
  for (const int sh : storedOrder(present, dim_, offAxis, corner)) {
    shifts_.push_back(shiftOf(sh));
    const auto it = byShift.find(sh);
    columns.push_back(it == byShift.end() ? nullptr : &it->second);
  }
  computeRuns();
  coefficients_ = StaggeredArrays(columns.size(), static_cast<std::size_t>(rows));
  for (std::size_t o = 0; o < columns.size(); ++o)
    if (columns[o] && !columns[o]->empty()) std::copy(columns[o]->begin(), columns[o]->end(), coefficients_[o]);
  byShift.clear();
  finishPoints(forSmoothing);
  return true;
}

void StencilOperator::finishPoints(bool forSmoothing) {
  for (int o = 1; o < points(); ++o) {
    if (shifts_[static_cast<std::size_t>(o)] == std::array<int, 3>{-1, 0, 0}) minusXPoint_ = o;
    if (shifts_[static_cast<std::size_t>(o)] == std::array<int, 3>{1, 0, 0}) plusXPoint_ = o;
  }
  if (forSmoothing) {
    const std::size_t rows = coefficients_.length();
    inverseDiagonal_.resize(rows);
    for (std::size_t q = 0; q < rows; ++q) inverseDiagonal_[q] = 1.0 / coefficients_[0][q];
  }
}

// Runs share their constants: along a uniform axis with constant Sigma every interior run holds the same ones, so
// the distinct sets are few (a few dozen in 3-D) and each run keeps an index into them. One set per run (12 points,
// 2 fields, 3 runs per line) held 576 B per line: 9 B per cell at 64^3, 14 B at 40^3.
void StencilOperator::storeRunConstants(const std::vector<double>& perRun, std::size_t M) {
  const std::size_t width = 2 * M;
  std::map<std::vector<std::uint64_t>, std::uint32_t> index;  // by the values' bits: NaN and -0 kept apart
  std::vector<std::uint64_t> key(width);
  runConstants_.clear();
  runConstantSet_.assign(runs_.size(), 0);
  for (std::size_t r = 0; r < runs_.size(); ++r) {
    const double* k = perRun.data() + width * r;
    for (std::size_t w = 0; w < width; ++w) key[w] = std::bit_cast<std::uint64_t>(k[w]);
    const auto [it, inserted] = index.emplace(key, static_cast<std::uint32_t>(index.size()));
    if (inserted) runConstants_.insert(runConstants_.end(), k, k + width);
    runConstantSet_[r] = it->second;
  }
}

double StencilOperator::value(int o, std::size_t run, PetscInt q) const {
  if (o < storedPoints()) return coefficients_[static_cast<std::size_t>(o)][static_cast<std::size_t>(q)];
  const std::size_t M = static_cast<std::size_t>(points() - storedPoints());
  return runConstants_[2 * (runConstantSet_[run] * M + static_cast<std::size_t>(o - storedPoints())) +
                       static_cast<std::size_t>((q - runs_[run].q) % 2)];
}

// The runs of consecutive owned rows that share their neighbour offsets: per line of cells, the cells closer than
// the reach to either end one by one, the cells between as one run. A point outside the ghosted block lies outside
// the box (no periodic axes), where its coefficient is 0: its offset drops that axis's part, so every load stays in
// the array. Computed once per build (per line in the kernels it cost 5-10 % of a 256^2 Chebyshev term).
void StencilOperator::computeRuns() {
  const int np = points();
  const PetscInt stride[3] = {dof_, dof_ * ghosted_.count[0], dof_ * ghosted_.count[0] * ghosted_.count[1]};
  const PetscInt n0 = owned_.count[0];
  const PetscInt lines = owned_.count[1] * owned_.count[2];
  const PetscInt values = n0 * dof_;
  runs_.clear();
  runOffsets_.clear();
  // Runs share their offsets (every interior run of a uniform block has the same ones): the distinct sets, and an
  // index per run (one set per run held 4 B per cell of a 3-D box at 64^3).
  std::map<std::vector<PetscInt>, std::uint32_t> sets;
  std::vector<PetscInt> offsets(static_cast<std::size_t>(np));
  for (PetscInt l = 0; l < lines; ++l) {
    const PetscInt j = owned_.start[1] + l % owned_.count[1], k = owned_.start[2] + l / owned_.count[1];
    const PetscInt gBase = dof_ * ghosted_.local(owned_.start[0], j, k);
    const PetscInt qBase = l * values;
    const auto addRun = [&](PetscInt i, PetscInt cells) {
      for (int o = 0; o < np; ++o) {
        const auto& sh = shifts_[static_cast<std::size_t>(o)];
        const PetscInt x = owned_.start[0] + i + sh[0];
        PetscInt d = x >= ghosted_.start[0] && x < ghosted_.start[0] + ghosted_.count[0] ? sh[0] * stride[0] : 0;
        if (j + sh[1] >= ghosted_.start[1] && j + sh[1] < ghosted_.start[1] + ghosted_.count[1]) d += sh[1] * stride[1];
        if (k + sh[2] >= ghosted_.start[2] && k + sh[2] < ghosted_.start[2] + ghosted_.count[2]) d += sh[2] * stride[2];
        offsets[static_cast<std::size_t>(o)] = d;
      }
      const auto [it, inserted] = sets.emplace(offsets, static_cast<std::uint32_t>(sets.size()));
      if (inserted) runOffsets_.insert(runOffsets_.end(), offsets.begin(), offsets.end());
      runs_.push_back({qBase + i * dof_, gBase + i * dof_, cells * dof_, it->second});
    };
    const PetscInt edge = std::min<PetscInt>(kReach, n0);
    for (PetscInt i = 0; i < edge; ++i) addRun(i, 1);
    if (n0 > 2 * kReach) addRun(edge, n0 - 2 * kReach);
    for (PetscInt i = std::max<PetscInt>(edge, n0 - kReach); i < n0; ++i) addRun(i, 1);
  }
}

// Calls span(q, g, n, off) for every run (computeRuns): q its first row's position in the owned layout, g in the
// ghosted one, n its rows, off the N ghosted-layout offsets of the stencil points. Backward: the runs last first
// (the kernel walks each run downwards).
template <int N, class Span>
void StencilOperator::forEachRun(bool backward, Span&& span) const {
  const std::size_t count = runs_.size();
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t q = backward ? count - 1 - r : r;
    const Run& run = runs_[q];
    span(run.q, run.g, run.n, runOffsets_.data() + run.offsets * N);
  }
}

// The point counts storeCoefficients pads to: stars of 1-3 dimensions, the 2-D box, the 3-D box without and with
// its corners.
template <class F>
void StencilOperator::dispatch(F&& f) const {
  switch (points()) {
    case 3: return f.template operator()<3>();
    case 5: return f.template operator()<5>();
    case 7: return f.template operator()<7>();
    case 9: return f.template operator()<9>();
    case 19: return f.template operator()<19>();
    default: return f.template operator()<27>();
  }
}

std::array<const double*, StencilOperator::kMaxPoints> StencilOperator::pointArrays() const {
  std::array<const double*, kMaxPoints> c{};
  for (std::size_t o = 0; o < coefficients_.arrays(); ++o) c[o] = coefficients_[o];
  return c;
}

namespace {
using kernels::chebyshevRun;
using kernels::fmaKernels;
using kernels::residualRun;

// All runs of one kernel call. Run: StencilOperator::Run (its members q, g, n).
template <int N, class Run>
[[gnu::always_inline]] inline void residualRuns(const Run* runs, std::size_t count, const PetscInt* runOffsets,
                                                const double* const* c, const double* x, const double* b, double* r) {
  for (std::size_t k = 0; k < count; ++k)
    residualRun<N>(c, runOffsets + runs[k].offsets * N, runs[k].q, x + runs[k].g, b + runs[k].q, r + runs[k].q, runs[k].n,
                   std::make_index_sequence<N>{});
}

template <int NS, int NC, class Run>
[[gnu::always_inline]] inline double compressedChebyshevRuns(const Run* runs, std::size_t count,
                                                             const PetscInt* runOffsets, const double* k,
                                                             const std::uint32_t* set, const double* const* c,
                                                             const double* x, double* t, double* s, double scale,
                                                             double weight) {
  double largest = 0.0;
  for (std::size_t r = 0; r < count; ++r)
    largest = kernels::compressedChebyshevRun<NS, NC>(c, runOffsets + runs[r].offsets * (NS + NC), k + 2 * NC * set[r], runs[r].q,
                                                      x + runs[r].g, t + runs[r].q, s + runs[r].q, runs[r].n, scale,
                                                      weight, std::bit_cast<std::int64_t>(largest));
  return largest;
}

template <int NS, int NC, class Run>
[[gnu::always_inline]] inline void compressedResidualRuns(const Run* runs, std::size_t count,
                                                          const PetscInt* runOffsets, const double* k,
                                                          const std::uint32_t* set, const double* const* c,
                                                          const double* x, const double* b, double* r) {
  for (std::size_t q = 0; q < count; ++q)
    kernels::compressedResidualRun<NS, NC>(c, runOffsets + runs[q].offsets * (NS + NC), k + 2 * NC * set[q], runs[q].q,
                                           x + runs[q].g,
                                           b + runs[q].q, r + runs[q].q, runs[q].n);
}

template <int N, class Run>
[[gnu::always_inline]] inline double chebyshevRuns(const Run* runs, std::size_t count, const PetscInt* runOffsets,
                                                   const double* const* c, const double* x, double* t, double* s,
                                                   double scale, double weight) {
  double largest = 0.0;
  for (std::size_t k = 0; k < count; ++k)
    largest = chebyshevRun<N>(c, runOffsets + runs[k].offsets * N, runs[k].q, x + runs[k].g, t + runs[k].q, s + runs[k].q,
                              runs[k].n, scale, weight, std::bit_cast<std::int64_t>(largest),
                              std::make_index_sequence<N>{});
  return largest;
}

#if FPDP_FMA_KERNELS
// The copy compiled for AVX2 + FMA (the same source: the fused operations become vector instructions).
template <int N, class Run>
FPDP_FMA_TARGET void residualRunsFma(const Run* runs, std::size_t count, const PetscInt* offsets,
                                     const double* const* c, const double* x, const double* b, double* r) {
  residualRuns<N>(runs, count, offsets, c, x, b, r);
}
template <int NS, int NC, class Run>
FPDP_FMA_TARGET double compressedChebyshevRunsFma(const Run* runs, std::size_t count, const PetscInt* offsets,
                                                  const double* k, const std::uint32_t* set, const double* const* c,
                                                  const double* x, double* t, double* s, double scale, double weight) {
  return compressedChebyshevRuns<NS, NC>(runs, count, offsets, k, set, c, x, t, s, scale, weight);
}
template <int NS, int NC, class Run>
FPDP_FMA_TARGET void compressedResidualRunsFma(const Run* runs, std::size_t count, const PetscInt* offsets,
                                               const double* k, const std::uint32_t* set, const double* const* c,
                                               const double* x, const double* b, double* r) {
  compressedResidualRuns<NS, NC>(runs, count, offsets, k, set, c, x, b, r);
}
template <int N, class Run>
FPDP_FMA_TARGET double chebyshevRunsFma(const Run* runs, std::size_t count, const PetscInt* offsets,
                                        const double* const* c, const double* x, double* t, double* s, double scale,
                                        double weight) {
  return chebyshevRuns<N>(runs, count, offsets, c, x, t, s, scale, weight);
}
/// Whether this processor has AVX2 + FMA (asked once).
bool fmaAvailable() {
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return available;
}
#else
bool fmaAvailable() { return false; }
#endif
std::atomic<bool> vectorKernelsWanted{true};
}  // namespace

bool kernels::fmaKernels() { return vectorKernelsWanted.load(std::memory_order_relaxed) && fmaAvailable(); }

bool StencilOperator::vectorKernels() { return fmaKernels(); }
void StencilOperator::useVectorKernels(bool enabled) { vectorKernelsWanted.store(enabled); }

template <int N>
void StencilOperator::residualKernel(const double* x, const double* b, double* r) const {
  const auto points = pointArrays();
  const double* const* c = points.data();
#if FPDP_FMA_KERNELS
  if (fmaKernels()) return residualRunsFma<N>(runs_.data(), runs_.size(), runOffsets_.data(), c, x, b, r);
#endif
  residualRuns<N>(runs_.data(), runs_.size(), runOffsets_.data(), c, x, b, r);
}

// The compressed boxes: 2-D (the star and 4 diagonals), 3-D with the 12 edges, and with the 8 corners too.
template <class F>
void StencilOperator::dispatchCompressed(F&& f) const {
  if (dim_ == 2) return f.template operator()<5, 4>();
  if (points() == 19) return f.template operator()<7, 12>();
  return f.template operator()<7, 20>();
}

template <int NS, int NC>
double StencilOperator::compressedChebyshevKernel(const double* x, double* t, double* s, double scale,
                                                  double weight) const {
  const auto points = pointArrays();
  const double* const* c = points.data();
  const double* k = runConstants_.data();
  const std::uint32_t* set = runConstantSet_.data();
#if FPDP_FMA_KERNELS
  if (fmaKernels())
    return compressedChebyshevRunsFma<NS, NC>(runs_.data(), runs_.size(), runOffsets_.data(), k, set, c, x, t, s,
                                              scale, weight);
#endif
  return compressedChebyshevRuns<NS, NC>(runs_.data(), runs_.size(), runOffsets_.data(), k, set, c, x, t, s, scale,
                                         weight);
}

template <int NS, int NC>
void StencilOperator::compressedResidualKernel(const double* x, const double* b, double* r) const {
  const auto points = pointArrays();
  const double* const* c = points.data();
  const double* k = runConstants_.data();
  const std::uint32_t* set = runConstantSet_.data();
#if FPDP_FMA_KERNELS
  if (fmaKernels())
    return compressedResidualRunsFma<NS, NC>(runs_.data(), runs_.size(), runOffsets_.data(), k, set, c, x, b, r);
#endif
  compressedResidualRuns<NS, NC>(runs_.data(), runs_.size(), runOffsets_.data(), k, set, c, x, b, r);
}

template <int N>
double StencilOperator::chebyshevKernel(const double* x, double* t, double* s, double scale, double weight) const {
  const auto points = pointArrays();
  const double* const* c = points.data();
#if FPDP_FMA_KERNELS
  if (fmaKernels())
    return chebyshevRunsFma<N>(runs_.data(), runs_.size(), runOffsets_.data(), c, x, t, s, scale, weight);
#endif
  return chebyshevRuns<N>(runs_.data(), runs_.size(), runOffsets_.data(), c, x, t, s, scale, weight);
}

template <int N>
void StencilOperator::sweepKernel(double* x, const double* b, bool backward) const {
  const auto c = pointArrays();
  const double* inv = inverseDiagonal_.data();
  // The point on the sweep's own line behind the current row (-x forward, +x backward) holds the value the previous
  // cell of this field has just written. Everything else, its coefficient scaled by the inverse diagonal included,
  // is computed before that value arrives, so that one multiply-add waits for it. In stencil order it came second,
  // and the sweep ran at the latency of the whole sum (docs/scaling.md §2).
  int order[N];
  {
    const int dependent = backward ? plusXPoint_ : minusXPoint_;
    int m = 0;
    for (int o = 1; o < N; ++o)
      if (o != dependent) order[m++] = o;
    order[m] = dependent;
  }
  forEachRun<N>(backward, [&](PetscInt q0, PetscInt g0, PetscInt n, const PetscInt* offsets) {
    // Written out rather than through RunView: measured 3 % faster per multigrid step at 1024^2.
    const double* cq[N];
    PetscInt off[N];
    for (int o = 0; o < N - 1; ++o) cq[o] = c[order[o]] + q0, off[o] = offsets[order[o]];
    double* xc = x + g0;
    const double* bq = b + q0;
    const double* iq = inv + q0;
    for (PetscInt w = 0; w < n; ++w) {
      const PetscInt v = backward ? n - 1 - w : w;
      double acc = bq[v];
      for (int o = 0; o < N - 2; ++o) acc -= cq[o][v] * xc[v + off[o]];
      const double inv = iq[v];
      xc[v] = acc * inv - (cq[N - 2][v] * inv) * xc[v + off[N - 2]];
    }
  });
}

void StencilOperator::residual(const double* x, const double* b, double* r) const {
  if (compressed())
    dispatchCompressed([&]<int NS, int NC>() { compressedResidualKernel<NS, NC>(x, b, r); });
  else
    dispatch([&]<int N>() { residualKernel<N>(x, b, r); });
}

double StencilOperator::chebyshevStep(const double* x, double* t, double* s, double scale, double weight) const {
  double largest = 0.0;
  if (compressed())
    dispatchCompressed([&]<int NS, int NC>() { largest = compressedChebyshevKernel<NS, NC>(x, t, s, scale, weight); });
  else
    dispatch([&]<int N>() { largest = chebyshevKernel<N>(x, t, s, scale, weight); });
  return largest;
}

void StencilOperator::symmetricGaussSeidel(double* x, const double* b, bool zeroGuess) const {
  gaussSeidelSweep(x, b, /*backward=*/false, zeroGuess);
  gaussSeidelSweep(x, b, /*backward=*/true, false);
}

void StencilOperator::gaussSeidelSweep(double* x, const double* b, bool backward, bool zeroGuess) const {
  if (inverseDiagonal_.empty())
    throw std::logic_error("StencilOperator: a Gauss-Seidel sweep needs the operator built forSmoothing");
  if (zeroGuess) std::memset(x, 0, sizeof(double) * static_cast<std::size_t>(ghosted_.size() * dof_));
  dispatch([&]<int N>() { sweepKernel<N>(x, b, backward); });
}

void StencilOperator::copyOwned(const double* ghosted, double* owned) const {
  const PetscInt values = owned_.count[0] * dof_;
  PetscInt q = 0;
  for (PetscInt k = owned_.start[2]; k < owned_.start[2] + owned_.count[2]; ++k)
    for (PetscInt j = owned_.start[1]; j < owned_.start[1] + owned_.count[1]; ++j, q += values) {
      std::memcpy(owned + q, ghosted + dof_ * ghosted_.local(owned_.start[0], j, k), sizeof(double) * static_cast<std::size_t>(values));
    }
}

namespace {
/// values (one rank's owned part of a global vector of dm) in dm's ghosted layout: on one rank without periodic
/// axes (ghosted = owned) the values themselves, no copy; else a copy with the ghosts exchanged.
struct GhostedValues {
  std::vector<double> storage;
  const double* data = nullptr;
};
GhostedValues ghostedValues(DM dm, const double* values, bool ghostedIsOwned) {
  GhostedValues out;
  if (ghostedIsOwned) {
    out.data = values;
    return out;
  }
  meshes::VecHandle global, local;
  FPDP_PETSC(DMCreateGlobalVector(dm, global.out()));
  FPDP_PETSC(DMCreateLocalVector(dm, local.out()));
  PetscScalar* g;
  PetscInt n;
  FPDP_PETSC(VecGetLocalSize(global, &n));
  FPDP_PETSC(VecGetArray(global, &g));
  std::copy(values, values + n, g);
  FPDP_PETSC(VecRestoreArray(global, &g));
  FPDP_PETSC(DMGlobalToLocalBegin(dm, global, INSERT_VALUES, local));
  FPDP_PETSC(DMGlobalToLocalEnd(dm, global, INSERT_VALUES, local));
  out.storage = meshes::localValues(local);
  out.data = out.storage.data();
  return out;
}
}  // namespace

// The points in the order of their columns: by their offset in the ghosted layout (on one rank the column order).
std::vector<int> StencilOperator::pointsByColumn() const {
  const PetscInt stride[3] = {dof_, dof_ * ghosted_.count[0], dof_ * ghosted_.count[0] * ghosted_.count[1]};
  std::vector<int> order(static_cast<std::size_t>(points()));
  for (int o = 0; o < points(); ++o) order[static_cast<std::size_t>(o)] = o;
  const auto offset = [&](int o) {
    const auto& sh = shifts_[static_cast<std::size_t>(o)];
    return sh[0] * stride[0] + sh[1] * stride[1] + sh[2] * stride[2];
  };
  std::sort(order.begin(), order.end(), [&](int a, int b) { return offset(a) < offset(b); });
  return order;
}

// Calls f(r, g, o, n, run) for every owned row r (owned layout), its ghosted-layout position g, every point o in column
// order and the ghosted-layout position n of the point's cell, skipping points outside the ghosted block (outside
// the box, where the coefficient is 0).
template <class F>
void StencilOperator::forEachCoupling(F&& f) const {
  // Through the runs (computeRuns): the same calls in the same order as a loop over the cells that tests each point
  // against the ghosted block, whose index arithmetic took half of the 256^2 run's 4.7 ms of norms and defect.
  // A point outside the ghosted block has its offset dropped to 0 there (only the diagonal has 0 otherwise).
  const std::vector<int> order = pointsByColumn();
  const std::size_t np = static_cast<std::size_t>(points());
  for (std::size_t q = 0; q < runs_.size(); ++q) {
    const Run& run = runs_[q];
    const PetscInt* off = runOffsets_.data() + runs_[q].offsets * static_cast<std::size_t>(np);
    for (PetscInt v = 0; v < run.n; ++v)
      for (const int o : order) {
        if (o != 0 && off[o] == 0) continue;
        f(run.q + v, run.g + v, o, run.g + v + off[o], q);
      }
  }
}

std::array<double, 2> StencilOperator::norms(DM dm) const {
  MPI_Comm comm;
  FPDP_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(dm), &comm));
  const PetscInt rows = owned_.size() * dof_;
  // Row sums in column order; column sums accumulated row after row (MatNorm_SeqAIJ's order), in the ghosted
  // layout, then added into the owners (DMLocalToGlobal with ADD_VALUES) on several ranks.
  std::vector<double> rowSum(static_cast<std::size_t>(rows), 0.0);
  std::vector<double> columnSum(static_cast<std::size_t>(ghosted_.size() * dof_), 0.0);
  forEachCoupling([&](PetscInt r, PetscInt, int o, PetscInt n, std::size_t run) {
    const double v = std::fabs(value(o, run, r));
    rowSum[static_cast<std::size_t>(r)] += v;
    columnSum[static_cast<std::size_t>(n)] += v;
  });
  double local[2] = {0.0, 0.0};
  for (const double v : rowSum) local[0] = std::max(local[0], v);
  if (ghostedIsOwned_) {
    for (const double v : columnSum) local[1] = std::max(local[1], v);
  } else {
    meshes::VecHandle l, g;
    FPDP_PETSC(DMCreateLocalVector(dm, l.out()));
    FPDP_PETSC(DMCreateGlobalVector(dm, g.out()));
    PetscScalar* a;
    FPDP_PETSC(VecGetArray(l, &a));
    std::copy(columnSum.begin(), columnSum.end(), a);
    FPDP_PETSC(VecRestoreArray(l, &a));
    FPDP_PETSC(VecSet(g, 0.0));
    FPDP_PETSC(DMLocalToGlobalBegin(dm, l, ADD_VALUES, g));
    FPDP_PETSC(DMLocalToGlobalEnd(dm, l, ADD_VALUES, g));
    PetscReal m;
    FPDP_PETSC(VecNorm(g, NORM_INFINITY, &m));  // the global maximum already
    local[1] = m;
  }
  double global[2];
  FPDP_PETSC(MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, comm));
  return {global[0], global[1]};
}

StencilOperator::Signs StencilOperator::signs(DM dm) const {
  MPI_Comm comm;
  FPDP_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(dm), &comm));
  const PetscInt rows = owned_.size() * dof_;
  std::vector<double> rowSum(static_cast<std::size_t>(rows), 0.0);
  // local: {a negative coupling off the diagonal (1) or a non-finite or positive diagonal (1), largest -a_ii,
  // largest row sum}
  double local[3] = {0.0, 0.0, -INFINITY};
  forEachCoupling([&](PetscInt r, PetscInt, int o, PetscInt, std::size_t run) {
    const double v = value(o, run, r);
    if (!std::isfinite(v)) local[0] = 1.0;
    if (o == 0) {
      if (v > 0.0) local[0] = 1.0;
      local[1] = std::max(local[1], -v);
    } else if (v < 0.0) {
      local[0] = 1.0;
    }
    rowSum[static_cast<std::size_t>(r)] += v;
  });
  for (const double v : rowSum) local[2] = std::max(local[2], v);
  double global[3];
  FPDP_PETSC(MPI_Allreduce(local, global, 3, MPI_DOUBLE, MPI_MAX, comm));
  Signs s;
  s.metzler = global[0] == 0.0;
  s.largestOutflow = global[0] == 0.0 ? global[1] : INFINITY;
  s.largestRowSum = global[2];
  return s;
}

double StencilOperator::detailedBalanceDefect(DM dm, Vec w) const {
  MPI_Comm comm;
  FPDP_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(dm), &comm));
  const PetscScalar* wa;
  FPDP_PETSC(VecGetArrayRead(w, &wa));
  struct Restore {
    Vec v;
    const PetscScalar** a;
    ~Restore() { VecRestoreArrayRead(v, a); }
  } restore{w, &wa};
  const GhostedValues wGhosted = ghostedValues(dm, wa, ghostedIsOwned_);
  const double* wg = wGhosted.data;
  // Each point's coefficients in the ghosted layout: a_ji for a neighbour j on another rank (on one rank the stored
  // arrays themselves).
  std::vector<GhostedValues> cGhosted;
  std::vector<const double*> cg;
  for (std::size_t o = 0; o < coefficients_.arrays(); ++o) {
    cGhosted.push_back(ghostedValues(dm, coefficients_[o], ghostedIsOwned_));
    cg.push_back(cGhosted.back().data);
  }
  // The point pointing back: -shift.
  std::vector<int> opposite(static_cast<std::size_t>(points()), -1);
  for (int o = 0; o < points(); ++o)
    for (int b = 0; b < points(); ++b)
      if (shifts_[static_cast<std::size_t>(b)] == std::array<int, 3>{-shifts_[static_cast<std::size_t>(o)][0],
                                                                      -shifts_[static_cast<std::size_t>(o)][1],
                                                                      -shifts_[static_cast<std::size_t>(o)][2]})
        opposite[static_cast<std::size_t>(o)] = b;
  double worst = 0.0;
  if (compressed()) throw std::logic_error("StencilOperator: the detailed-balance defect of a compressed box stencil");
  forEachCoupling([&](PetscInt, PetscInt g, int o, PetscInt n, std::size_t) {
    if (o == 0) return;  // the diagonal
    const std::size_t gi = static_cast<std::size_t>(g), ni = static_cast<std::size_t>(n);
    const double x = (cg[static_cast<std::size_t>(o)][gi] * (1.0 / wg[gi])) * wg[ni];
    const double y = (cg[static_cast<std::size_t>(opposite[static_cast<std::size_t>(o)])][ni] * (1.0 / wg[ni])) * wg[gi];
    if (!std::isfinite(x) || !std::isfinite(y)) {
      worst = INFINITY;
      return;
    }
    const double scale = std::max(std::fabs(x), std::fabs(y));
    if (scale > 0.0) worst = std::max(worst, std::fabs(x - y) / scale);
  });
  double global = 0.0;
  FPDP_PETSC(MPI_Allreduce(&worst, &global, 1, MPI_DOUBLE, MPI_MAX, comm));
  return global;
}

Vec ghostedInput(DM dm, Vec x, Vec ghosted) {
  if (!ghosted) return x;
  FPDP_PETSC(DMGlobalToLocalBegin(dm, x, INSERT_VALUES, ghosted));
  FPDP_PETSC(DMGlobalToLocalEnd(dm, x, INSERT_VALUES, ghosted));
  return ghosted;
}

PetscErrorCode residual(const StencilOperator& op, DM dm, Vec x, Vec b, Vec r, Vec ghosted) {
  PetscFunctionBeginUser;
  Vec xv;
  try {
    xv = ghostedInput(dm, x, ghosted);
  } catch (const std::exception& e) {
    SETERRQ(PetscObjectComm(reinterpret_cast<PetscObject>(x)), PETSC_ERR_LIB, "%s", e.what());
  }
  const PetscScalar *xx, *bb;
  PetscScalar* rr;
  PetscCall(VecGetArrayRead(xv, &xx));
  PetscCall(VecGetArrayRead(b, &bb));
  PetscCall(VecGetArray(r, &rr));
  op.residual(xx, bb, rr);
  PetscCall(VecRestoreArray(r, &rr));
  PetscCall(VecRestoreArrayRead(b, &bb));
  PetscCall(VecRestoreArrayRead(xv, &xx));
  PetscFunctionReturn(0);
}

}  // namespace fpdp::solver
