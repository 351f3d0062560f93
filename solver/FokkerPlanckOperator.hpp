#pragma once
// Spatial operator of the Fokker–Planck equations of Langevin diffusion (MATH.md §2.3), finite volumes:
//
//   d_t u_f = div( u_f grad Phi_f ) + div( D_f grad u_f ),     f = 0..F-1 (here u_0 = p, u_1 = q),
//   no-flux walls:  ( u grad Phi + D grad u ) . n = 0 on the boundary of the box.
//
// Cell averages u_c on a tensor-product mesh; for cell c and each neighbour n across a face of area A
// (tensor mesh: A / |c| = 1 / width_a(c)) and centre distance h:
//   d_t u_c = sum_n (1/width_a(c)) J_cn,     J_cn = (D_a/h) [ w_n(P) u_n - w_c(P) u_c ],  P = (Phi_n - Phi_c)/D_a,
// with the face weights of FaceFluxScheme.hpp (Scharfetter–Gummel by default). Wall faces carry no flux.
// Properties (docs/scheme.md): volume-weighted mass is conserved exactly (J_cn = -J_nc, the same floating-point
// number), the matrix is an M-matrix transpose for Scharfetter–Gummel (off-diagonals >= 0, columns sum to zero
// with volume weights), so backward Euler keeps densities non-negative; Gibbs exp(-Phi/D) is an exact steady state.
//
// Exercised by: fpdp run cases/ou-2d.toml ; tests/solver/test_fokker_planck.cpp
#include <petscmat.h>

#include <array>
#include <functional>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/FaceFluxScheme.hpp"

namespace fpdp::solver {

using Point = std::array<double, 3>;

/// The data of one density's equation: a drift potential (evaluated at cell centres) and a constant
/// diagonal diffusion (D_a per axis; isotropic noise sigma^2 I gives D_a = sigma^2).
struct DriftDiffusionEquation {
  std::function<double(const Point&)> potential;
  std::array<double, 3> diffusion{1.0, 1.0, 1.0};
};

class FokkerPlanckOperator {
public:
  FokkerPlanckOperator(const meshes::DistributedBoxMesh& mesh, std::vector<DriftDiffusionEquation> equations,
                       FaceFluxScheme scheme);

  /// A new matrix on the mesh's DM, holding the operator (block diagonal in the fields).
  meshes::MatHandle assemble() const;
  /// Fill an existing matrix created by the mesh's DM.
  void assembleInto(Mat A) const;

  /// The potential of field f at the owned cell centres (local order), e.g. to build Gibbs states.
  std::vector<double> potentialAtOwnedCells(int field) const;

  const meshes::DistributedBoxMesh& mesh() const { return mesh_; }
  FaceFluxScheme scheme() const { return scheme_; }

private:
  const meshes::DistributedBoxMesh& mesh_;
  std::vector<DriftDiffusionEquation> equations_;
  FaceFluxScheme scheme_;
  // Potential of each field on the ghosted block (owned cells plus the stencil layer), evaluated once.
  std::vector<std::vector<double>> ghostedPotential_;
};

}  // namespace fpdp::solver
