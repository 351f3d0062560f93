#pragma once
// The Clenshaw recurrence of the exponential integrator (ExponentialEvolution, docs/scheme.md §3) with several terms
// per pass over memory (temporal blocking).
//
// One term b_k = s4 A b_(k+1) + 2 b_(k+1) - b_(k+2) + c_k u reads the stencil's 2d + 1 coefficient arrays and three
// vectors and writes one: at 1024^2 with two fields about 150 MB, which stream from memory at every term (the
// machine's two cores share that bandwidth: one rank streamed 43 GB/s per term, two 56 GB/s together). A pass here
// computes `depth` terms as a wavefront over the slabs of the slowest axis (rows in 2-D, planes in 3-D): term m of
// the pass works on slab J - m while term 0 works on slab J, so each slab's coefficients and values are read from
// memory once and reused from cache by the following terms. Term m of the pass needs term m - 1 on slabs S - 1, S,
// S + 1, all computed by then; it overwrites term m - 2 on slab S, whose last readers (term m - 1 on S - 1 .. S + 1)
// have run. So two vectors still hold the whole recurrence, as in the term-by-term loop.
//
// On several ranks a pass begins with one ghost exchange of depth `depth` (a box-stencil DMDA with the same
// ownership as the mesh's): term m is computed on the owned block grown by depth - 1 - m cells (clipped at walls),
// redundantly in the ghost layer, with the neighbours' coefficients exchanged once at construction. Every value is
// computed by the same operations in the same order as the term-by-term loop: the results are the same bits for
// every depth and every number of ranks.
#include <petscdmda.h>

#include <array>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/discretisation/StaggeredArrays.hpp"
#include "solver/discretisation/StencilOperator.hpp"

namespace fpdp::solver {

class ClenshawWavefront {
public:
  static constexpr int kMaxDepth = 64;
  /// op: a star stencil built on dm (the mesh's DMDA). depth: terms per pass, 1 .. kMaxDepth; on several ranks it is capped at
  /// the smallest owned extent of any rank along any axis (a DMDA's ghost layer may not reach past its neighbour).
  /// Collective.
  ClenshawWavefront(const StencilOperator& op, DM dm, int depth);
  ~ClenshawWavefront();
  ClenshawWavefront(const ClenshawWavefront&) = delete;
  ClenshawWavefront& operator=(const ClenshawWavefront&) = delete;

  int depth() const { return depth_; }

  /// Runs the recurrence for the coefficients a_0 .. a_K (K >= 1): b_(K+1) = 0, b_K = 2 a_K u, then for
  /// k = K - 1 .. 1: b_k = s4 A b_(k+1) + 2 b_(k+1) - b_(k+2) + 2 a_k u. Writes b_1 into b1 and b_2 into b2
  /// (global vectors of dm, like u). Collective.
  void run(Vec u, const std::vector<double>& a, double s4, Vec b1, Vec b2);

private:
  struct Box {
    std::array<PetscInt, 3> lo{0, 0, 0}, hi{1, 1, 1};  // local coordinates in the ghosted block, hi exclusive
  };
  /// The owned block grown by `grow` cells per axis, clipped to the ghosted block.
  Box region(int grow) const;
  void pass(double* x, double* t, const double* u, const double* weights, int terms, double s4) const;
  template <int N>
  void passKernel(double* x, double* t, const double* u, const double* weights, int terms, double s4) const;

  int dim_ = 1, points_ = 3;
  PetscInt dof_ = 1;
  int depth_ = 1;
  meshes::OwnedBlock owned_, ghosted_;  // ghosted: grown by depth_ (on one rank: the owned block)
  std::array<std::array<int, 3>, 7> shifts_{};
  std::array<const double*, 7> coefficients_{};  // per point, in the ghosted layout
  StaggeredArrays ghostedCoefficients_;  // their storage on several ranks (one staggered block)
  meshes::DMHandle deep_;            // on several ranks: the DMDA with the deep ghost layer
  meshes::VecHandle x_, t_, u_;      // its local vectors
  std::vector<double> weights_;
};

}  // namespace fpdp::solver
