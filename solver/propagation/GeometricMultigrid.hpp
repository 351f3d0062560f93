#pragma once
// Geometric multigrid (PETSc PCMG) on the mesh's DMDA for the implicit Fokker–Planck step: the time per
// step of a sparse LU grows like N^1.5 and more (fill), a multigrid V-cycle like N. The unknowns are cell averages:
// a coarse cell is the union of 2^d fine cells (DMDA Q0 coarsening; the vertex Q1 hierarchy needs 2^k + 1 points per
// axis), and the prolongation is cell-centred bilinear (weights 3/4, 1/4 per axis: 9/16, 3/16, 3/16, 1/16 in 2-D),
// its transpose the restriction, both applied matrix-free (CellCentredTransfer.hpp). Piecewise-constant prolongation with its transpose is too weak a pair for a
// second-order operator (transfer orders summing to 2, not more; docs/scaling.md §2): its iteration counts grew with
// the mesh. Coarse operators are Galerkin products R A P of the assembled shifted
// operator, so nothing but the fine matrix is assembled; the smoother is one symmetric Gauss–Seidel sweep
// (Richardson + SOR), robust for the upwind-weighted Scharfetter–Gummel matrix, which Chebyshev is not made for,
// on star levels in stencil form (StencilOperator). Under Richardson, diffusion-dominated levels skip the sweep from
// a zero iterate (V(0,1) on the coarse levels, and in the first cycle on the finest; docs/scaling.md §1), and on
// several ranks the ghosts are exchanged between the forward and the backward half of each sweep.
#include <petscpc.h>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/propagation/CellCentredTransfer.hpp"

namespace fpdp::solver {

/// Number of multigrid levels for the mesh: halve every axis while all cell counts stay even and the coarsest
/// axis keeps at least minCoarseCells cells (and every rank keeps at least 2 cells per axis).
int multigridLevels(const meshes::DistributedBoxMesh& mesh, int minCoarseCells = 8);

/// Configures pc (already of type PCMG, attached to a KSP whose DM is mesh.dm()) as described above. Options the
/// user gave explicitly (-[prefix]pc_mg_levels, -[prefix]pc_mg_galerkin, -[prefix]mg_levels_ksp_type,
/// -[prefix]mg_levels_pc_type, -[prefix]fpdp_mg_skip_presmooth, -[prefix]fpdp_mg_midsweep_exchange) win over these
/// choices. stationaryOuterIteration:
/// the KSP is Richardson or preonly, so that each solve's first V-cycle sees the step's smooth right-hand side;
/// then diffusion-dominated levels skip the smoothing sweep from a zero iterate, and on several ranks each sweep
/// exchanges the ghosts between its forward and backward half (GeometricMultigrid.cpp).
void configureGeometricMultigrid(PC pc, const meshes::DistributedBoxMesh& mesh, const char* optionsPrefix,
                                 bool stationaryOuterIteration);

}  // namespace fpdp::solver
