#pragma once
// The batches of minibatch noisy SGD (MATH.md §8) for a dataset D and its neighbour D': which records each step's
// gradient g_B = (1/b) sum_{i in B} grad l(theta; x_i) sums, and the divisor b. One definition for the Monte Carlo
// sampler (validation/MonteCarloSampler) and the closed forms (models/MinibatchReferences).
//   cyclic:  D's records in data order cut into consecutive batches of `size` (the last may be smaller, its sum still
//            divided by b = size); step k (k = 0, 1, ...) uses batch k mod m, m = ceil(n / size). D' keeps D's
//            assignment record by record: a replacing record sits in the batch of the record it replaces, a removed
//            record leaves its batch one record short, an added record (index n of D', Neighbour::apply appends it)
//            joins the last batch.
//   poisson: every record of D (of D') joins each step's batch independently with probability gamma = rate.
//   b:       n (full), size (cyclic), gamma n (poisson), with n = |D| for both D and D' (the algorithm's public
//            normalisation; under add/remove D' has n + 1 or n - 1 records but the same b).
#include <cstddef>
#include <string>
#include <vector>

#include "models/Dataset.hpp"

namespace fpdp::models {

enum class BatchSampling { Full, Cyclic, Poisson };

struct BatchScheme {
  BatchSampling sampling = BatchSampling::Full;
  long size = 0;        // cyclic: records per batch
  double rate = 1.0;    // poisson: gamma in (0, 1]
  double divisor = 1.0; // b
};

/// The cyclic batches of D (process 0) and D' (process 1): record indices into each process's own dataset, in
/// increasing order; step k uses batches[process][k mod cycleLength()].
struct CyclicBatches {
  std::vector<std::vector<std::size_t>> batches[2];
  std::size_t cycleLength() const { return batches[0].size(); }
  const std::vector<std::size_t>& atStep(int process, long k) const {
    return batches[process][static_cast<std::size_t>(k) % cycleLength()];
  }
};

/// The cyclic batches of D (n records) and of D' = neighbour.apply(D), as described above. size >= 1.
CyclicBatches cyclicBatches(std::size_t n, long size, const Neighbour& neighbour);

/// Binomial(N, gamma) probabilities of 0..N, the number of a group's N records in a Poisson batch; gamma = 1 puts
/// all mass on N (log1p(-1) would make 0 * -inf).
std::vector<double> binomialPmf(long N, double gamma);

/// Throws std::invalid_argument (the message led by `who`) unless D and D' have the same positive number of batches
/// and every index lies below its process's record count (recordCounts[0] = |D|, recordCounts[1] = |D'|), checked
/// before any record is looked up.
void requireCyclicBatchesWithin(const CyclicBatches& batches, const std::size_t recordCounts[2], const std::string& who);

}  // namespace fpdp::models
