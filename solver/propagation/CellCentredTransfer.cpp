#include "solver/propagation/CellCentredTransfer.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/discretisation/StencilOperator.hpp"  // ghostedInput

namespace fpdp::solver {

AxisWeights bilinearAxisWeights(PetscInt fine, PetscInt coarseCells) {
  AxisWeights w;
  w.own = fine / 2;
  const PetscInt other = fine % 2 == 0 ? w.own - 1 : w.own + 1;
  w.other = w.own;
  if (other >= 0 && other < coarseCells) w.other = other, w.ownWeight = 0.75, w.otherWeight = 0.25, w.count = 2;
  return w;
}

Mat cellCentredBilinearInterpolation(DM coarse, DM fine) {
  PetscInt dim = 0, dof = 0, Mc[3] = {1, 1, 1}, Mf[3] = {1, 1, 1};
  FPDP_PETSC(DMDAGetInfo(fine, &dim, &Mf[0], &Mf[1], &Mf[2], nullptr, nullptr, nullptr, &dof, nullptr, nullptr,
                         nullptr, nullptr, nullptr));
  FPDP_PETSC(DMDAGetInfo(coarse, nullptr, &Mc[0], &Mc[1], &Mc[2], nullptr, nullptr, nullptr, nullptr, nullptr,
                         nullptr, nullptr, nullptr, nullptr));
  for (PetscInt a = 0; a < dim; ++a)
    if (Mf[a] != 2 * Mc[a])
      throw std::invalid_argument("cellCentredBilinearInterpolation: the coarse DMDA does not halve the fine one");
  const meshes::OwnedBlock fineOwned = meshes::dmdaBlock(fine, false), fineGhosted = meshes::dmdaBlock(fine, true);
  const meshes::OwnedBlock coarseOwned = meshes::dmdaBlock(coarse, false), coarseGhosted = meshes::dmdaBlock(coarse, true);
  ISLocalToGlobalMapping ltogF, ltogC;
  FPDP_PETSC(DMGetLocalToGlobalMapping(fine, &ltogF));
  FPDP_PETSC(DMGetLocalToGlobalMapping(coarse, &ltogC));
  const PetscInt *idxF, *idxC;
  FPDP_PETSC(ISLocalToGlobalMappingGetBlockIndices(ltogF, &idxF));
  FPDP_PETSC(ISLocalToGlobalMappingGetBlockIndices(ltogC, &idxC));
  MPI_Comm comm;
  FPDP_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(fine), &comm));
  Mat P;
  FPDP_PETSC(MatCreate(comm, &P));
  FPDP_PETSC(MatSetSizes(P, fineOwned.size() * dof, coarseOwned.size() * dof, PETSC_DETERMINE, PETSC_DETERMINE));
  FPDP_PETSC(MatSetType(P, MATAIJ));
  const PetscInt perRow = PetscInt(1) << dim;
  FPDP_PETSC(MatSeqAIJSetPreallocation(P, perRow, nullptr));
  FPDP_PETSC(MatMPIAIJSetPreallocation(P, perRow, nullptr, perRow, nullptr));
  // The weights per axis (CellCentredTransfer.hpp).
  std::array<std::array<PetscInt, 2>, 3> I{};
  std::array<std::array<double, 2>, 3> W{};
  std::array<int, 3> count{};
  const auto& fs = fineOwned.start;
  const auto& fm = fineOwned.count;
  for (PetscInt k = fs[2]; k < fs[2] + fm[2]; ++k)
    for (PetscInt j = fs[1]; j < fs[1] + fm[1]; ++j)
      for (PetscInt i = fs[0]; i < fs[0] + fm[0]; ++i) {
        const PetscInt f[3] = {i, j, k};
        for (PetscInt a = 0; a < 3; ++a) {
          const AxisWeights w = a < dim ? bilinearAxisWeights(f[a], Mc[a]) : AxisWeights{};
          I[a] = {w.own, w.other}, W[a] = {w.ownWeight, w.otherWeight}, count[a] = w.count;
        }
        auto coarseBlock = [&](PetscInt ci, PetscInt cj, PetscInt ck) {
          const PetscInt c[3] = {ci, cj, ck};
          for (std::size_t a = 0; a < 3; ++a)
            if (c[a] < coarseGhosted.start[a] || c[a] >= coarseGhosted.start[a] + coarseGhosted.count[a])
              throw std::runtime_error("cellCentredBilinearInterpolation: a coarse neighbour lies beyond the ghost layer");
          return idxC[coarseGhosted.local(ci, cj, ck)];
        };
        const PetscInt fineBlock = idxF[fineGhosted.local(i, j, k)];
        PetscInt cols[8];
        double vals[8];
        int n = 0;
        for (int c = 0; c < count[2]; ++c)
          for (int b = 0; b < count[1]; ++b)
            for (int a = 0; a < count[0]; ++a) {
              cols[n] = coarseBlock(I[0][a], I[1][b], I[2][c]);
              vals[n] = W[0][a] * W[1][b] * W[2][c];
              ++n;
            }
        for (PetscInt comp = 0; comp < dof; ++comp) {
          const PetscInt row = fineBlock * dof + comp;
          PetscInt dofCols[8];
          for (int m = 0; m < n; ++m) dofCols[m] = cols[m] * dof + comp;
          FPDP_PETSC(MatSetValues(P, 1, &row, n, dofCols, vals, INSERT_VALUES));
        }
      }
  FPDP_PETSC(ISLocalToGlobalMappingRestoreBlockIndices(ltogF, &idxF));
  FPDP_PETSC(ISLocalToGlobalMappingRestoreBlockIndices(ltogC, &idxC));
  FPDP_PETSC(MatAssemblyBegin(P, MAT_FINAL_ASSEMBLY));
  FPDP_PETSC(MatAssemblyEnd(P, MAT_FINAL_ASSEMBLY));
  return P;
}

