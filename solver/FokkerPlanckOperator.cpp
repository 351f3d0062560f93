#include "solver/FokkerPlanckOperator.hpp"

#include <stdexcept>

namespace fpdp::solver {

bool parseFaceFluxScheme(std::string_view name, FaceFluxScheme& out) {
  if (name == "scharfetter_gummel") out = FaceFluxScheme::ScharfetterGummel;
  else if (name == "central") out = FaceFluxScheme::Central;
  else if (name == "upwind") out = FaceFluxScheme::Upwind;
  else return false;
  return true;
}

std::string faceFluxSchemeName(FaceFluxScheme s) {
  switch (s) {
    case FaceFluxScheme::Central: return "central";
    case FaceFluxScheme::Upwind: return "upwind";
    default: return "scharfetter_gummel";
  }
}

FokkerPlanckOperator::FokkerPlanckOperator(const meshes::DistributedBoxMesh& mesh,
                                           std::vector<DriftDiffusionEquation> equations, FaceFluxScheme scheme)
    : mesh_(mesh), equations_(std::move(equations)), scheme_(scheme) {
  if (static_cast<int>(equations_.size()) != mesh_.fields())
    throw std::invalid_argument("FokkerPlanckOperator: one equation per mesh field is required");
  const auto& g = mesh_.ghosted();
  const auto& box = mesh_.box();
  for (const auto& eq : equations_) {
    for (int a = 0; a < mesh_.dim(); ++a)
      if (!(eq.diffusion[a] > 0)) throw std::invalid_argument("FokkerPlanckOperator: diffusion must be positive");
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

void FokkerPlanckOperator::assembleInto(Mat A) const {
  const auto& box = mesh_.box();
  const auto& g = mesh_.ghosted();
  const int dim = mesh_.dim();
  FPDP_PETSC(MatZeroEntries(A));
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt) {
    const std::array<PetscInt, 3> c{i, j, k};
    for (int f = 0; f < mesh_.fields(); ++f) {
      const auto& eq = equations_[f];
      const auto& phi = ghostedPotential_[f];
      const double phiC = phi[g.local(i, j, k)];
      MatStencil row{};
      row.i = i, row.j = j, row.k = k, row.c = f;
      MatStencil cols[7];
      PetscScalar vals[7];
      int nnz = 1;
      double diag = 0.0;
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
          diag -= coef * w.own;
          cols[nnz].i = n[0], cols[nnz].j = n[1], cols[nnz].k = n[2], cols[nnz].c = f;
          vals[nnz] = coef * w.neighbour;
          ++nnz;
        }
      }
      cols[0] = row;
      vals[0] = diag;
      FPDP_PETSC(MatSetValuesStencil(A, 1, &row, nnz, cols, vals, INSERT_VALUES));
    }
  });
  FPDP_PETSC(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  FPDP_PETSC(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
}

}  // namespace fpdp::solver
