#include "solver/propagation/ClenshawWavefront.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "solver/discretisation/StencilKernels.hpp"

namespace fpdp::solver {

namespace {
/// What one pass reads besides its vectors: the stencil in the ghosted layout, the block's geometry and the terms'
/// regions and weights.
template <int N>
struct Pass {
  const double* c[N];
  std::array<int, 3> shift[N];
  PetscInt count[3];   // the ghosted block's extents
  PetscInt stride[3];  // rows per step along each axis
  int slow, middle;    // the wavefront's axis and the axis of the lines within a slab (x is the run axis)
  int terms;
  const std::array<PetscInt, 3>* lo;  // per term: its region (local coordinates, hi exclusive)
  const std::array<PetscInt, 3>* hi;
  const double* weights;  // per term: c_k
  double s4;
};

// The points' offsets from cell pos (ghosted layout): a neighbour outside the ghosted block lies outside the box (a
// wall), where the coefficient is 0; its offset drops that axis's part so that every load stays in the array, as in
// StencilOperator::computeRuns.
template <int N>
[[gnu::always_inline]] inline void offsetsAt(const Pass<N>& p, const PetscInt pos[3], PetscInt off[N]) {
  for (int o = 0; o < N; ++o) {
    PetscInt d = 0;
    for (int a = 0; a < 3; ++a) {
      const PetscInt n = pos[a] + p.shift[o][a];
      if (n >= 0 && n < p.count[a]) d += p.shift[o][a] * p.stride[a];
    }
    off[o] = d;
  }
}

// One term on the cells [x0, x1) of the line through pos (pos[0] ignored): the cells at the block's x ends one by
// one (their -x or +x neighbour may lie beyond a wall), the cells between as one run.
template <int N>
[[gnu::always_inline]] inline void termOnLine(const Pass<N>& p, PetscInt pos[3], PetscInt x0, PetscInt x1,
                                              const double* x, double* t, const double* u, double weight) {
  PetscInt off[N];
  const auto segment = [&](PetscInt a, PetscInt b) {
    if (a >= b) return;
    pos[0] = a;
    offsetsAt<N>(p, pos, off);
    const PetscInt g = p.stride[0] * pos[0] + p.stride[1] * pos[1] + p.stride[2] * pos[2];
    kernels::clenshawRun<N>(p.c, off, g, x + g, t + g, u + g, (b - a) * p.stride[0], p.s4, weight,
                            std::make_index_sequence<N>{});
  };
  const PetscInt inner0 = std::max<PetscInt>(x0, 1), inner1 = std::min<PetscInt>(x1, p.count[0] - 1);
  if (inner0 >= inner1) {  // no cell away from both ends: every cell alone
    for (PetscInt i = x0; i < x1; ++i) segment(i, i + 1);
    return;
  }
  if (x0 < inner0) segment(x0, inner0);
  segment(inner0, inner1);
  if (inner1 < x1) segment(inner1, x1);
}

// The wavefront: at step J, term m works on slab J - m (terms in order, so term m - 1's slab J - m + 1 is done).
// Even terms read x and write t, odd terms the other way round (the recurrence's two vectors).
template <int N>
[[gnu::always_inline]] inline void wavefront(const Pass<N>& p, double* x, double* t, const double* u) {
  const int s = p.slow, mid = p.middle;
  const PetscInt first = p.lo[0][s], last = p.hi[p.terms - 1][s] - 1 + (p.terms - 1);
  PetscInt pos[3];
  for (PetscInt J = first; J <= last; ++J)
    for (int m = 0; m < p.terms; ++m) {
      const PetscInt slab = J - m;
      if (slab < p.lo[m][s] || slab >= p.hi[m][s]) continue;
      const bool even = m % 2 == 0;
      pos[s] = slab;
      for (PetscInt y = p.lo[m][mid]; y < p.hi[m][mid]; ++y) {
        pos[mid] = y;
        termOnLine<N>(p, pos, p.lo[m][0], p.hi[m][0], even ? x : t, even ? t : x, u, p.weights[m]);
      }
    }
}

#if FPDP_FMA_KERNELS
template <int N>
FPDP_FMA_TARGET void wavefrontFma(const Pass<N>& p, double* x, double* t, const double* u) {
  wavefront<N>(p, x, t, u);
}
#endif
template <int N>
void wavefrontPortable(const Pass<N>& p, double* x, double* t, const double* u) {
  wavefront<N>(p, x, t, u);
}
}  // namespace

ClenshawWavefront::ClenshawWavefront(const StencilOperator& op, DM dm, int depth) {
  if (op.empty()) throw std::invalid_argument("ClenshawWavefront: the stencil is empty");
  if (depth < 1 || depth > kMaxDepth) throw std::invalid_argument("ClenshawWavefront: depth must be 1 .. 64");
  dim_ = op.dimension();
  points_ = op.points();
  dof_ = op.fields();
  owned_ = op.owned();
  for (int o = 0; o < points_; ++o) shifts_[static_cast<std::size_t>(o)] = op.shift(o);
  MPI_Comm comm;
  FPDP_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(dm), &comm));
  PetscMPIInt size = 1;
  FPDP_PETSC(MPI_Comm_size(comm, &size));
  depth_ = depth;
  if (size == 1) {  // no ghosts (the stencil has no periodic axes): the global arrays are the ghosted ones
    ghosted_ = owned_;
    for (int o = 0; o < points_; ++o) coefficients_[static_cast<std::size_t>(o)] = op.coefficients(o).data();
    return;
  }
  // A DMDA's ghost layer may not be wider than any rank's owned extent.
  PetscInt smallest = depth;
  for (int a = 0; a < dim_; ++a) smallest = std::min(smallest, owned_.count[static_cast<std::size_t>(a)]);
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, &smallest, 1, MPIU_INT, MPI_MIN, comm));
  depth_ = static_cast<int>(std::max<PetscInt>(1, smallest));
  PetscInt M, N, P, m, n, p;
  FPDP_PETSC(DMDAGetInfo(dm, nullptr, &M, &N, &P, &m, &n, &p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr));
  const PetscInt *lx, *ly, *lz;
  FPDP_PETSC(DMDAGetOwnershipRanges(dm, &lx, &ly, &lz));
  FPDP_PETSC(DMDACreate(comm, deep_.out()));
  FPDP_PETSC(DMSetDimension(deep_, dim_));
  FPDP_PETSC(DMDASetSizes(deep_, M, N, P));
  FPDP_PETSC(DMDASetNumProcs(deep_, m, n, p));
  FPDP_PETSC(DMDASetOwnershipRanges(deep_, lx, ly, lz));
  FPDP_PETSC(DMDASetDof(deep_, dof_));
  FPDP_PETSC(DMDASetStencilType(deep_, DMDA_STENCIL_BOX));  // the terms' dependencies reach the diagonal cells
  FPDP_PETSC(DMDASetStencilWidth(deep_, depth_));
  FPDP_PETSC(DMDASetBoundaryType(deep_, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE));
  FPDP_PETSC(DMSetUp(deep_));
  ghosted_ = meshes::dmdaBlock(deep_, true);
  FPDP_PETSC(DMCreateLocalVector(deep_, x_.out()));
  FPDP_PETSC(DMCreateLocalVector(deep_, t_.out()));
  FPDP_PETSC(DMCreateLocalVector(deep_, u_.out()));
  // The neighbours' coefficients, once: each point's array through a global vector of the deep DMDA.
  meshes::VecHandle global;
  FPDP_PETSC(DMCreateGlobalVector(deep_, global.out()));
  PetscInt ghostedValues = 0;
  FPDP_PETSC(VecGetLocalSize(x_, &ghostedValues));
  ghostedCoefficients_ = StaggeredArrays(static_cast<std::size_t>(points_), static_cast<std::size_t>(ghostedValues));
  for (int o = 0; o < points_; ++o) {
    PetscScalar* g;
    FPDP_PETSC(VecGetArray(global, &g));
    std::copy(op.coefficients(o).begin(), op.coefficients(o).end(), g);
    FPDP_PETSC(VecRestoreArray(global, &g));
    FPDP_PETSC(DMGlobalToLocalBegin(deep_, global, INSERT_VALUES, x_));
    FPDP_PETSC(DMGlobalToLocalEnd(deep_, global, INSERT_VALUES, x_));
    meshes::copyLocalValues(x_, ghostedCoefficients_[static_cast<std::size_t>(o)]);
    coefficients_[static_cast<std::size_t>(o)] = ghostedCoefficients_[static_cast<std::size_t>(o)];
  }
}

