// SlabNoisyGd: noisy-GD steps of whole fields split over MPI ranks in slabs (SlabNoisyGd.hpp).
#include "solver/noisygd/SlabNoisyGd.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "solver/functionals/PointValues.hpp"

namespace fpdp::solver {

namespace {

/// n cells over R ranks: R + 1 boundaries, the first n mod R ranks one cell more.
std::vector<int> split(int n, int R) {
  std::vector<int> first(static_cast<std::size_t>(R) + 1, 0);
  for (int r = 0; r < R; ++r) first[r + 1] = first[r] + n / R + (r < n % R ? 1 : 0);
  return first;
}

/// The mesh with axis `axis` restricted to cells [first, last).
meshes::BoxMesh restricted(const meshes::BoxMesh& mesh, int axis, int first, int last) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < mesh.dim(); ++a) {
    if (a != axis) {
      axes.push_back(mesh.axis(a));
      continue;
    }
    const auto& faces = mesh.axis(a).faces();
    axes.push_back(meshes::Axis::fromFaces(std::vector<double>(faces.begin() + first, faces.begin() + last + 1)));
  }
  return meshes::BoxMesh(std::move(axes));
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("SlabNoisyGd: ") + what + " failed");
}

/// The counts and offsets of an MPI_Alltoallv: to rank s `send(s)` values, from rank r `receive(r)`.
struct Exchange {
  std::vector<int> sendCounts, sendOffsets, receiveCounts, receiveOffsets;
  template <class Send, class Receive>
  Exchange(int ranks, Send send, Receive receive)
      : sendCounts(ranks), sendOffsets(ranks), receiveCounts(ranks), receiveOffsets(ranks) {
    for (int r = 0, out = 0, in = 0; r < ranks; ++r) {
      sendCounts[r] = static_cast<int>(send(r));
      sendOffsets[r] = out;
      out += sendCounts[r];
      receiveCounts[r] = static_cast<int>(receive(r));
      receiveOffsets[r] = in;
      in += receiveCounts[r];
    }
  }
  void run(const std::vector<double>& send, std::vector<double>& receive, MPI_Comm comm) const {
    check(MPI_Alltoallv(send.data(), sendCounts.data(), sendOffsets.data(), MPI_DOUBLE, receive.data(),
                        receiveCounts.data(), receiveOffsets.data(), MPI_DOUBLE, comm),
          "MPI_Alltoallv");
  }
};

/// The cells of rank r's range of a split: first[r] .. first[r + 1] - 1.
std::size_t width(const std::vector<int>& first, int r) { return static_cast<std::size_t>(first[r + 1] - first[r]); }

/// The number of cells of one index of axes 0 and d - 1 together: the product of the middle axes' cells.
std::size_t middleCells(const meshes::BoxMesh& mesh) {
  std::size_t M = 1;
  for (int a = 1; a + 1 < mesh.dim(); ++a) M *= static_cast<std::size_t>(mesh.cells(a));
  return M;
}

}  // namespace

SlabNoisyGd::SlabNoisyGd(MPI_Comm comm, const meshes::BoxMesh& mesh, GradientField gradientD,
                         GradientField gradientDPrime, double eta, meshes::AxisValues stddev)
    : SlabNoisyGd(comm, mesh, std::vector<GradientField>{std::move(gradientD)},
                  std::vector<GradientField>{std::move(gradientDPrime)}, eta, stddev) {}

SlabNoisyGd::SlabNoisyGd(MPI_Comm comm, const meshes::BoxMesh& mesh, std::vector<GradientField> batchesD,
                         std::vector<GradientField> batchesDPrime, double eta, meshes::AxisValues stddev)
    : SlabNoisyGd(comm, mesh, std::move(batchesD), std::move(batchesDPrime), {}, {}, eta, stddev) {}

