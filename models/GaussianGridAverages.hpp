#pragma once
// Cell averages of a Gaussian N(m, C) on a tensor-product grid of any dimension (the meshes of 4 to 6 axes: the start
// of a whole-field run and the closed forms its L1 errors are measured against). On at most three axes, Gaussian and
// TensorCellAverages do this with adaptive panels; beyond, their cost per cell (8^(d-1) nodes) is too large, so the
// rule here is a fixed tensor Gauss-Legendre rule on the first d - 1 axes, the last axis integrated exactly given them.
#include <vector>

#include "models/Dataset.hpp"

namespace fpdp::models {

/// The averages of N(mean, covariance) over the cells of the grid with faces faces[a] on axis a, in natural order
/// (axis 0 fastest); the cells of axis 0 are faces[0]'s, so a caller holding a slab of axis 0 passes its faces (and the
/// whole mesh's fullCovarianceNodes, so that every split of the mesh gets the same values).
/// - Diagonal covariance: products of one-axis interval probabilities (exact to round-off).
/// - Full covariance: the last coordinate integrated exactly given the others (its conditional law is Gaussian, its
///   interval probabilities erfc differences, relatively accurate in the tails), the first d - 1 coordinates by the
///   tensor Gauss-Legendre rule of `nodes` points per axis and cell (1 to 16). Its error in a cell is of order
///   h^(2n) times the density's 2n-th derivatives: far below the whole-field scheme's fourth order near the mode; in
///   the far tails, where the log-density changes by many units across a cell, it is positive but not relatively
///   accurate. Both densities of a run start from the same averages, and each mesh of the error estimate computes its
///   own, so that error is part of the spatial error the estimate measures.
/// Throws std::invalid_argument for a covariance that is not symmetric positive definite or faces not increasing.
std::vector<double> gaussianGridAverages(const Vector& mean, const Matrix& covariance,
                                         const std::vector<std::vector<double>>& faces, int nodes);

/// The Gauss-Legendre points per axis and cell of gaussianGridAverages' outer rule on a mesh of `totalCells` cells and
/// d axes: the most of 4, 3, 2 whose cost, about totalCells n^(d-1) erfc evaluations, stays within 2e9 (tens of
/// seconds), and 2 beyond (fourth order, the scheme's). 4 on 4-D meshes up to 74^4; 3 on 12^6; 2 on 20^6.
int fullCovarianceNodes(std::size_t totalCells, int d);

/// An upper bound on the probability of N(mean, covariance) outside the box [lower, upper]: 1 - the product of the
/// axes' probabilities for a diagonal covariance (exact), else the union bound sum_a P(x_a outside [lower_a, upper_a])
/// of the marginals (capped at 1). For the mass a box leaves out, where an underestimate would be unsound.
double gaussianOutsideBoxBound(const Vector& mean, const Matrix& covariance, const std::vector<double>& lower,
                               const std::vector<double>& upper);

}  // namespace fpdp::models
