#include "app/run/CompanionSolve.hpp"

#include <cmath>

#include "app/observers/DivergenceSeries.hpp"
#include "app/observers/NumericalFaults.hpp"
#include "app/run/RunPlan.hpp"
#include "app/run/RunStepper.hpp"

namespace fpdp::app {

namespace {

/// Keeps the divergences of every output step.
class CompanionCollector final : public RunObserver {
public:
  explicit CompanionCollector(std::map<long, solver::DivergenceValues>& values) : values_(values) {}
  void observe(const OutputStep& s) override { values_[s.step] = s.values; }

private:
  std::map<long, solver::DivergenceValues>& values_;
};

constexpr int kSmallestCompanionCells = 4;

}  // namespace

Case companionCase(const Case& c, int factor) {
  Case coarse = c;
  for (int a = 0; a < c.mesh.dim; ++a) {
    coarse.mesh.cells[a] = c.mesh.cells[a] / factor;
    coarse.mesh.grading[a] = std::pow(c.mesh.grading[a], factor);
  }
  coarse.output.plots = false;
  coarse.output.fields = false;
  coarse.output.vtk = false;
  coarse.output.checkpointEvery = 0;
  coarse.accuracy.estimate = false;
  return coarse;
}

namespace {

/// The divergences at every output step of one companion case. Collective.
std::map<long, solver::DivergenceValues> solveOne(const Case& coarse, MPI_Comm comm) {
  std::map<long, solver::DivergenceValues> values;
  const RunPlan plan(coarse, comm, nullptr);
  std::vector<double> orders;
  for (const auto& o : coarse.divergence.orders) orders.push_back(o.alpha);
  // The functionals the estimate compares: the divergences and eps_exact, without curves and histograms.
  solver::FunctionalSettings settings{orders, {}, 0, coarse.noise.sigmaFor(false, plan.dim), plan.representation};
  settings.epsilonDeltas = coarse.privacy.deltaGrid;  // eps_exact at every delta of the run
  const solver::DivergenceFunctionals divergences(plan.mesh, settings);
  RunObservers observers;
  observers.add<CompanionCollector>(values);
  NumericalFaultMonitor faults(coarse.faults, plan.mesh);
  const std::vector<std::string> columns = divergenceColumns(coarse, plan.constrained());
  RunStepper stepper(plan, divergences, faults, observers, columns, nullptr, nullptr);
  stepper.run();
  return values;
}

}  // namespace

CompanionValues solveCompanions(const Case& c, MPI_Comm comm) {
  CompanionValues result;
  const Case coarse[2] = {companionCase(c, 2), companionCase(c, 4)};
  for (int level = 0; level < 2; ++level) {
    result.meshDescription += level ? " and " : "";
    for (int a = 0; a < c.mesh.dim; ++a) result.meshDescription += (a ? "x" : "") + std::to_string(coarse[level].mesh.cells[a]);
  }
  result.meshDescription += " cells";
  for (int a = 0; a < c.mesh.dim; ++a)
    if (coarse[1].mesh.cells[a] < kSmallestCompanionCells)
      result.unavailable = "mesh.cells[" + std::to_string(a) + "] = " + std::to_string(c.mesh.cells[a]) +
                           " leaves the coarser companion fewer than " + std::to_string(kSmallestCompanionCells) +
                           " cells";
  if (!result.unavailable.empty()) return result;
  for (int level = 0; level < 2; ++level) {
    try {
      result.atStep[level] = solveOne(coarse[level], comm);
    } catch (const std::exception& e) {
      result.atStep[0].clear();
      result.atStep[1].clear();
      result.unavailable = "the companion solve on " + result.meshDescription + " failed: " + e.what();
      break;
    }
  }
  return result;
}

}  // namespace fpdp::app
