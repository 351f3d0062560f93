#pragma once
// Noisy-GD steps of whole-field densities on a box mesh of d >= 2 axes (up to six: the meshes beyond PETSc's DMDA),
// split over the ranks of a communicator in slabs. One step is NoisyGradientDescent's: the push-forward through
// T(theta) = theta - eta g(theta) (PushForward: its shears for axes d - 1, ..., 0), then the exact convolution with
// N(0, diag(s^2)) (GaussianConvolution: its passes for axes 0, ..., d - 1). Every shear and every pass works on whole
// lines along one axis, so a rank needs whole lines of the axis at hand:
//   the state (between steps) is split along axis 0: rank r holds axis-0 indices [first_r, first_r + count_r) and
//     every index of the other axes, so the lines along axes 1..d-1 are whole there; the shear of axis d - 1 and the
//     pass of axis d - 1 run on it;
//   the slabs are split along axis d - 1 (a contiguous block of the natural order), so the lines along axes 0..d-2
//     are whole; the shears of axes d - 2, ..., 0 and the passes of axes 0, ..., d - 2 run on them.
// Two transposes per density and step (MPI_Alltoallv) move the cells between the layouts. Each rank's part is a box
// mesh of its own (the global faces of its index range), on which the operators run unchanged: the values are
// bitwise those of the same step on one process (the same lines, the same operations in the same order).
// Memory per rank: the two parts of a density it is working on, the operators' work arrays, and each part's face maps.
#include <mpi.h>

#include <array>
#include <memory>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "solver/functionals/WholeFieldDivergences.hpp"
#include "solver/noisygd/GaussianConvolution.hpp"
#include "solver/noisygd/PushForward.hpp"

namespace fpdp::solver {

class SlabNoisyGd {
public:
  /// stddev[a]: the noise kernel's standard deviation along axis a, sqrt(2 eta Sigma_aa). Throws std::invalid_argument
  /// for d < 2, or an axis 0 or d - 1 with fewer cells than the communicator has ranks. Collective.
  SlabNoisyGd(MPI_Comm comm, const meshes::BoxMesh& mesh, GradientField gradientD, GradientField gradientDPrime,
              double eta, meshes::AxisValues stddev);
  /// Minibatch noisy SGD with cyclic batches (MATH.md §8): step k takes the gradients of batch k mod m of D and of D'
  /// (batchesD[b], batchesDPrime[b]: the mean gradient over batch b's records; m >= 1 of each, as many for D').
  SlabNoisyGd(MPI_Comm comm, const meshes::BoxMesh& mesh, std::vector<GradientField> batchesD,
              std::vector<GradientField> batchesDPrime, double eta, meshes::AxisValues stddev);
  /// One batch map of a Poisson mixture: the batch's mean gradient g_B = (1/b) sum_{i in B} g_i and its weight w_B.
  struct WeightedBatch {
    double weight = 0;
    GradientField gradient;
  };
  /// Minibatch noisy SGD with Poisson sampling (MATH.md §8), exact by enumeration: every step pushes a density
  /// through every batch map and sums the images with their weights, sum_B w_B T_B # p (PoissonBatchMixture's
  /// mixture), then convolves once (the convolution is linear). mixtureD, mixtureDPrime: every map of non-zero weight
  /// of D and of D' (the caller enumerates the batches, identical records merged); their counts may differ.
  SlabNoisyGd(MPI_Comm comm, const meshes::BoxMesh& mesh, std::vector<WeightedBatch> mixtureD,
              std::vector<WeightedBatch> mixtureDPrime, double eta, meshes::AxisValues stddev);
  ~SlabNoisyGd();
  SlabNoisyGd(const SlabNoisyGd&) = delete;
  SlabNoisyGd& operator=(const SlabNoisyGd&) = delete;