namespace {
constexpr const char* kTransferKey = "fpdp_matrix_free_transfer";

// One tap of a transfer along an axis: a position in the source's ghosted block and its weight.
struct Tap {
  PetscInt at = 0;
  double weight = 0.0;
};

// The matrix-free transfer for one pair of levels. Along every axis the weights are tabulated once: for each owned
// fine index its 2 coarse taps (prolongation), for each owned coarse index its 4 fine taps (restriction, the
// columns of P^T: fine 2I - 1 and 2I + 2 with 1/4, 2I and 2I + 1 with 3/4, or 1 where a wall takes the other
// weight). Unused axes have one tap of weight 1; missing taps weight 0 at a valid position.
struct MatrixFreeTransfer {
  int dim = 1;
  PetscInt dof = 1;
  meshes::DMHandle coarse, fine;
  meshes::OwnedBlock coarseOwned, coarseGhosted, fineOwned, fineGhosted;
  std::array<std::vector<std::array<Tap, 2>>, 3> prolongation;  // [axis][owned fine index]
  std::array<std::vector<std::array<Tap, 4>>, 3> restriction;   // [axis][owned coarse index]
  meshes::VecHandle coarseLocal, fineLocal;  // ghosted work vectors (several ranks; null on one)
  mutable std::vector<double> scratch;        // one ghosted line of the source, weighted over the other axes
  // Along axis 0: the owned coarse cells [regular[0], regular[1]) (local) away from the walls, and the ghosted-line
  // positions of the first owned coarse and fine cells.
  std::array<PetscInt, 2> regular{0, 0};
  PetscInt firstOwnedCoarse = 0, firstOwnedFine = 0;
};

// The array of x in the ghosted layout (ghostedInput: x's own on one rank, else local after the ghost exchange).
PetscErrorCode getGhostedArray(DM dm, Vec x, Vec local, Vec* source, const PetscScalar** array) {
  PetscFunctionBeginUser;
  try {
    *source = ghostedInput(dm, x, local);
  } catch (const std::exception& e) {
    SETERRQ(PetscObjectComm(reinterpret_cast<PetscObject>(x)), PETSC_ERR_LIB, "%s", e.what());
  }
  PetscCall(VecGetArrayRead(*source, array));
  PetscFunctionReturn(0);
}

MatrixFreeTransfer* transferOf(Mat P) {
  PetscContainer container = nullptr;
  FPDP_PETSC(PetscObjectQuery(reinterpret_cast<PetscObject>(P), kTransferKey, reinterpret_cast<PetscObject*>(&container)));
  void* t = nullptr;
  if (container) FPDP_PETSC(PetscContainerGetPointer(container, &t));
  return static_cast<MatrixFreeTransfer*>(t);
}

// Both kernels go line by line (lines along axis 0) and split the tensor-product weights: first the lines of the
// other axes are combined into one scratch line (contiguous, vectorised), then the axis-0 taps are applied to it.
// (Applying all 2^d or 4^d taps per value instead ran at 8.4 ms for both transfers of a 1024^2 step.)

// For every line (along axis 0) of the target block `target`, in order: the sum over the taps along axes 2 and 1 of
// their weights times that ghosted line of the source x (whose ghosted block is `source`), handed to
// body(q, line) with q the line's first value in the target's owned layout.
template <class Taps, class Body>
void forEachCombinedLine(const meshes::OwnedBlock& target, const meshes::OwnedBlock& source, PetscInt dof,
                         const std::array<std::vector<Taps>, 3>& taps, const PetscScalar* x, std::vector<double>& line,
                         Body&& body) {
  const PetscInt lineValues = source.count[0] * dof, targetValues = target.count[0] * dof, gy = source.count[1];
  line.resize(static_cast<std::size_t>(lineValues));
  PetscInt q = 0;
  for (PetscInt k = 0; k < target.count[2]; ++k)
    for (PetscInt j = 0; j < target.count[1]; ++j, q += targetValues) {
      std::fill(line.begin(), line.end(), 0.0);
      for (const Tap& tz : taps[2][static_cast<std::size_t>(k)])
        for (const Tap& ty : taps[1][static_cast<std::size_t>(j)]) {
          const double weight = tz.weight * ty.weight;
          if (weight == 0.0) continue;
          const PetscScalar* src = x + lineValues * (ty.at + gy * tz.at);
          for (PetscInt v = 0; v < lineValues; ++v) line[static_cast<std::size_t>(v)] += weight * src[v];
        }
      body(q, line.data());
    }
}

// w = y + P x (x coarse, y and w fine; y and w may be the same vector).
void prolongAddKernel(const MatrixFreeTransfer& t, const PetscScalar* x, const PetscScalar* y, PetscScalar* w) {
  const PetscInt dof = t.dof;
  const auto& px = t.prolongation[0];
  forEachCombinedLine(t.fineOwned, t.coarseGhosted, dof, t.prolongation, x, t.scratch, [&](PetscInt q, const double* s) {
    const PetscScalar* yq = y + q;
    PetscScalar* wq = w + q;
    const auto tapped = [&](PetscInt i) {
      const Tap& a = px[static_cast<std::size_t>(i)][0];
      const Tap& b = px[static_cast<std::size_t>(i)][1];
      for (PetscInt f = 0; f < dof; ++f)
        wq[i * dof + f] = yq[i * dof + f] + a.weight * s[a.at * dof + f] + b.weight * s[b.at * dof + f];
    };
    // Away from the walls fine cells 2c and 2c + 1 of coarse cell c take 3/4 of it and 1/4 of c - 1 and c + 1.
    for (PetscInt i = 0; i < 2 * t.regular[0]; ++i) tapped(i);
    for (PetscInt c = t.regular[0]; c < t.regular[1]; ++c) {
      const double* own = s + (t.firstOwnedCoarse + c) * dof;
      for (PetscInt f = 0; f < dof; ++f) {
        wq[2 * c * dof + f] = yq[2 * c * dof + f] + 0.75 * own[f] + 0.25 * own[f - dof];
        wq[(2 * c + 1) * dof + f] = yq[(2 * c + 1) * dof + f] + 0.75 * own[f] + 0.25 * own[f + dof];
      }
    }
    for (PetscInt i = 2 * t.regular[1]; i < t.fineOwned.count[0]; ++i) tapped(i);
  });
}

// y = P^T x (x fine, y coarse).
void restrictKernel(const MatrixFreeTransfer& t, const PetscScalar* x, PetscScalar* y) {
  const PetscInt dof = t.dof;
  const auto& rx = t.restriction[0];
  forEachCombinedLine(t.coarseOwned, t.fineGhosted, dof, t.restriction, x, t.scratch, [&](PetscInt q, const double* s) {
    PetscScalar* yq = y + q;
    const auto tapped = [&](PetscInt c) {
      for (PetscInt f = 0; f < dof; ++f) {
        double acc = 0.0;
        for (const Tap& a : rx[static_cast<std::size_t>(c)]) acc += a.weight * s[a.at * dof + f];
        yq[c * dof + f] = acc;
      }
    };
    // Away from the walls coarse cell c gathers fine cells 2c - 1 .. 2c + 2 with 1/4, 3/4, 3/4, 1/4.
    for (PetscInt c = 0; c < t.regular[0]; ++c) tapped(c);
    for (PetscInt c = t.regular[0]; c < t.regular[1]; ++c) {
      const double* first = s + (t.firstOwnedFine + 2 * c - 1) * dof;
      for (PetscInt f = 0; f < dof; ++f)
        yq[c * dof + f] = 0.25 * (first[f] + first[3 * dof + f]) + 0.75 * (first[dof + f] + first[2 * dof + f]);
    }
    for (PetscInt c = t.regular[1]; c < t.coarseOwned.count[0]; ++c) tapped(c);
  });
}

PetscErrorCode matrixFreeProlongAdd(Mat P, Vec x, Vec y, Vec w) {
  PetscFunctionBeginUser;
  const MatrixFreeTransfer& t = *transferOf(P);
  Vec xv;
  const PetscScalar* xx;
  PetscCall(getGhostedArray(t.coarse, x, t.coarseLocal, &xv, &xx));
  const PetscScalar* yy = nullptr;
  PetscScalar* ww;
  PetscCall(VecGetArray(w, &ww));
  if (y != w) PetscCall(VecGetArrayRead(y, &yy));
  const PetscScalar* src = y == w ? ww : yy;
  prolongAddKernel(t, xx, src, ww);
  if (y != w) PetscCall(VecRestoreArrayRead(y, &yy));
  PetscCall(VecRestoreArray(w, &ww));
  PetscCall(VecRestoreArrayRead(xv, &xx));
  PetscCall(PetscLogFlops(2.0 * static_cast<double>(t.fineOwned.size() * t.dof) * (1 << t.dim)));
  PetscFunctionReturn(0);
}

PetscErrorCode matrixFreeRestrict(Mat P, Vec x, Vec y) {
  PetscFunctionBeginUser;
  const MatrixFreeTransfer& t = *transferOf(P);
  Vec xv;
  const PetscScalar* xx;
  PetscCall(getGhostedArray(t.fine, x, t.fineLocal, &xv, &xx));
  PetscScalar* yy;
  PetscCall(VecGetArrayWrite(y, &yy));
  restrictKernel(t, xx, yy);
  PetscCall(VecRestoreArrayWrite(y, &yy));
  PetscCall(VecRestoreArrayRead(xv, &xx));
  PetscCall(PetscLogFlops(2.0 * static_cast<double>(t.coarseOwned.size() * t.dof) * (1 << (2 * t.dim))));
  PetscFunctionReturn(0);
}

PetscErrorCode destroyTransfer(void* p) {
  PetscFunctionBeginUser;
  delete static_cast<MatrixFreeTransfer*>(p);
  PetscFunctionReturn(0);
}
}  // namespace

