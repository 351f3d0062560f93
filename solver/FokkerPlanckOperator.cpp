#include "solver/FokkerPlanckOperator.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "solver/AnisotropicDiffusion.hpp"

namespace fpdp::solver {

double DriftDiffusionEquation::sigma(int a, int b) const {
  return a == b ? diffusion[a] : crossDiffusion[crossDiffusionIndex(std::min(a, b), std::max(a, b))];
}

void DriftDiffusionEquation::setSigma(int a, int b, double value) {
  if (a == b) diffusion[a] = value;
  else crossDiffusion[crossDiffusionIndex(std::min(a, b), std::max(a, b))] = value;
}

bool DriftDiffusionEquation::hasCrossDiffusion(int dim) const {
  for (int a = 0; a < dim; ++a)
    for (int b = a + 1; b < dim; ++b)
      if (sigma(a, b) != 0.0) return true;
  return false;
}

namespace {
// Sigma restricted to the first dim axes is positive definite (Cholesky without pivoting succeeds).
bool isPositiveDefinite(const DriftDiffusionEquation& eq, int dim) {
  double L[3][3] = {};
  for (int i = 0; i < dim; ++i)
    for (int j = 0; j <= i; ++j) {
      double sum = eq.sigma(i, j);
      for (int k = 0; k < j; ++k) sum -= L[i][k] * L[j][k];
      if (i == j) {
        if (!(sum > 0)) return false;
        L[i][i] = std::sqrt(sum);
      } else {
        L[i][j] = sum / L[j][j];
      }
    }
  return true;
}
}  // namespace

FokkerPlanckOperator::FokkerPlanckOperator(const meshes::DistributedBoxMesh& mesh,
                                           std::vector<DriftDiffusionEquation> equations, FaceFluxScheme scheme)
    : mesh_(mesh), equations_(std::move(equations)), scheme_(scheme) {
  if (static_cast<int>(equations_.size()) != mesh_.fields())
    throw std::invalid_argument("FokkerPlanckOperator: one equation per mesh field is required");
  const auto& g = mesh_.ghosted();
  const auto& box = mesh_.box();
  const int dim = mesh_.dim();
  bool cross = false;
  for (const auto& eq : equations_) {
    for (int a = 0; a < dim; ++a)
      if (!(eq.diffusion[a] > 0)) throw std::invalid_argument("FokkerPlanckOperator: diffusion must be positive");
    for (int a = 0; a < 3; ++a)
      for (int b = a + 1; b < 3; ++b)
        if (b >= dim && eq.sigma(a, b) != 0.0)
          throw std::invalid_argument("FokkerPlanckOperator: crossDiffusion couples an axis the mesh does not have");
    if (!isPositiveDefinite(eq, dim))
      throw std::invalid_argument("FokkerPlanckOperator: the diffusion matrix Sigma is not positive definite");
    cross = cross || eq.hasCrossDiffusion(dim);
  }
  if (cross) {
    DMDAStencilType stencil;
    FPDP_PETSC(DMDAGetInfo(mesh_.dm(), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                           nullptr, nullptr, nullptr, nullptr, &stencil));
    if (stencil != DMDA_STENCIL_BOX)
      throw std::invalid_argument(
          "FokkerPlanckOperator: an off-diagonal diffusion matrix couples diagonal neighbours; create the mesh with "
          "meshes::StencilShape::Box");
  }
  for (const auto& eq : equations_) {
    std::vector<double> phi(static_cast<std::size_t>(g.size()));
    for (PetscInt k = g.start[2]; k < g.start[2] + g.count[2]; ++k)
      for (PetscInt j = g.start[1]; j < g.start[1] + g.count[1]; ++j)
        for (PetscInt i = g.start[0]; i < g.start[0] + g.count[0]; ++i)
          phi[g.local(i, j, k)] = eq.potential(box.centre(i, j, k));
    ghostedPotential_.push_back(std::move(phi));
  }
}

std::vector<double> FokkerPlanckOperator::potentialAtOwnedCells(int field) const {
  std::vector<double> out(static_cast<std::size_t>(mesh_.owned().size()));
  const auto& g = mesh_.ghosted();
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    out[l] = ghostedPotential_[field][g.local(i, j, k)];
  });
  return out;
}

meshes::MatHandle FokkerPlanckOperator::assemble() const {
  meshes::MatHandle A;
  FPDP_PETSC(DMCreateMatrix(mesh_.dm(), A.out()));
  assembleInto(A);
  return A;
}

