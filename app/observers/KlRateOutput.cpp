#include "app/observers/KlRateOutput.hpp"

#include <cmath>
#include <limits>

#include <Eigen/Eigenvalues>

#include "io/CsvTable.hpp"
#include "models/PrivacyBounds.hpp"

namespace fpdp::app {

KlRateOutput::KlRateOutput(const std::string& directory, bool writer, const meshes::DistributedBoxMesh& mesh,
                           const Case& c, const solver::GradientField& gradientD,
                           const solver::GradientField& gradientDPrime, double gradientGap)
    : directory_(directory),
      writer_(writer),
      sigma_(c.noise.sigmaFor(false, c.mesh.dim)),
      sigmaPrime_(c.noise.sigmaFor(true, c.mesh.dim)),
      gradientGap_(gradientGap),
      rate_(std::make_unique<solver::KlRateFunctional>(mesh, gradientD, gradientDPrime, sigma_, sigmaPrime_)) {}

void KlRateOutput::observe(const OutputStep& s) {
  const auto kr = rate_->evaluate(s.u);
  rows_.push_back({s.step, s.t, s.values.kl, kr.identity, kr.boundIntegrand, s.values.tv, kr.gapSquared});
}

void KlRateOutput::saveState(io::CheckpointData& ck) const {
  std::vector<std::vector<double>> table;
  for (const auto& r : rows_)
    table.push_back({static_cast<double>(r.step), r.t, r.kl, r.identity, r.boundIntegrand, r.tv, r.gapSquared[0],
                     r.gapSquared[1], r.gapSquared[2]});
  ck.putTable("/run/kl_rate", table, 9);
}

void KlRateOutput::restoreState(const io::CheckpointData& ck, const RestoredStep& at) {
  for (const auto& r : ck.table("/run/kl_rate", 9, at.outputSteps))
    rows_.push_back({static_cast<long>(r[0]), r[1], r[2], r[3], r[4], r[5], {r[6], r[7], r[8]}});
}

void KlRateOutput::writeHdf5(io::Hdf5Output&) {
  if (!writer_) return;
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const bool equalNoise = (sigma_ - sigmaPrime_).norm() == 0.0;
  const double lambdaMin = Eigen::SelfAdjointEigenSolver<models::Matrix>(sigma_).eigenvalues().minCoeff();
  io::CsvTable table(directory_ + "/kl_rate.csv",
                     {"step", "t", "kl", "dkl_dt_identity", "dkl_dt_finite_difference", "kl_bound_integrated",
                      "bound_to_kl", "kl_bound_crude", "tv", "tv_pinsker_bound", "gap_sq_x", "gap_sq_y", "gap_sq_z"});
  double integral = 0.0;
  for (std::size_t n = 0; n < rows_.size(); ++n) {
    const auto& r = rows_[n];
    if (n > 0) integral += 0.5 * (r.boundIntegrand + rows_[n - 1].boundIntegrand) * (r.t - rows_[n - 1].t);
    const double fd = (n > 0 && n + 1 < rows_.size())
                          ? (rows_[n + 1].kl - rows_[n - 1].kl) / (rows_[n + 1].t - rows_[n - 1].t)
                          : kNaN;
    const double bound = rows_.front().kl + integral;
    const double crude = equalNoise ? models::klBoundSameNoise(gradientGap_, lambdaMin, r.t) : kNaN;
    table.addRow({static_cast<double>(r.step), r.t, r.kl, r.identity, fd, bound, r.kl > 0 ? bound / r.kl : kNaN,
                  crude, r.tv, std::sqrt(0.5 * r.kl), r.gapSquared[0], r.gapSquared[1], r.gapSquared[2]});
  }
}

}  // namespace fpdp::app