bool attachMatrixFreeTransfer(Mat P, DM coarse, DM fine) {
  auto t = std::make_unique<MatrixFreeTransfer>();
  PetscInt dim = 0, dof = 0, coarseDof = 0, width = 0, Mc[3] = {1, 1, 1};
  DMBoundaryType bnd[3];
  FPDP_PETSC(DMDAGetInfo(fine, &dim, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &dof, &width, &bnd[0],
                         &bnd[1], &bnd[2], nullptr));
  FPDP_PETSC(DMDAGetInfo(coarse, nullptr, &Mc[0], &Mc[1], &Mc[2], nullptr, nullptr, nullptr, &coarseDof, nullptr,
                         nullptr, nullptr, nullptr, nullptr));
  t->dim = static_cast<int>(dim);
  t->dof = dof;
  t->coarseOwned = meshes::dmdaBlock(coarse, false);
  t->coarseGhosted = meshes::dmdaBlock(coarse, true);
  t->fineOwned = meshes::dmdaBlock(fine, false);
  t->fineGhosted = meshes::dmdaBlock(fine, true);
  int ok = dof == coarseDof && width >= 1 ? 1 : 0;
  for (int a = 0; a < 3 && ok; ++a) {
    const auto ua = static_cast<std::size_t>(a);
    if (a >= dim) {  // one tap of weight 1 at position 0
      t->prolongation[ua].assign(1, {Tap{0, 1.0}, Tap{0, 0.0}});
      t->restriction[ua].assign(1, {Tap{0, 1.0}, Tap{0, 0.0}, Tap{0, 0.0}, Tap{0, 0.0}});
      continue;
    }
    ok = ok && bnd[a] == DM_BOUNDARY_NONE && t->fineOwned.start[ua] == 2 * t->coarseOwned.start[ua] &&
         t->fineOwned.count[ua] == 2 * t->coarseOwned.count[ua];
    const auto inCoarse = [&](PetscInt c) {
      return c >= t->coarseGhosted.start[ua] && c < t->coarseGhosted.start[ua] + t->coarseGhosted.count[ua];
    };
    const auto inFine = [&](PetscInt f) {
      return f >= t->fineGhosted.start[ua] && f < t->fineGhosted.start[ua] + t->fineGhosted.count[ua];
    };
    for (PetscInt i = 0; i < t->fineOwned.count[ua] && ok; ++i) {
      const AxisWeights w = bilinearAxisWeights(t->fineOwned.start[ua] + i, Mc[a]);
      ok = inCoarse(w.own) && inCoarse(w.other);
      t->prolongation[ua].push_back({Tap{w.own - t->coarseGhosted.start[ua], w.ownWeight},
                                     Tap{w.other - t->coarseGhosted.start[ua], w.otherWeight}});
    }
    // Column I of P along this axis: the fine cells whose own or other coarse cell is I.
    for (PetscInt c = 0; c < t->coarseOwned.count[ua] && ok; ++c) {
      const PetscInt I = t->coarseOwned.start[ua] + c;
      std::array<Tap, 4> taps{};
      int n = 0;
      for (PetscInt f = 2 * I - 1; f <= 2 * I + 2; ++f) {
        if (f < 0 || f >= 2 * Mc[a]) continue;
        const AxisWeights w = bilinearAxisWeights(f, Mc[a]);
        const double weight = (w.own == I ? w.ownWeight : 0.0) + (w.count == 2 && w.other == I ? w.otherWeight : 0.0);
        if (weight == 0.0) continue;
        ok = ok && inFine(f);
        taps[static_cast<std::size_t>(n++)] = Tap{f - t->fineGhosted.start[ua], weight};
      }
      for (int m = n; m < 4; ++m) taps[static_cast<std::size_t>(m)] = Tap{taps[0].at, 0.0};
      t->restriction[ua].push_back(taps);
    }
  }
  t->firstOwnedCoarse = t->coarseOwned.start[0] - t->coarseGhosted.start[0];
  t->firstOwnedFine = t->fineOwned.start[0] - t->fineGhosted.start[0];
  t->regular = {t->coarseOwned.start[0] == 0 ? 1 : 0,
                t->coarseOwned.count[0] - (t->coarseOwned.start[0] + t->coarseOwned.count[0] == Mc[0] ? 1 : 0)};
  t->regular[1] = std::max(t->regular[1], t->regular[0]);
  MPI_Comm comm;
  FPDP_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(P), &comm));
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm));
  if (!ok) return false;
  FPDP_PETSC(PetscObjectReference(reinterpret_cast<PetscObject>(coarse)));
  t->coarse = meshes::DMHandle(coarse);
  FPDP_PETSC(PetscObjectReference(reinterpret_cast<PetscObject>(fine)));
  t->fine = meshes::DMHandle(fine);
  PetscMPIInt size = 1;
  FPDP_PETSC(MPI_Comm_size(comm, &size));
  // On one rank (no periodic axes) the ghosted blocks are the owned ones: the global arrays are read directly.
  if (size > 1) {
    FPDP_PETSC(DMCreateLocalVector(coarse, t->coarseLocal.out()));
    FPDP_PETSC(DMCreateLocalVector(fine, t->fineLocal.out()));
  }
  PetscContainer container;
  FPDP_PETSC(PetscContainerCreate(comm, &container));
  FPDP_PETSC(PetscContainerSetPointer(container, t.get()));
  FPDP_PETSC(PetscContainerSetUserDestroy(container, destroyTransfer));
  t.release();
  FPDP_PETSC(PetscObjectCompose(reinterpret_cast<PetscObject>(P), kTransferKey, reinterpret_cast<PetscObject>(container)));
  FPDP_PETSC(PetscContainerDestroy(&container));
  FPDP_PETSC(MatSetOperation(P, MATOP_MULT_TRANSPOSE, reinterpret_cast<void (*)(void)>(matrixFreeRestrict)));
  FPDP_PETSC(MatSetOperation(P, MATOP_MULT_ADD, reinterpret_cast<void (*)(void)>(matrixFreeProlongAdd)));
  return true;
}

}  // namespace fpdp::solver