void FokkerPlanckOperator::buildRow(PetscInt i, PetscInt j, PetscInt k, int f, Row& row) const {
  const auto& box = mesh_.box();
  const auto& g = mesh_.ghosted();
  const int dim = mesh_.dim();
  const std::array<PetscInt, 3> c{i, j, k};
  const auto& eq = equations_[f];
  const auto& phi = ghostedPotential_[f];
  const double phiC = phi[g.local(i, j, k)];
  row = Row{};
  row.add(0, 0, 0, 0.0);
  // Drift and diagonal diffusion: the face weights of FaceFluxScheme.hpp.
  for (int a = 0; a < dim; ++a) {
    const auto& axis = box.axis(a);
    const double invWidth = 1.0 / axis.width(static_cast<int>(c[a]));
    for (int side : {-1, +1}) {
      std::array<PetscInt, 3> n = c;
      n[a] += side;
      if (n[a] < 0 || n[a] >= axis.cells()) continue;  // wall face: no flux
      const int lowerCell = static_cast<int>(side > 0 ? c[a] : n[a]);
      const double h = axis.centreDistance(lowerCell);
      const double D = eq.diffusion[a];
      const double P = (phi[g.local(n[0], n[1], n[2])] - phiC) / D;
      const FaceWeights w = faceWeights(scheme_, P);
      const double coef = D / h * invWidth;
      std::array<int, 3> o{0, 0, 0};
      o[a] = side;
      row.add(0, 0, 0, -coef * w.own);
      row.add(o[0], o[1], o[2], coef * w.neighbour);
    }
  }
  // Off-diagonal diffusion: the oriented mixed-derivative fluxes of AnisotropicDiffusion.hpp.
  for (int a = 0; a < dim; ++a)
    for (int b = a + 1; b < dim; ++b)
      addCrossDiffusionRow(box, c, a, b, eq.sigma(a, b),
                           [&](int dx, int dy, int dz, double w) { row.add(dx, dy, dz, w); });
}

PositivityReport FokkerPlanckOperator::checkRows(Mat A) const {
  long rows = 0, violating = 0;
  double mostNegative = 0.0, worstRelative = 0.0;
  Row row;
  MatStencil rowIndex{};
  MatStencil cols[27];
  PetscScalar vals[27];
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt) {
    for (int f = 0; f < mesh_.fields(); ++f) {
      buildRow(i, j, k, f, row);
      rowIndex.i = i, rowIndex.j = j, rowIndex.k = k, rowIndex.c = f;
      int nnz = 0;
      double smallest = 0.0;
      for (int s = 0; s < 27; ++s) {
        if (!row.used[s]) continue;
        const int dx = s % 3 - 1, dy = (s / 3) % 3 - 1, dz = s / 9 - 1;
        cols[nnz].i = i + dx, cols[nnz].j = j + dy, cols[nnz].k = k + dz, cols[nnz].c = f;
        vals[nnz] = row.value[s];
        ++nnz;
        if (s != 13) smallest = std::min(smallest, row.value[s]);
      }
      ++rows;
      if (smallest < 0.0) {
        ++violating;
        mostNegative = std::min(mostNegative, smallest);
        if (row.value[13] != 0.0) worstRelative = std::max(worstRelative, -smallest / std::fabs(row.value[13]));
      }
      if (A) FPDP_PETSC(MatSetValuesStencil(A, 1, &rowIndex, nnz, cols, vals, INSERT_VALUES));
    }
  });
  const MPI_Comm comm = mesh_.comm();
  double counts[2] = {static_cast<double>(rows), static_cast<double>(violating)}, gcounts[2];
  FPDP_PETSC(MPI_Allreduce(counts, gcounts, 2, MPI_DOUBLE, MPI_SUM, comm));
  PositivityReport r;
  r.rows = static_cast<long>(gcounts[0]);
  r.violatingRows = static_cast<long>(gcounts[1]);
  FPDP_PETSC(MPI_Allreduce(&mostNegative, &r.mostNegativeOffDiagonal, 1, MPI_DOUBLE, MPI_MIN, comm));
  FPDP_PETSC(MPI_Allreduce(&worstRelative, &r.worstRelativeViolation, 1, MPI_DOUBLE, MPI_MAX, comm));
  r.holds = r.violatingRows == 0;
  return r;
}

void FokkerPlanckOperator::assembleInto(Mat A) const {
  FPDP_PETSC(MatZeroEntries(A));
  const PositivityReport report = checkRows(A);
  FPDP_PETSC(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  FPDP_PETSC(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  positivity_ = report;
  assembled_ = true;
}

PositivityReport FokkerPlanckOperator::positivity() const {
  if (!assembled_) {
    positivity_ = checkRows(nullptr);
    assembled_ = true;
  }
  return positivity_;
}

}  // namespace fpdp::solver
