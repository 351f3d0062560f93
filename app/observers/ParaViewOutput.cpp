#include "app/observers/ParaViewOutput.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "solver/functionals/Divergences.hpp"

namespace fpdp::app {

namespace {

/// log(p/q) as log p - log q (no overflow of the ratio), each density raised to its noise floor first (docs/output.md):
/// a scheme that is not sign-preserving leaves round-off values (of either sign) where the density is below them, and
/// there the ratio is not known; NaN only where a density is <= 0 with no floor (an exact zero).
double logRatio(double p, double q, double floorP, double floorQ) {
  p = std::max(p, floorP);
  q = std::max(q, floorQ);
  if (p > 0 && q > 0) return std::log(p) - std::log(q);
  return std::numeric_limits<double>::quiet_NaN();
}

/// p^alpha q^(1-alpha) for alpha > 1 as exp(alpha log p + (1-alpha) log q) (no intermediate overflow), with its
/// limits where a density is not positive (negative cell values are treated as 0: they are never clipped in the
/// solution, docs/scheme.md §3, only here).
double renyiIntegrand(double p, double q, double alpha) {
  if (p <= 0) return 0.0;
  if (q <= 0) return std::numeric_limits<double>::infinity();
  return std::exp(alpha * std::log(p) + (1.0 - alpha) * std::log(q));
}

}  // namespace

ParaViewOutput::ParaViewOutput(const std::string& directory, const meshes::DistributedBoxMesh& mesh,
                               const solver::GradientField& gradientD, const solver::GradientField& gradientDPrime,
                               double firstOrder, const std::string& firstOrderLabel, bool vtk)
    : directory_(directory), mesh_(mesh), alpha_(firstOrder), integrandName_("renyi_integrand_" + firstOrderLabel) {
  if (!(firstOrder > 1)) throw std::logic_error("ParaViewOutput: Renyi order must be > 1");
  if (!vtk) return;
  const auto n = static_cast<std::size_t>(mesh.owned().size());
  driftP_.resize(3 * n);
  driftQ_.resize(3 * n);
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const auto c = mesh.box().centreAt({static_cast<int>(i), static_cast<int>(j), static_cast<int>(k)});
    const auto gD = gradientD(c), gDp = gradientDPrime(c);
    for (int a = 0; a < 3; ++a) {
      driftP_[3 * static_cast<std::size_t>(l) + a] = a < mesh.dim() ? -gD[a] : 0.0;
      driftQ_[3 * static_cast<std::size_t>(l) + a] = a < mesh.dim() ? -gDp[a] : 0.0;
    }
  });
  vtk_ = std::make_unique<io::VtkOutput>(directory, mesh);
}

void ParaViewOutput::writeStep(long step, double time, Vec p, Vec q, const std::vector<std::string>& columns,
                               const std::vector<double>& row) {
  std::vector<io::StepScalar> scalars;
  for (std::size_t c = 0; c < columns.size() && c < row.size(); ++c) scalars.push_back({columns[c], row[c]});
  steps_.push_back({step, time, scalars});
  if (!vtk_) return;
  const auto n = static_cast<std::size_t>(mesh_.owned().size());
  std::vector<io::CellArray> cells{{"p", 1, std::vector<double>(n)},
                                   {"q", 1, std::vector<double>(n)},
                                   {"log_ratio", 1, std::vector<double>(n)},
                                   {"log_ratio_resolved", 1, std::vector<double>(n)},
                                   {integrandName_, 1, std::vector<double>(n)},
                                   {"drift_p", 3, driftP_},
                                   {"drift_q", 3, driftQ_}};
  // The noise floors: 10 times the most negative value of each density over the mesh (the divergences' noise floor,
  // solver::DivergenceFunctionals::kNoiseFloorFactor), 0 without negative values.
  PetscReal minP = 0, minQ = 0;
  FPDP_PETSC(VecMin(p, nullptr, &minP));
  FPDP_PETSC(VecMin(q, nullptr, &minQ));
  const double factor = solver::DivergenceFunctionals::kNoiseFloorFactor;
  const double floorP = factor * std::max(-minP, 0.0), floorQ = factor * std::max(-minQ, 0.0);
  const PetscScalar *pa, *qa;
  FPDP_PETSC(VecGetArrayRead(p, &pa));
  FPDP_PETSC(VecGetArrayRead(q, &qa));
  for (std::size_t l = 0; l < n; ++l) {
    cells[0].values[l] = pa[l];
    cells[1].values[l] = qa[l];
    cells[2].values[l] = logRatio(pa[l], qa[l], floorP, floorQ);
    cells[3].values[l] = pa[l] > floorP && qa[l] > floorQ ? 1.0 : 0.0;
    cells[4].values[l] = renyiIntegrand(pa[l], qa[l], alpha_);
  }
  FPDP_PETSC(VecRestoreArrayRead(q, &qa));
  FPDP_PETSC(VecRestoreArrayRead(p, &pa));
  vtk_->writeStep(step, time, cells, scalars);
}

void ParaViewOutput::restoreSteps(const std::vector<std::string>& columns,
                                  const std::vector<std::vector<double>>& rows) {
  steps_.clear();
  for (const auto& row : rows) {
    std::vector<io::StepScalar> scalars;
    for (std::size_t c = 0; c < columns.size() && c < row.size(); ++c) scalars.push_back({columns[c], row[c]});
    // divergence.csv's first two columns are the step and the time.
    steps_.push_back({static_cast<long>(row.at(0)), row.at(1), scalars});
    if (vtk_) vtk_->addToCollection(static_cast<long>(row.at(0)), row.at(1));
  }
}

void ParaViewOutput::writeXdmf() {
  PetscMPIInt rank;
  FPDP_PETSC(MPI_Comm_rank(mesh_.comm(), &rank));
  int ok = 1;
  std::string error;
  if (rank == 0) {
    try {
      io::writeXdmf(directory_ + "/fpdp.xmf", "fpdp.h5", mesh_.box(), {"p", "q"}, steps_);
    } catch (const std::exception& e) {
      ok = 0;
      error = e.what();
    }
  }
  FPDP_PETSC(MPI_Bcast(&ok, 1, MPI_INT, 0, mesh_.comm()));
  if (!ok) throw std::runtime_error(rank == 0 ? error : "writing fpdp.xmf failed on rank 0");
}

}  // namespace fpdp::app
