#pragma once
// Geometric multigrid (PETSc PCMG) on the mesh's DMDA for the implicit Fokker–Planck step (issue 9): the time per
// step of a sparse LU grows like N^1.5 and more (fill), a multigrid V-cycle like N. The unknowns are cell averages,
// so the DMDA levels use piecewise-constant (Q0) transfer: a coarse cell is the union of 2^d fine cells (the vertex
// Q1 transfer needs 2^k + 1 points per axis). Coarse operators are Galerkin products R A P of the assembled shifted
// operator, so nothing but the fine matrix is assembled; the smoother is one symmetric Gauss–Seidel sweep
// (Richardson + SOR), robust for the upwind-weighted Scharfetter–Gummel matrix, which Chebyshev is not made for.
#include <petscpc.h>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::solver {

/// Number of multigrid levels for the mesh: halve every axis while all cell counts stay even and the coarsest
/// axis keeps at least minCoarseCells cells (and every rank keeps at least 2 cells per axis).
int multigridLevels(const meshes::DistributedBoxMesh& mesh, int minCoarseCells = 8);

/// Configures pc (already of type PCMG, attached to a KSP whose DM is mesh.dm()) as described above. Options the
/// user gave explicitly (-[prefix]pc_mg_levels, -[prefix]pc_mg_galerkin, -[prefix]mg_levels_ksp_type,
/// -[prefix]mg_levels_pc_type) win over these choices.
void configureGeometricMultigrid(PC pc, const meshes::DistributedBoxMesh& mesh, const char* optionsPrefix);

}  // namespace fpdp::solver