namespace {
std::vector<GradientField> gradientsOf(const std::vector<SlabNoisyGd::WeightedBatch>& mixture) {
  std::vector<GradientField> out;
  for (const auto& b : mixture) out.push_back(b.gradient);
  return out;
}
std::vector<double> weightsOf(const std::vector<SlabNoisyGd::WeightedBatch>& mixture) {
  if (mixture.empty()) throw std::invalid_argument("SlabNoisyGd: a Poisson mixture needs at least one batch map");
  std::vector<double> out;
  for (const auto& b : mixture) {
    if (!(b.weight > 0.0 && b.weight <= 1.0))
      throw std::invalid_argument("SlabNoisyGd: a Poisson batch map's weight must lie in (0, 1]");
    out.push_back(b.weight);
  }
  return out;
}
}  // namespace

SlabNoisyGd::SlabNoisyGd(MPI_Comm comm, const meshes::BoxMesh& mesh, std::vector<WeightedBatch> mixtureD,
                         std::vector<WeightedBatch> mixtureDPrime, double eta, meshes::AxisValues stddev)
    : SlabNoisyGd(comm, mesh, gradientsOf(mixtureD), gradientsOf(mixtureDPrime), weightsOf(mixtureD),
                  weightsOf(mixtureDPrime), eta, stddev) {}

SlabNoisyGd::SlabNoisyGd(MPI_Comm comm, const meshes::BoxMesh& mesh, std::vector<GradientField> mapsD,
                         std::vector<GradientField> mapsDPrime, std::vector<double> weightsD,
                         std::vector<double> weightsDPrime, double eta, meshes::AxisValues stddev)
    : comm_(comm), mesh_(mesh), weightsD_(std::move(weightsD)), weightsDPrime_(std::move(weightsDPrime)) {
  const bool mixture = !weightsD_.empty();
  if (mapsD.empty() || mapsDPrime.empty() || (!mixture && mapsD.size() != mapsDPrime.size()))
    throw std::invalid_argument("SlabNoisyGd: D and D' need the same number (>= 1) of batch gradients");
  if (mixture && (weightsD_.size() != mapsD.size() || weightsDPrime_.size() != mapsDPrime.size()))
    throw std::invalid_argument("SlabNoisyGd: a Poisson mixture needs one weight per batch map");
  check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &ranks_), "MPI_Comm_size");
  const int d = mesh.dim();
  if (d < 2) throw std::invalid_argument("SlabNoisyGd: the mesh needs at least two axes");
  if (mesh.cells(0) < ranks_ || mesh.cells(d - 1) < ranks_)
    throw std::invalid_argument("SlabNoisyGd: axes 0 and d - 1 need at least one cell per rank (" +
                                std::to_string(ranks_) + " ranks; " + std::to_string(mesh.cells(0)) + " and " +
                                std::to_string(mesh.cells(d - 1)) + " cells)");
  firstOfAxis0_ = split(mesh.cells(0), ranks_);
  firstOfLastAxis_ = split(mesh.cells(d - 1), ranks_);
  stateMesh_ = std::make_unique<meshes::BoxMesh>(restricted(mesh, 0, firstOfAxis0_[rank_], firstOfAxis0_[rank_ + 1]));
  slabMesh_ =
      std::make_unique<meshes::BoxMesh>(restricted(mesh, d - 1, firstOfLastAxis_[rank_], firstOfLastAxis_[rank_ + 1]));
  // The face-map caches of a dataset's maps share one map's limit per layout, so that cyclic batches and Poisson
  // mixtures (many maps) stay within the full batch's bound (measured: 16 maps per dataset on 44 x 18^3 cells, 0.7 GB
  // in all, every map cached).
  const double shareD = 1.0 / static_cast<double>(mapsD.size()), shareDPrime = 1.0 / static_cast<double>(mapsDPrime.size());
  for (auto& g : mapsD) {
    pushStateD_.push_back(std::make_unique<PushForward>(*stateMesh_, g, eta, shareD));
    pushSlabD_.push_back(std::make_unique<PushForward>(*slabMesh_, std::move(g), eta, shareD));
  }
  for (auto& g : mapsDPrime) {
    pushStateDPrime_.push_back(std::make_unique<PushForward>(*stateMesh_, g, eta, shareDPrime));
    pushSlabDPrime_.push_back(std::make_unique<PushForward>(*slabMesh_, std::move(g), eta, shareDPrime));
  }
  // Each layout convolves only its whole axes (a standard deviation of 0 leaves an axis alone).
  meshes::AxisValues lastOnly{}, allButLast = stddev;
  lastOnly[static_cast<std::size_t>(d - 1)] = stddev[static_cast<std::size_t>(d - 1)];
  allButLast[static_cast<std::size_t>(d - 1)] = 0.0;
  noiseState_ = std::make_unique<GaussianConvolution>(*stateMesh_, lastOnly);
  noiseSlab_ = std::make_unique<GaussianConvolution>(*slabMesh_, allButLast);
}