  /// This rank's part of the state, as a box mesh (axis 0 restricted to its index range).
  const meshes::BoxMesh& stateMesh() const { return *stateMesh_; }
  /// The first axis-0 index of this rank's part of the state (the parts lie in rank order).
  int stateFirst() const { return firstOfAxis0_[static_cast<std::size_t>(rank_)]; }
  /// Advances this rank's parts of p (dataset D) and q (D') by step k (0-based: the cyclic batch k mod m; a Poisson
  /// mixture takes every map at every step). Collective.
  /// Returns this rank's outflows (mass carried beyond the walls; sum them over the ranks for the whole).
  std::array<Outflow, 2> step(std::vector<double>& p, std::vector<double>& q, long k = 0) const;
  /// The divergences of the split p and q (wholeFieldDivergencesOfParts): each part's point values are reconstructed
  /// with a layer of its neighbours' cells along axis 0, so they are those of one process. Collective; the same
  /// numbers on every rank.
  WholeFieldDivergences divergences(const std::vector<double>& p, const std::vector<double>& q,
                                    const WholeFieldSettings& settings) const;
  /// This rank's part of a whole field given in the mesh's natural order.
  std::vector<double> part(const std::vector<double>& whole) const;
  /// The whole field, in natural order, on every rank, from every rank's part. Collective.
  std::vector<double> gather(const std::vector<double>& part) const;

private:
  /// The layouts, the convolutions and one push-forward per map, dataset and layout; weights empty (cyclic: step k
  /// takes map k mod m) or one per map (a Poisson mixture).
  SlabNoisyGd(MPI_Comm comm, const meshes::BoxMesh& mesh, std::vector<GradientField> mapsD,
              std::vector<GradientField> mapsDPrime, std::vector<double> weightsD, std::vector<double> weightsDPrime,
              double eta, meshes::AxisValues stddev);
  Outflow stepDensity(std::vector<double>& field, const PushForward& pushState, const PushForward& pushSlab) const;
  /// sum_B w_B T_B # field, then the convolution: the Poisson mixture's step of one density.
  Outflow stepMixture(std::vector<double>& field, const std::vector<double>& weights,
                      const std::vector<std::unique_ptr<PushForward>>& pushState,
                      const std::vector<std::unique_ptr<PushForward>>& pushSlab) const;
  /// The convolution's passes of a density pushed forward into the slab layout (`slab`), ending in `field`.
  void convolve(std::vector<double>& slab, std::vector<double>& field, Outflow& out) const;
  /// Moves a density's cells from the state layout to the slabs (stateToSlabs) or back: one MPI_Alltoallv.
  void transpose(const std::vector<double>& in, std::vector<double>& out, bool stateToSlabs) const;
  /// The point values of this rank's part of a density (negative averages as 0), reconstructed on the part grown by
  /// one axis-0 layer of each neighbouring rank's cells.
  std::vector<double> pointValues(const std::vector<double>& part) const;

  MPI_Comm comm_;
  int rank_ = 0, ranks_ = 1;
  meshes::BoxMesh mesh_;
  std::vector<int> firstOfAxis0_, firstOfLastAxis_;  // ranks_ + 1 boundaries of each split
  std::unique_ptr<meshes::BoxMesh> stateMesh_, slabMesh_;
  // One push-forward per batch, dataset and layout.
  std::vector<std::unique_ptr<PushForward>> pushStateD_, pushStateDPrime_, pushSlabD_, pushSlabDPrime_;
  std::vector<double> weightsD_, weightsDPrime_;  // a Poisson mixture's w_B per map (empty: cyclic or full batch)
  std::unique_ptr<GaussianConvolution> noiseState_, noiseSlab_;
  // A density's slab and the transposes' buffers, kept from step to step (one rank's process: no concurrent steps).
  struct Work {
    std::vector<double> slab, send, receive;
    std::vector<double> image, mixture;  // a Poisson mixture: one map's image (state layout), the weighted sum (slabs)
  };
  mutable Work work_;
};

}  // namespace fpdp::solver
