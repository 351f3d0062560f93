#pragma once
// The push-forward part of one step of Poisson-subsampled noisy SGD (MATH.md §8, docs/noisy-gd.md §9):
//
//   p  ->  sum_B w_B T_B # p,   T_B(theta) = theta - (eta/b) sum_{i in B} g_i(theta),
//   w_B = gamma^|B| (1 - gamma)^(n - |B|),
//
// exact by enumeration. Identical records have identical maps: with the records merged into groups r of c_r records,
// a batch is a count vector (k_r), 0 <= k_r <= c_r, of weight prod_r Binomial(c_r, gamma)(k_r), and there are
// prod_r (c_r + 1) distinct maps (2^n for n distinct records). Batches of weight 0 (gamma = 1: all but the full
// batch) are skipped. The noise follows once, outside (the convolution is linear).
//
// The counts are visited in a reflected mixed-radix Gray code: consecutive batches differ by one record added or
// removed, so the batch's summed gradient is updated by one per-example term. In 1-D the per-example gradients at the
// mesh faces are tabulated once, every batch's face images are an update of the previous batch's, and each batch is
// one remapLine (the PushForward scheme) into the cells its image covers. In d >= 2 every batch is a PushForward with
// its own map (shears; cost grows with the mesh and the batch's records).
//
// In 1-D the batch maps depend on the mesh and the records only, so they are made once: every distinct map (its face
// images and slopes) with the weights of the batches that give it summed (identical maps are applied once). Where
// every record's gradient is the same at every face (a loss linear in theta, or clipped to a constant), every batch
// map is a translation x -> x + d_B (to rounding: 8 ulps), and the mixture deposits source cell i's quadratic (CellQuadratic, the remap's
// within-cell shape) at two offsets per batch: sum_B w_B of those deposits is one kernel per coefficient c0, c1, c2
// over the offsets, made once, and a step is three discrete convolutions (a few hundred offsets) instead of a remap of
// every cell per batch map.
//
// Cost per step and dataset: batchMaps() remaps. costEstimate() is the work in units of "one cell of a 1-D remap";
// the caller refuses what exceeds its budget (no truncation, no sampling: the mixture is exact or not computed).
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "solver/noisygd/MinibatchDrift.hpp"
#include "solver/noisygd/PushForward.hpp"

namespace fpdp::solver {

class PoissonBatchMixture {
public:
  /// groups: the records (counts >= 1); rate gamma in (0, 1]; expectedSize b > 0; eta the step size.
  PoissonBatchMixture(const meshes::BoxMesh& mesh, std::vector<RecordGroup> groups, double rate, double expectedSize,
                      double eta);

  /// sum_B w_B T_B # field (cell averages, natural order) in place; the mass carried beyond the mesh is returned
  /// (weighted like the mass it belongs to).
  Outflow apply(std::vector<double>& field) const;
  /// Calls f(T_B(x), w_B) for every batch of non-zero weight (the point masses of Pi_C's boundary bins).
  void forEachImage(const ParameterPoint& x, const std::function<void(const ParameterPoint&, double)>& f) const;

  /// Visits every batch of a mixture whose groups have the weights pmf[r] = Binomial(c_r, gamma) at 0..c_r, in the
  /// reflected mixed-radix Gray code: visit(k, w, changed, delta) with the counts k, their weight w = prod_r
  /// pmf[r][k_r] (0 included) and the group that changed from the previous batch by delta (changed = -1 for the
  /// first, empty batch). The one enumeration of the Poisson mixture (also SlabNoisyGd's, beyond three axes).
  static void enumerate(const std::vector<std::vector<double>>& pmf,
                        const std::function<void(const std::vector<long>&, double, int, int)>& visit);
  /// prod_r (c_r + 1): the distinct batch maps enumerated per application.
  double batchMaps() const { return batchMaps(counts_); }
  static double batchMaps(const std::vector<long>& counts);
  /// Work of one application in units of one cell of a 1-D remap (about 40 ns, bench/run-minibatch): batch maps
  /// times cells, times kShearCost in d >= 2, where each cell costs a map inversion by Newton's method with the
  /// batch's per-example gradients (measured 2.5 ms per batch map on 24^2 cells against 8 us on 200 in 1-D).
  static double costEstimate(const std::vector<long>& counts, std::size_t cells, int dim);
  static constexpr double kShearCost = 100.0;
  std::string describe() const;
  /// 1-D: whether every batch map is a translation (the mixture is then one kernel), and how many distinct maps are
  /// kept otherwise (0: made at every application).
  bool translations() const { return !shiftKernel_[0].empty(); }
  std::size_t distinctMaps() const { return maps_.size(); }

private:
  /// This mixture's batches: enumerate(pmf_, visit).
  void enumerate(const std::function<void(const std::vector<long>&, double, int, int)>& visit) const {
    enumerate(pmf_, visit);
  }
  Outflow applyLine(std::vector<double>& field) const;
  /// 1-D: the distinct batch maps with their summed weights (when they fit kMaxCachedValues), or the translation
  /// kernel (every map a translation, on a uniform axis).
  void prepareLine();
  Outflow applyTranslations(std::vector<double>& field) const;
  static constexpr double kMaxCachedValues = 4194304.0;  // 32 MiB of doubles

  struct BatchMap {
    double weight = 0;
    std::vector<double> images, slopes;
    std::size_t first = 0, last = 0;  // the target cells its image covers
  };

  const meshes::BoxMesh& mesh_;
  std::vector<RecordGroup> groups_;
  std::vector<long> counts_;
  std::vector<std::vector<double>> pmf_;  // per group: Binomial(c_r, gamma) at 0..c_r
  double rate_, expectedSize_, eta_;
  std::vector<std::vector<double>> faceGradients_;  // 1-D: g_r at the mesh faces
  std::vector<BatchMap> maps_;                      // 1-D: the distinct maps (empty: made at every application)
  // 1-D translations: shiftKernel_[k][o - shiftFirst_] multiplies c_k of the source for the target offset o.
  std::array<std::vector<double>, 3> shiftKernel_;
  long shiftFirst_ = 0;
};

}  // namespace fpdp::solver