SlabNoisyGd::~SlabNoisyGd() = default;

std::array<Outflow, 2> SlabNoisyGd::step(std::vector<double>& p, std::vector<double>& q, long k) const {
  if (k < 0) throw std::invalid_argument("SlabNoisyGd::step: the step index must be >= 0");
  if (!weightsD_.empty())
    return {stepMixture(p, weightsD_, pushStateD_, pushSlabD_),
            stepMixture(q, weightsDPrime_, pushStateDPrime_, pushSlabDPrime_)};
  const auto b = static_cast<std::size_t>(k % static_cast<long>(pushStateD_.size()));
  return {stepDensity(p, *pushStateD_[b], *pushSlabD_[b]), stepDensity(q, *pushStateDPrime_[b], *pushSlabDPrime_[b])};
}

Outflow SlabNoisyGd::stepDensity(std::vector<double>& field, const PushForward& pushState,
                                 const PushForward& pushSlab) const {
  const int d = mesh_.dim();
  if (field.size() != stateMesh_->totalCells())
    throw std::invalid_argument("SlabNoisyGd::step: a part does not hold this rank's cells");
  Outflow out;
  const auto add = [&out](const Outflow& o) {
    for (std::size_t k = 0; k < out.mass.size(); ++k) out.mass[k] += o.mass[k];
  };
  // The shears in apply()'s order (d - 1, ..., 0), then the passes in apply()'s order (0, ..., d - 1).
  add(pushState.applyShear(d - 1, field));
  std::vector<double>& slab = work_.slab;
  slab.resize(slabMesh_->totalCells());
  transpose(field, slab, true);
  for (int a = d - 2; a >= 0; --a) add(pushSlab.applyShear(a, slab));
  convolve(slab, field, out);
  return out;
}

void SlabNoisyGd::convolve(std::vector<double>& slab, std::vector<double>& field, Outflow& out) const {
  const int d = mesh_.dim();
  const auto add = [&out](const Outflow& o) {
    for (std::size_t k = 0; k < out.mass.size(); ++k) out.mass[k] += o.mass[k];
  };
  for (int a = 0; a <= d - 2; ++a) add(noiseSlab_->applyAxis(a, slab));
  transpose(slab, field, false);
  add(noiseState_->applyAxis(d - 1, field));
}

Outflow SlabNoisyGd::stepMixture(std::vector<double>& field, const std::vector<double>& weights,
                                 const std::vector<std::unique_ptr<PushForward>>& pushState,
                                 const std::vector<std::unique_ptr<PushForward>>& pushSlab) const {
  const int d = mesh_.dim();
  if (field.size() != stateMesh_->totalCells())
    throw std::invalid_argument("SlabNoisyGd::step: a part does not hold this rank's cells");
  Outflow out;
  std::vector<double>& image = work_.image;
  std::vector<double>& slab = work_.slab;
  std::vector<double>& sum = work_.mixture;
  sum.assign(slabMesh_->totalCells(), 0.0);
  slab.resize(slabMesh_->totalCells());
  // Each map's image is summed into every cell in the maps' order on any number of ranks: the values are those of
  // one process.
  for (std::size_t b = 0; b < weights.size(); ++b) {
    Outflow mapOut;
    const auto add = [&mapOut](const Outflow& o) {
      for (std::size_t k = 0; k < mapOut.mass.size(); ++k) mapOut.mass[k] += o.mass[k];
    };
    image = field;
    add(pushState[b]->applyShear(d - 1, image));
    transpose(image, slab, true);
    for (int a = d - 2; a >= 0; --a) add(pushSlab[b]->applyShear(a, slab));
    const double w = weights[b];
    for (std::size_t c = 0; c < sum.size(); ++c) sum[c] += w * slab[c];
    for (std::size_t k = 0; k < out.mass.size(); ++k) out.mass[k] += w * mapOut.mass[k];
  }
  convolve(sum, field, out);
  return out;
}

