#pragma once
// kl_rate.csv (Langevin runs; MATH.md §4): at every output step the rate of KL both ways — by the identity, by
// quadrature, and as the central difference of the computed KL between neighbouring output steps — the integrated
// Young bound KL_0 + int (1/4) E_p|...|^2 (trapezoid over the output times) with its ratio to the computed KL, and
// with Sigma = Sigma' the crude bound t sup|b - b'|^2 / (4 lambda_min(Sigma)); TV beside Pinsker's bound. The same
// table is the group /kl_rate of fpdp.h5.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "app/run/RunObserver.hpp"
#include "io/Column.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "solver/functionals/KlRate.hpp"
#include "solver/noisygd/NoisyGradientDescent.hpp"

namespace fpdp::app {

class KlRateOutput final : public RunObserver {
public:
  /// Rank 0 (`writer`) writes DIR/kl_rate.csv at the end. `cellGap`: grad L_D - grad L_D' at the owned cells
  /// (solver::gradientGapAtCells); `gradientGap`: the measured sup|grad L_D - grad L_D'|.
  KlRateOutput(const std::string& directory, bool writer, const meshes::DistributedBoxMesh& mesh, const Case& c,
               std::shared_ptr<const solver::CellDriftGap> cellGap, double gradientGap);

  void observe(const OutputStep& s) override;
  void saveState(io::CheckpointData& ck) const override;
  void restoreState(const io::CheckpointData& ck, const RestoredStep& at) override;
  /// Writes kl_rate.csv (rank 0) and the same table as /kl_rate of fpdp.h5 (collective).
  void writeHdf5(io::Hdf5Output& h5) override;

private:
  /// The columns of kl_rate.csv and /kl_rate.
  static const std::vector<io::Column>& columns();
  struct Row {
    long step;
    double t, kl, identity, boundIntegrand, tv;
    std::array<double, 3> gapSquared;
  };
  std::string directory_;
  bool writer_;
  models::Matrix sigma_, sigmaPrime_;
  double gradientGap_;
  std::unique_ptr<solver::KlRateFunctional> rate_;
  std::vector<Row> rows_;
};

}  // namespace fpdp::app
