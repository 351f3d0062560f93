#include "app/run/CompanionSolve.hpp"

#include <cmath>

#include "app/run/ModelBuilding.hpp"
#include "app/run/DivergenceTable.hpp"
#include "app/run/NumericalFaults.hpp"
#include "app/run/ProgressReporter.hpp"
#include "app/platform/PetscConfiguration.hpp"
#include "app/run/MinibatchSchedule.hpp"
#include "app/run/RunPlan.hpp"
#include "app/run/RunStepper.hpp"
#include "models/DivergenceGrids.hpp"

namespace fpdp::app {


bool hasTimeDiscretisationError(const Case& c) {
  if (c.dynamics == "noisy_gd") return c.noisyGd.diffusion == "fokker_planck";
  return effectiveTsType(c) != kExponentialTsType;
}

Case companionCase(const Case& c, int factor, std::string* timeUnrefined) {
  Case coarse = c;
  for (int a = 0; a < c.mesh.dim; ++a) {
    coarse.mesh.cells[a] = c.mesh.cells[a] / factor;
    coarse.mesh.grading[a] = std::pow(c.mesh.grading[a], factor);
  }
  // The time step coarsened with the mesh (a joint refinement: the estimate then sees the time error too).
  std::string why;
  if (hasTimeDiscretisationError(c)) {
    if (c.dynamics == "noisy_gd") {
      if (c.noisyGd.diffusion_substeps % factor == 0)
        coarse.noisyGd.diffusion_substeps = c.noisyGd.diffusion_substeps / factor;
      else
        why = "noisy_gd.diffusion_substeps = " + std::to_string(c.noisyGd.diffusion_substeps) +
              " is not a multiple of " + std::to_string(factor);
    } else if (c.output.every % factor == 0 && c.time.steps() % factor == 0) {
      coarse.time.dt = c.time.dt * factor;
      coarse.output.every = c.output.every / factor;
    } else {
      why = "output.every = " + std::to_string(c.output.every) + " and the " + std::to_string(c.time.steps()) +
            " time steps are not both multiples of " + std::to_string(factor);
    }
  }
  if (timeUnrefined) *timeUnrefined = why;
  // The companions compute the Poisson mixture as the run does (batch.mixture = "auto" decides by the cells): the
  // displacement lattice's own error is bounded apart (docs/noisy-gd.md §9.2), its spacing is the run's.
  if (c.batch.sampling == "poisson" && c.batch.mixture == "auto")
    coarse.batch.mixture = usesPoissonLattice(c, buildEmpiricalLosses(c)) ? "lattice" : "enumerate";
  // A coarser mesh is less sign-preserving where the scheme is not (anisotropic diffusion's stencil): its negative
  // mass is part of the error the meshes' differences measure, and the numbers resting on it are flagged by the run's
  // own noise-floor statuses; it does not stop a companion (it left the anisotropic cases without any estimate).
  std::erase(coarse.faults.stopOn, std::string("negative_mass"));
  coarse.output.plots = false;
  coarse.output.fields = false;
  coarse.output.vtk = false;
  coarse.output.checkpointEvery = 0;
  coarse.accuracy.estimate = false;
  return coarse;
}

std::map<long, solver::DivergenceValues> solveForDivergences(const Case& coarse, long stepFactor, MPI_Comm comm,
                                                             std::string& fallback, const CompanionProgress& progress,
                                                             const std::string& label, const std::string& phase,
                                                             bool* exactFirstStep) {
  std::map<long, solver::DivergenceValues> values;
  const RunPlan plan(coarse, comm, nullptr);
  fallback = plan.autoFallback;
  if (exactFirstStep) *exactFirstStep = plan.exactFirstStep;
  std::vector<double> orders;
  for (const auto& o : coarse.divergence.orders) orders.push_back(o.alpha);
  // The functionals the estimate compares: the divergences both ways and eps_exact, without histograms.
  solver::FunctionalSettings settings{orders, {}, 0, coarse.noise.sigmaFor(false, plan.dim), plan.representation};
  settings.epsilonDeltas = coarse.privacy.deltaGrid;  // eps_exact at every delta of the run
  settings.reverseDirection = true;                   // R_alpha(q || p), KL(q || p)
  // delta(eps) on the run's eps grid (hockey_stick.csv's error estimates).
  settings.hockeyStickEps = models::uniformEpsGrid(coarse.divergence.hockeyStickEpsMax, coarse.divergence.hockeyStickEpsStep);
  const solver::DivergenceFunctionals divergences(plan.mesh, settings);
  RunObservers observers;
  observers.add<DivergenceCollector>(values, stepFactor);
  auto& reporter = observers.add<ProgressReporter>(plan.steps(), progress.print, label, progress.hook, phase);
  NumericalFaultMonitor faults(coarse.faults, plan.mesh);
  faults.setNegativeMassRemedy(plan.negativeMassRemedy());
  const std::vector<std::string> columns = divergenceColumns(coarse, plan.constrained());
  RunStepper stepper(plan, divergences, faults, observers, columns, nullptr, nullptr);
  stepper.run();
  reporter.close();
  return values;
}

std::vector<int> companionFactors(const Case& c) {
  const auto allow = [&c](int factor) {
    for (int a = 0; a < c.mesh.dim; ++a)
      if (c.mesh.cells[a] / factor < kSmallestCompanionCells) return false;
    return true;
  };
  if (!allow(4)) return {};
  return allow(8) ? std::vector<int>{2, 4, 8} : std::vector<int>{2, 4};
}

std::string cellsText(const Case& c) {
  std::string t;
  for (int a = 0; a < c.mesh.dim; ++a) {
    if (a > 0) t += 'x';
    t += std::to_string(c.mesh.cells[static_cast<std::size_t>(a)]);
  }
  return t;
}

CompanionValues solveCompanions(const Case& c, MPI_Comm comm, const CompanionProgress& progress) {
  CompanionValues result;
  const std::vector<int> factors = companionFactors(c);
  if (factors.empty()) {
    for (int a = 0; a < c.mesh.dim; ++a)
      if (c.mesh.cells[a] / 4 < kSmallestCompanionCells)
        result.unavailable = "mesh.cells[" + std::to_string(a) + "] = " + std::to_string(c.mesh.cells[a]) +
                             " leaves the coarser companion fewer than " + std::to_string(kSmallestCompanionCells) +
                             " cells";
    return result;
  }
  std::vector<Case> coarse;
  std::vector<std::string> timeUnrefined(factors.size());
  for (std::size_t level = 0; level < factors.size(); ++level)
    coarse.push_back(companionCase(c, factors[level], &timeUnrefined[level]));
  const bool langevinTs = hasTimeDiscretisationError(c) && c.dynamics != "noisy_gd";
  // The estimate needs the time step coarsened on 2h and 4h; an 8h level that cannot be coarsened is left out.
  if (factors.size() > 2 && !timeUnrefined[2].empty()) {
    coarse.pop_back();
    timeUnrefined.pop_back();
  }
  for (std::size_t level = 0; level < coarse.size(); ++level)
    result.meshDescription += (level == 0 ? "" : level + 1 == coarse.size() ? " and " : ", ") + cellsText(coarse[level]);
  result.meshDescription += " cells";
  result.timeUnrefined = !timeUnrefined[0].empty() ? timeUnrefined[0] : timeUnrefined[1];
  if (hasTimeDiscretisationError(c) && result.timeUnrefined.empty())
    result.timeDescription = langevinTs ? "time.dt x 2, x 4" : "noisy_gd.diffusion_substeps / 2, / 4";
  if (!result.timeUnrefined.empty())
    result.timeUnrefined = "the time step is not coarsened with the mesh (" + result.timeUnrefined +
                           "), so the estimate does not see the time-discretisation error";
  for (std::size_t level = 0; level < coarse.size(); ++level) {
    try {
      const long factor = factors[level];
      const long stepFactor = langevinTs && timeUnrefined[level].empty() ? factor : 1;
      std::string fallback;
      result.levels.push_back(solveForDivergences(
          coarse[level], stepFactor, comm, fallback, progress,
          "error estimate, " + std::to_string(factor) + "x coarser mesh (" + cellsText(coarse[level]) + " cells)",
          "companion_" + std::to_string(factors[level]) + "h"));
      // "auto" expected the exponential integrator (exact in time) and fell back to BDF: a time error the companions
      // did not coarsen.
      if (!fallback.empty() && result.timeUnrefined.empty() && !hasTimeDiscretisationError(c))
        result.timeUnrefined = "solver.ts_type = \"auto\" fell back to BDF, whose time-discretisation error the "
                               "estimate does not see";
    } catch (const RunInterrupted&) {
      throw;
    } catch (const std::exception& e) {
      // The 8h level only confirms faster orders: where its mesh is too coarse for the case (a numerical fault on a
      // few cells), the estimate goes on with 2h and 4h.
      if (level >= 2) {
        const std::string dropped = cellsText(coarse[level]);
        coarse.resize(level);
        result.meshDescription.clear();
        for (std::size_t l = 0; l < coarse.size(); ++l)
          result.meshDescription += (l == 0 ? "" : " and ") + cellsText(coarse[l]);
        result.meshDescription += " cells (the " + dropped + "-cell solve failed and was left out)";
        break;
      }
      result.levels.clear();
      result.unavailable = "the companion solve on " + cellsText(coarse[level]) + " cells failed: " + e.what();
      break;
    }
  }
  return result;
}

}  // namespace fpdp::app