// The cells rank r's state part shares with rank s's slab: axis-0 indices [A_r, A_r+1), every middle index (a flat
// index m < M over axes 1..d-2, the same in both layouts), last-axis indices [B_s, B_s+1), in runs along axis 0. In
// the state part a run starts at cA_r (m + M k); in the slab at A_r + n0 (m + M (k - B_s)). Both sides walk the runs
// in the same order (k, then m), so a packed block unpacks in place.
void SlabNoisyGd::transpose(const std::vector<double>& in, std::vector<double>& out, bool stateToSlabs) const {
  const std::size_t n0 = static_cast<std::size_t>(mesh_.cells(0)), M = middleCells(mesh_);
  const auto& A = firstOfAxis0_;
  const auto& B = firstOfLastAxis_;
  const auto forEachRun = [&](int r, int s, auto&& f) {
    const std::size_t cR = width(A, r);
    for (std::size_t k = static_cast<std::size_t>(B[s]); k < static_cast<std::size_t>(B[s + 1]); ++k)
      for (std::size_t m = 0; m < M; ++m)
        f(cR * (m + M * k), static_cast<std::size_t>(A[r]) + n0 * (m + M * (k - static_cast<std::size_t>(B[s]))), cR);
  };
  const auto block = [&](int r, int s) { return width(A, r) * M * width(B, s); };
  // (state rank, slab rank) of this rank's exchange with `peer`, as sender and as receiver.
  const auto sending = [&](int peer) { return stateToSlabs ? std::pair{rank_, peer} : std::pair{peer, rank_}; };
  const auto receiving = [&](int peer) { return stateToSlabs ? std::pair{peer, rank_} : std::pair{rank_, peer}; };
  const Exchange exchange(
      ranks_, [&](int peer) { return std::apply(block, sending(peer)); },
      [&](int peer) { return std::apply(block, receiving(peer)); });
  std::vector<double>& send = work_.send;
  std::vector<double>& receive = work_.receive;
  send.resize(in.size());
  receive.resize(out.size());
  for (int peer = 0; peer < ranks_; ++peer) {
    double* to = send.data() + exchange.sendOffsets[peer];
    const auto [r, s] = sending(peer);
    forEachRun(r, s, [&](std::size_t stateAt, std::size_t slabAt, std::size_t length) {
      std::memcpy(to, in.data() + (stateToSlabs ? stateAt : slabAt), length * sizeof(double));
      to += length;
    });
  }
  exchange.run(send, receive, comm_);
  for (int peer = 0; peer < ranks_; ++peer) {
    const double* from = receive.data() + exchange.receiveOffsets[peer];
    const auto [r, s] = receiving(peer);
    forEachRun(r, s, [&](std::size_t stateAt, std::size_t slabAt, std::size_t length) {
      std::memcpy(out.data() + (stateToSlabs ? slabAt : stateAt), from, length * sizeof(double));
      from += length;
    });
  }
}