ClenshawWavefront::~ClenshawWavefront() = default;

ClenshawWavefront::Box ClenshawWavefront::region(int grow) const {
  Box b;
  for (std::size_t a = 0; a < 3; ++a) {
    const PetscInt g = static_cast<int>(a) < dim_ ? grow : 0;
    const PetscInt lo = owned_.start[a] - g, hi = owned_.start[a] + owned_.count[a] + g;
    b.lo[a] = std::max(lo, ghosted_.start[a]) - ghosted_.start[a];
    b.hi[a] = std::min(hi, ghosted_.start[a] + ghosted_.count[a]) - ghosted_.start[a];
  }
  return b;
}

template <int N>
void ClenshawWavefront::passKernel(double* x, double* t, const double* u, const double* weights, int terms,
                                   double s4) const {
  Pass<N> p;
  for (int o = 0; o < N; ++o) {
    p.c[o] = coefficients_[static_cast<std::size_t>(o)];
    p.shift[o] = shifts_[static_cast<std::size_t>(o)];
  }
  for (std::size_t a = 0; a < 3; ++a) p.count[a] = ghosted_.count[a];
  p.stride[0] = dof_;
  p.stride[1] = dof_ * ghosted_.count[0];
  p.stride[2] = dof_ * ghosted_.count[0] * ghosted_.count[1];
  // The wavefront runs along the slowest axis with more than one cell per line (y in 1-D and 2-D: in 1-D a single
  // slab, so the terms run one after the other).
  p.slow = dim_ == 3 ? 2 : 1;
  p.middle = dim_ == 3 ? 1 : 2;
  p.terms = terms;
  std::array<std::array<PetscInt, 3>, kMaxDepth> lo, hi;
  for (int m = 0; m < terms; ++m) {
    const Box b = region(terms - 1 - m);  // term m: the owned block grown by the terms still to come
    lo[static_cast<std::size_t>(m)] = b.lo;
    hi[static_cast<std::size_t>(m)] = b.hi;
  }
  p.lo = lo.data();
  p.hi = hi.data();
  p.weights = weights;
  p.s4 = s4;
#if FPDP_FMA_KERNELS
  if (kernels::fmaKernels()) return wavefrontFma<N>(p, x, t, u);
#endif
  wavefrontPortable<N>(p, x, t, u);
}

