#include "app/commands/CommandFailure.hpp"

#include <new>

#include "app/case/CaseReader.hpp"
#include "app/run/Checkpoint.hpp"
#include "app/platform/CommandLine.hpp"
#include "app/run/OutputDirectory.hpp"
#include "meshes/PetscHandles.hpp"
#include "solver/discretisation/LangevinDiscretisation.hpp"

namespace fpdp::app {

CommandFailure describeFailure(std::exception_ptr e, const PetscErrorCapture* petscErrors, const std::string& failed) {
  const auto badInput = [](const std::exception& x) { return CommandFailure{2, "error", x.what()}; };
  try {
    std::rethrow_exception(e);
  } catch (const UsageError& x) {
    return badInput(x);
  } catch (const InputError& x) {
    return badInput(x);
  } catch (const SolverConfigurationError& x) {
    return badInput(x);
  } catch (const CheckpointError& x) {
    return badInput(x);
  } catch (const OutputDirectoryError& x) {
    return badInput(x);
  } catch (const solver::UnrepresentableStart& x) {
    return badInput(x);
  } catch (const PetscFailure& x) {
    // PETSc's own first message, not the call site; options PETSc refuses only once the solver runs (an explicit
    // integrator for fpdp's implicit form, say) are bad input.
    const std::string recorded = petscErrors ? petscErrors->message() : std::string();
    if (petscErrors && petscErrors->configurationError())
      return {2, "error", "PETSc rejected the solver configuration: " + recorded};
    return {1, failed, recorded.empty() ? std::string(x.what()) : "PETSc: " + recorded};
  } catch (const std::bad_alloc&) {
    return {1, failed, "out of memory"};
  } catch (const std::exception& x) {
    return {1, failed, x.what()};
  } catch (...) {
    return {1, failed, "unknown exception"};
  }
}

}  // namespace fpdp::app