std::vector<double> SlabNoisyGd::pointValues(const std::vector<double>& part) const {
  const int first = firstOfAxis0_[rank_], last = firstOfAxis0_[rank_ + 1];
  const std::size_t cA = static_cast<std::size_t>(last - first), runs = part.size() / cA;
  const bool lowerNeighbour = rank_ > 0, upperNeighbour = rank_ + 1 < ranks_;
  // This rank's first and last axis-0 layers go to the neighbours; theirs come back.
  std::vector<double> mineLow(runs), mineHigh(runs), theirsLow(runs, 0.0), theirsHigh(runs, 0.0);
  for (std::size_t run = 0; run < runs; ++run) {
    mineLow[run] = std::max(part[cA * run], 0.0);
    mineHigh[run] = std::max(part[cA * run + cA - 1], 0.0);
  }
  const int count = static_cast<int>(runs);
  if (lowerNeighbour)
    check(MPI_Sendrecv(mineLow.data(), count, MPI_DOUBLE, rank_ - 1, 0, theirsLow.data(), count, MPI_DOUBLE, rank_ - 1,
                       1, comm_, MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
  if (upperNeighbour)
    check(MPI_Sendrecv(mineHigh.data(), count, MPI_DOUBLE, rank_ + 1, 1, theirsHigh.data(), count, MPI_DOUBLE,
                       rank_ + 1, 0, comm_, MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
  const int lo = lowerNeighbour ? 1 : 0, hi = upperNeighbour ? 1 : 0;
  const meshes::BoxMesh grown = restricted(mesh_, 0, first - lo, last + hi);
  const std::size_t cG = cA + static_cast<std::size_t>(lo + hi);
  std::vector<double> averages(cG * runs), points(cG * runs);
  for (std::size_t run = 0; run < runs; ++run) {
    double* row = averages.data() + cG * run;
    if (lo) row[0] = theirsLow[run];
    for (std::size_t i = 0; i < cA; ++i) row[static_cast<std::size_t>(lo) + i] = std::max(part[cA * run + i], 0.0);
    if (hi) row[cG - 1] = theirsHigh[run];
  }
  pointValuesOfWholeField(grown, averages.data(), points.data());
  std::vector<double> out(part.size());
  for (std::size_t run = 0; run < runs; ++run)
    std::memcpy(out.data() + cA * run, points.data() + cG * run + lo, cA * sizeof(double));
  return out;
}

WholeFieldDivergences SlabNoisyGd::divergences(const std::vector<double>& p, const std::vector<double>& q,
                                               const WholeFieldSettings& settings) const {
  if (p.size() != stateMesh_->totalCells() || q.size() != stateMesh_->totalCells())
    throw std::invalid_argument("SlabNoisyGd::divergences: a part does not hold this rank's cells");
  return wholeFieldDivergencesOfParts(comm_, *stateMesh_, rank_ == 0, rank_ + 1 == ranks_, p, q, pointValues(p),
                                      pointValues(q), settings);
}

std::vector<double> SlabNoisyGd::part(const std::vector<double>& whole) const {
  if (whole.size() != mesh_.totalCells()) throw std::invalid_argument("SlabNoisyGd::part: not a whole field");
  const std::size_t n0 = static_cast<std::size_t>(mesh_.cells(0));
  const std::size_t first = static_cast<std::size_t>(firstOfAxis0_[rank_]);
  const std::size_t cA = static_cast<std::size_t>(firstOfAxis0_[rank_ + 1]) - first;
  const std::size_t runs = whole.size() / n0;
  std::vector<double> out(cA * runs);
  for (std::size_t run = 0; run < runs; ++run)
    std::memcpy(out.data() + cA * run, whole.data() + n0 * run + first, cA * sizeof(double));
  return out;
}

std::vector<double> SlabNoisyGd::gather(const std::vector<double>& part) const {
  const std::size_t n0 = static_cast<std::size_t>(mesh_.cells(0));
  const std::size_t runs = mesh_.totalCells() / n0;
  std::vector<int> counts(ranks_), offsets(ranks_);
  for (int r = 0, at = 0; r < ranks_; ++r) {
    counts[r] = static_cast<int>(static_cast<std::size_t>(firstOfAxis0_[r + 1] - firstOfAxis0_[r]) * runs);
    offsets[r] = at;
    at += counts[r];
  }
  if (part.size() != static_cast<std::size_t>(counts[rank_]))
    throw std::invalid_argument("SlabNoisyGd::gather: a part does not hold this rank's cells");
  std::vector<double> all(mesh_.totalCells()), whole(mesh_.totalCells());
  check(MPI_Allgatherv(part.data(), counts[rank_], MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE,
                       comm_),
        "MPI_Allgatherv");
  for (int r = 0; r < ranks_; ++r) {
    const std::size_t cR = static_cast<std::size_t>(firstOfAxis0_[r + 1] - firstOfAxis0_[r]);
    for (std::size_t run = 0; run < runs; ++run)
      std::memcpy(whole.data() + n0 * run + static_cast<std::size_t>(firstOfAxis0_[r]),
                  all.data() + offsets[r] + cR * run, cR * sizeof(double));
  }
  return whole;
}

}  // namespace fpdp::solver