void ClenshawWavefront::pass(double* x, double* t, const double* u, const double* weights, int terms,
                             double s4) const {
  if (dim_ == 1) passKernel<3>(x, t, u, weights, terms, s4);
  else if (dim_ == 2) passKernel<5>(x, t, u, weights, terms, s4);
  else passKernel<7>(x, t, u, weights, terms, s4);
}

void ClenshawWavefront::run(Vec u, const std::vector<double>& a, double s4, Vec b1, Vec b2) {
  if (a.size() < 2) throw std::invalid_argument("ClenshawWavefront::run: at least the coefficients a_0 and a_1");
  const std::size_t K = a.size() - 1;
  // Term K - 1 - k of the recurrence (k = K - 1 .. 1) writes b_k into the vector that held b_(K+1) when it is even,
  // else into the one that held b_K: b_1 ends in the first when K is even.
  const bool kEven = K % 2 == 0;
  const std::size_t rows = static_cast<std::size_t>(ghosted_.size() * dof_);
  const PetscScalar* uu;
  PetscScalar *first, *second;  // the storage of b_(K+1) and of b_K
  Vec firstVec = nullptr, secondVec = nullptr;
  if (!deep_.get()) {  // one rank: the caller's vectors themselves
    firstVec = kEven ? b1 : b2;
    secondVec = kEven ? b2 : b1;
    FPDP_PETSC(VecGetArrayRead(u, &uu));
  } else {
    FPDP_PETSC(DMGlobalToLocalBegin(deep_, u, INSERT_VALUES, u_));
    FPDP_PETSC(DMGlobalToLocalEnd(deep_, u, INSERT_VALUES, u_));
    firstVec = t_;
    secondVec = x_;
    FPDP_PETSC(VecGetArrayRead(u_, &uu));
  }
  FPDP_PETSC(VecGetArray(firstVec, &first));
  FPDP_PETSC(VecGetArray(secondVec, &second));
  // b_(K+1) = 0 and b_K = 2 a_K u on the whole ghosted block (on several ranks the ghosts are computed from u's, so
  // the first pass needs no exchange).
  const double cK = 2.0 * a[K];
  for (std::size_t i = 0; i < rows; ++i) {
    first[i] = 0.0;
    second[i] = uu[i] * cK;
  }
  double* x = second;  // b_(k+1)
  double* t = first;   // b_(k+2)
  std::size_t k = K - 1;
  bool exchange = false;
  while (k >= 1) {
    const int terms = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(depth_), k));
    weights_.resize(static_cast<std::size_t>(terms));
    for (int m = 0; m < terms; ++m) weights_[static_cast<std::size_t>(m)] = 2.0 * a[k - static_cast<std::size_t>(m)];
    if (exchange) {  // refresh both vectors' ghost layers (several ranks)
      const bool swapped = x != second;  // before VecRestoreArray, which nulls the pointer
      FPDP_PETSC(VecRestoreArray(secondVec, &second));
      FPDP_PETSC(VecRestoreArray(firstVec, &first));
      FPDP_PETSC(DMLocalToLocalBegin(deep_, x_, INSERT_VALUES, x_));
      FPDP_PETSC(DMLocalToLocalEnd(deep_, x_, INSERT_VALUES, x_));
      FPDP_PETSC(DMLocalToLocalBegin(deep_, t_, INSERT_VALUES, t_));
      FPDP_PETSC(DMLocalToLocalEnd(deep_, t_, INSERT_VALUES, t_));
      FPDP_PETSC(VecGetArray(firstVec, &first));
      FPDP_PETSC(VecGetArray(secondVec, &second));
      x = swapped ? first : second;
      t = swapped ? second : first;
    }
    pass(x, t, uu, weights_.data(), terms, s4);
    if (terms % 2 == 1) std::swap(x, t);  // the last term wrote into t: it is the new b_(k+1)
    k -= static_cast<std::size_t>(terms);
    exchange = deep_.get() != nullptr;
  }
  FPDP_PETSC(VecRestoreArray(secondVec, &second));
  FPDP_PETSC(VecRestoreArray(firstVec, &first));
  FPDP_PETSC(VecRestoreArrayRead(deep_ ? u_.get() : u, &uu));
  if (!deep_.get()) return;
  // Several ranks: the owned values into b1 and b2.
  const auto copyOwned = [&](Vec from, Vec to) {
    const PetscScalar* g;
    PetscScalar* o;
    FPDP_PETSC(VecGetArrayRead(from, &g));
    FPDP_PETSC(VecGetArray(to, &o));
    const PetscInt values = owned_.count[0] * dof_;
    PetscInt q = 0;
    for (PetscInt kk = owned_.start[2]; kk < owned_.start[2] + owned_.count[2]; ++kk)
      for (PetscInt j = owned_.start[1]; j < owned_.start[1] + owned_.count[1]; ++j, q += values)
        std::memcpy(o + q, g + dof_ * ghosted_.local(owned_.start[0], j, kk),
                    sizeof(double) * static_cast<std::size_t>(values));
    FPDP_PETSC(VecRestoreArray(to, &o));
    FPDP_PETSC(VecRestoreArrayRead(from, &g));
  };
  copyOwned(kEven ? firstVec : secondVec, b1);
  copyOwned(kEven ? secondVec : firstVec, b2);
}

}  // namespace fpdp::solver
