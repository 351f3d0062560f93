#include "app/observers/KlRateOutput.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include <Eigen/Eigenvalues>

#include "app/run/StepColumns.hpp"
#include "io/CsvTable.hpp"
#include "models/PrivacyBounds.hpp"

namespace fpdp::app {

KlRateOutput::KlRateOutput(const std::string& directory, bool writer, const meshes::DistributedBoxMesh& mesh,
                           const Case& c, std::shared_ptr<const solver::CellDriftGap> cellGap, double gradientGap)
    : directory_(directory),
      writer_(writer),
      sigma_(c.noise.sigmaFor(false, c.mesh.dim)),
      sigmaPrime_(c.noise.sigmaFor(true, c.mesh.dim)),
      gradientGap_(gradientGap),
      rate_(std::make_unique<solver::KlRateFunctional>(mesh, std::move(cellGap), sigma_, sigmaPrime_)) {}

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

const std::vector<io::Column>& KlRateOutput::columns() {
  namespace u = io::units;
  static const std::vector<io::Column> columns{
      outputStepColumn(),
      outputTimeColumn(),
      io::real("kl", u::kNats, "The computed KL(p || q)."),
      io::real("dkl_dt_identity", u::kNatsPerTime, "d KL/dt from the rate identity by quadrature."),
      io::real("dkl_dt_finite_difference", u::kNatsPerTime,
               "d KL/dt as the central difference of the computed KL (NaN at the ends)."),
      io::real("kl_bound_integrated", u::kNats, "The integrated Young bound on KL."),
      io::real("bound_to_kl", u::kOne, "kl_bound_integrated / kl."),
      io::real("kl_bound_crude", u::kNats,
               "The bound t sup|b - b'|^2 / (4 lambda_min(Sigma)) (NaN unless Sigma = Sigma')."),
      io::real("tv", u::kOne, "The total variation distance."),
      io::real("tv_pinsker_bound", u::kOne, "Pinsker's bound sqrt(KL/2) on TV."),
      io::real("gap_sq_x", u::kDriftSquared, "E_p[(b - b')_x^2], the squared drift difference along x."),
      io::real("gap_sq_y", u::kDriftSquared, "E_p[(b - b')_y^2], the squared drift difference along y (0 if d < 2)."),
      io::real("gap_sq_z", u::kDriftSquared, "E_p[(b - b')_z^2], the squared drift difference along z (0 if d < 3).")};
  return columns;
}

void KlRateOutput::writeHdf5(io::Hdf5Output& h5) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const bool equalNoise = (sigma_ - sigmaPrime_).norm() == 0.0;
  const double lambdaMin = Eigen::SelfAdjointEigenSolver<models::Matrix>(sigma_).eigenvalues().minCoeff();
  std::optional<io::CsvTable> csv;
  if (writer_) csv.emplace(directory_ + "/kl_rate.csv", io::columnNames(columns()));
  std::vector<std::vector<double>> table;
  double integral = 0.0;
  for (std::size_t n = 0; n < rows_.size(); ++n) {
    const auto& r = rows_[n];
    if (n > 0) integral += 0.5 * (r.boundIntegrand + rows_[n - 1].boundIntegrand) * (r.t - rows_[n - 1].t);
    const double fd = (n > 0 && n + 1 < rows_.size())
                          ? (rows_[n + 1].kl - rows_[n - 1].kl) / (rows_[n + 1].t - rows_[n - 1].t)
                          : kNaN;
    const double bound = rows_.front().kl + integral;
    const double crude = equalNoise ? models::klBoundSameNoise(gradientGap_, lambdaMin, r.t) : kNaN;
    table.push_back({static_cast<double>(r.step), r.t, r.kl, r.identity, fd, bound, r.kl > 0 ? bound / r.kl : kNaN,
                     crude, r.tv, std::sqrt(0.5 * r.kl), r.gapSquared[0], r.gapSquared[1], r.gapSquared[2]});
    if (csv) csv->addRow(table.back());
  }
  csv.reset();
  h5.writeTable("kl_rate", columns(), table);  // collective
}

}  // namespace fpdp::app
