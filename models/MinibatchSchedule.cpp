#include "models/MinibatchSchedule.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace fpdp::models {

CyclicBatches cyclicBatches(std::size_t n, long size, const Neighbour& neighbour) {
  if (size < 1) throw std::invalid_argument("cyclicBatches: batch size " + std::to_string(size) + " < 1");
  if (n == 0) throw std::invalid_argument("cyclicBatches: the dataset is empty");
  if (neighbour.kind != NeighbourKind::Add && neighbour.index >= n)
    throw std::out_of_range("cyclicBatches: the neighbour's record " + std::to_string(neighbour.index) +
                            " is not among the " + std::to_string(n) + " records");
  const auto b = static_cast<std::size_t>(size);
  const std::size_t m = (n + b - 1) / b;
  CyclicBatches out;
  for (auto& batches : out.batches) batches.resize(m);
  for (std::size_t i = 0; i < n; ++i) out.batches[0][i / b].push_back(i);
  // D' record by record: its index in D' and the batch of its position in D.
  for (std::size_t i = 0; i < n; ++i) {
    if (neighbour.kind == NeighbourKind::Remove) {
      if (i == neighbour.index) continue;
      out.batches[1][i / b].push_back(i < neighbour.index ? i : i - 1);
    } else {
      out.batches[1][i / b].push_back(i);
    }
  }
  if (neighbour.kind == NeighbourKind::Add) out.batches[1][m - 1].push_back(n);
  return out;
}

std::vector<double> binomialPmf(long N, double gamma) {
  std::vector<double> pmf(static_cast<std::size_t>(N) + 1, 0.0);
  if (gamma >= 1.0) {
    pmf.back() = 1.0;
    return pmf;
  }
  const double lg = std::log(gamma), l1g = std::log1p(-gamma);
  for (long c = 0; c <= N; ++c)
    pmf[static_cast<std::size_t>(c)] =
        std::exp(std::lgamma(N + 1.0) - std::lgamma(c + 1.0) - std::lgamma(N - c + 1.0) + c * lg + (N - c) * l1g);
  return pmf;
}

void requireCyclicBatchesWithin(const CyclicBatches& batches, const std::size_t recordCounts[2], const std::string& who) {
  for (int s = 0; s < 2; ++s) {
    if (batches.batches[s].empty() || batches.batches[s].size() != batches.cycleLength())
      throw std::invalid_argument(who + ": no cyclic batches, or D and D' with different numbers of batches");
    for (const auto& batch : batches.batches[s])
      for (std::size_t i : batch)
        if (i >= recordCounts[s])
          throw std::invalid_argument(who + ": a cyclic batch names a record beyond the dataset");
  }
}

}  // namespace fpdp::models
