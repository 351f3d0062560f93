// fpdp._core: the Python package's bridge to the program (python/fpdp/ is the package around it). Thin on purpose:
// cases are read by the case reader with the overrides of `--set` (app/case/CaseReader, app/case/CaseOverrides), runs go
// through the entry point of `fpdp run` (app/commands/RunCase), studies through those of `fpdp sweep` and `fpdp worst-case`
// (app/commands/SweepCommand, app/commands/WorstCaseCommand), and every failure is described as the command line describes it
// (app/commands/CommandFailure). The package reads the results back from the output directory.
//
// MPI and PETSc start once per process, at the first run, and end when the interpreter exits. The module runs in
// one process (an MPI singleton): the progress hook, through which Ctrl-C stops a run, is called on rank 0 only.
#include <petscsys.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/case/CaseOverrides.hpp"
#include "app/case/CaseReader.hpp"
#include "app/run/Checkpoint.hpp"
#include "app/platform/ChildProcesses.hpp"
#include "app/commands/CommandFailure.hpp"
#include "app/platform/CommandLine.hpp"
#include "app/platform/PetscConfiguration.hpp"
#include "app/case/ResourceEstimate.hpp"
#include "app/commands/RunCase.hpp"
#include "app/commands/SweepCommand.hpp"
#include "app/commands/WorstCaseCommand.hpp"
#include "app/run/OutputDirectory.hpp"
#include "app/run/OutputLock.hpp"
#include "models/GaussianComposition.hpp"
#include "models/RdpConversion.hpp"

namespace py = pybind11;
using namespace fpdp::app;

namespace {

/// The Python exceptions of the package (python/fpdp/errors.py), set when the package imports this module.
struct PythonErrors {
  py::object caseError, runError, runInterrupted;
};
PythonErrors& errors() {
  static PythonErrors e;
  return e;
}

/// A failure as the command line reports it, raised as the package's exception: bad input (status 2) as CaseError
/// with the reader's key, value and what is allowed where it has them, anything else as RunError. `e`: the
/// exception the failure was described from.
[[noreturn]] void raiseFailure(const CommandFailure& failure, std::exception_ptr e) {
  py::object error = (failure.status == 2 ? errors().caseError : errors().runError)(failure.message);
  try {
    std::rethrow_exception(e);
  } catch (const InputError& input) {
    error.attr("key") = input.keyPath;
    error.attr("value") = input.value;
    error.attr("allowed") = input.allowed;
  } catch (...) {
  }
  error.attr("exit_status") = failure.status;
  PyErr_SetObject(error.get_type().ptr(), error.ptr());
  throw py::error_already_set();
}

/// The exception being handled, raised as the package's exception (outside PETSc).
[[noreturn]] void raiseCurrent(const std::string& failed) {
  const auto e = std::current_exception();
  raiseFailure(describeFailure(e, nullptr, failed), e);
}

std::vector<CaseOverride> toOverrides(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<CaseOverride> overrides;
  for (const auto& [key, literal] : pairs) {
    // The checks of `--set KEY=VALUE`: a key of the schema, one TOML literal (UsageError naming both).
    const OverrideAxis axis = parseOverrideOption(key + "=" + literal, false);
    overrides.push_back({axis.key, axis.literals.front()});
  }
  return overrides;
}

/// The case as the command line reads it: the text (as if from `path`) with the overrides applied, validated.
Case readCase(const std::string& text, const std::string& path,
              const std::vector<std::pair<std::string, std::string>>& overrides) {
  const CaseSource source{path, text};
  return readOverriddenCase(source, toOverrides(overrides));
}

/// MPI and PETSc, started at the first run of this process and ended at the interpreter's exit. PETSc reads no
/// petscrc files (as `fpdp run`) and leaves the signals to Python (-no_signal_handler: Ctrl-C must reach the
/// interpreter, a crash its faulthandler).
class PetscSession {
public:
  static void ensureStarted() {
    static bool started = false;
    if (started) return;
    if (launchedByMpiLauncher())
      throw std::runtime_error("the fpdp Python module runs in one process; for several MPI ranks use "
                               "'mpiexec fpdp run' (README, Using it)");
    preferSharedMemoryMpiTransport();
    static char program[] = "fpdp-python", skipPetscrc[] = "-skip_petscrc", noSignals[] = "-no_signal_handler";
    static char* argv[] = {program, skipPetscrc, noSignals, nullptr};
    int argc = 3;
    char** pargv = argv;
    if (PetscInitialize(&argc, &pargv, nullptr, nullptr) != 0)
      throw std::runtime_error("PETSc could not be initialised");
    started = true;
    py::module_::import("atexit").attr("register")(py::cpp_function([] { PetscFinalize(); }));
  }

  /// Every run starts from PETSC_OPTIONS and the caller's options alone (an earlier run's case options must not
  /// stay in the database: a set option counts as given on the command line, app/platform/PetscConfiguration).
  static void resetOptions(const std::vector<std::string>& petscOptions) {
    FPDP_PETSC(PetscOptionsClear(nullptr));
    if (const char* env = std::getenv("PETSC_OPTIONS")) FPDP_PETSC(PetscOptionsInsertString(nullptr, env));
    std::string joined;
    for (const auto& o : petscOptions) joined += o + " ";
    if (!joined.empty()) FPDP_PETSC(PetscOptionsInsertString(nullptr, joined.c_str()));
  }
};

/// The Python side of a run's progress: the callback, Ctrl-C, and the first Python error either raised.
class ProgressBridge {
public:
  explicit ProgressBridge(py::object callback) : callback_(std::move(callback)) {}

  /// Called with the GIL released (the run's thread holds no Python state): takes it, checks for signals, calls
  /// the callback. A signal or an exception of the callback is kept and the run stopped by RunInterrupted.
  ProgressHook hook() {
    return [this](const RunProgress& p) {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) stop("interrupted");
      if (callback_.is_none()) return;
      try {
        callback_(py::dict(py::arg("phase") = p.phase, py::arg("description") = p.description,
                           py::arg("step") = p.step, py::arg("steps") = p.steps, py::arg("t") = p.t,
                           py::arg("kl") = p.kl, py::arg("elapsed") = p.elapsed, py::arg("remaining") = p.remaining));
      } catch (py::error_already_set& e) {
        e.restore();
        stop("stopped by the progress callback");
      }
    };
  }

  /// After the run, with the GIL: the kept Python error, if any.
  bool hasError() const { return static_cast<bool>(type_); }
  /// Raises the kept error, chained as the cause of `raised` when that is given.
  [[noreturn]] void raise(py::object raised = py::object()) {
    if (raised) {
      PyErr_NormalizeException(&type_, &value_, &traceback_);
      if (value_) {
        if (traceback_) PyException_SetTraceback(value_, traceback_);
        PyException_SetCause(raised.ptr(), value_);  // steals value_
        value_ = nullptr;
      }
      Py_XDECREF(type_);
      Py_XDECREF(traceback_);
      type_ = traceback_ = nullptr;
      PyErr_SetObject(raised.get_type().ptr(), raised.ptr());
    } else {
      PyErr_Restore(type_, value_, traceback_);
      type_ = value_ = traceback_ = nullptr;
    }
    throw py::error_already_set();
  }
  /// Whether the kept error is a KeyboardInterrupt (Ctrl-C), which the run turns into fpdp.RunInterrupted.
  bool interruptedByUser() const {
    return type_ && PyErr_GivenExceptionMatches(type_, PyExc_KeyboardInterrupt);
  }
  ~ProgressBridge() {
    Py_XDECREF(type_);
    Py_XDECREF(value_);
    Py_XDECREF(traceback_);
  }

private:
  [[noreturn]] void stop(const char* why) {
    if (!type_) PyErr_Fetch(&type_, &value_, &traceback_);
    else PyErr_Clear();
    throw RunInterrupted(why);
  }

  py::object callback_;
  PyObject *type_ = nullptr, *value_ = nullptr, *traceback_ = nullptr;
};

/// After a run stopped by its hook: fpdp.RunInterrupted (a KeyboardInterrupt) with the restart hint of the command
/// line for a signal, else the callback's own exception (the hint chained beneath it as the message of a
/// RunInterrupted would be lost otherwise, so it goes to stderr as the command line's does).
[[noreturn]] void raiseInterrupted(ProgressBridge& bridge, const std::string& message, const std::string& output) {
  py::object interrupted = errors().runInterrupted(message);
  interrupted.attr("output_directory") = output;
  if (!bridge.hasError() || bridge.interruptedByUser()) bridge.raise(interrupted);
  PySys_WriteStderr("fpdp: %s\n", message.c_str());
  bridge.raise();
}

struct RunRequest {
  std::string text, path;
  std::vector<std::pair<std::string, std::string>> overrides;
  std::optional<std::string> output;
  std::vector<std::string> petscOptions;
  bool restart = false;  // continue output's DIR.partial from its checkpoint (`fpdp run --restart DIR`)
};

/// `fpdp run`, or `fpdp run --restart DIR`: returns {"output_directory", "summary"}.
py::dict runCase(const RunRequest& request, py::object progress) {
  Case c;
  std::shared_ptr<const fpdp::io::CheckpointData> checkpoint;
  std::string output;
  // One writer per output directory, as for the command line (app/run/OutputLock): held until the run ends.
  std::optional<OutputLock> outputLock;
  try {
    if (request.restart) {
      const auto target = locateRestart(*request.output);
      outputLock.emplace(normaliseOutputDirectory(target.finalDir));
      checkpoint = std::make_shared<const fpdp::io::CheckpointData>(loadCheckpoint(target.checkpoint));
      c = request.text.empty() ? fpdp::app::readCase(target.workDir + "/parameters.toml")
                               : readCase(request.text, request.path, request.overrides);
      requireSameCase(*checkpoint, c.resolvedToml,
                      request.text.empty() ? "'" + target.workDir + "/parameters.toml'" : "'" + request.path + "'");
      // Restart proves its inputs: the data file, and every file carried over from DIR.partial.
      requireSameData(*checkpoint, c.data.file, c.data.fileSha256);
      requireCarriedFilesUnchanged(*checkpoint, target.workDir);
      output = target.finalDir;
    } else {
      c = readCase(request.text, request.path, request.overrides);
      output = request.output.value_or(c.output.directory);
      outputLock.emplace(normaliseOutputDirectory(output));
    }
    requireMemoryFits(c, !request.petscOptions.empty());
    requireOutputFits(c, output);
    PetscSession::ensureStarted();
  } catch (...) {
    raiseCurrent("run failed");
  }
  ProgressBridge bridge(progress);
  std::string summary;
  std::exception_ptr failure;
  CommandFailure described;
  std::string interrupted;
  {
    py::gil_scoped_release released;
    PetscErrorCapture petscErrors;
    try {
      PetscSession::resetOptions(request.petscOptions);
      refuseForbiddenOptions();
      insertCaseOptions(c.solver);
      validateSolverTypes(c);
      checkOutputDirectory(output);
      RunOptions options;
      options.outputDirectory = output;
      options.quiet = true;
      options.resume = checkpoint;
      options.progress = bridge.hook();
      options.interruptHint = false;
      options.summary = [&summary](const std::string& text) { summary = text; };
      fpdp::app::runCase(c, options);
    } catch (const RunInterrupted& e) {
      interrupted = e.what();
    } catch (...) {
      failure = std::current_exception();
      described = describeFailure(failure, &petscErrors);
    }
  }
  if (!interrupted.empty()) raiseInterrupted(bridge, interrupted, output);
  if (bridge.hasError()) bridge.raise();  // a callback's error that a failure of the run hid
  if (failure) raiseFailure(described, failure);
  return py::dict(py::arg("output_directory") = normaliseOutputDirectory(output), py::arg("summary") = summary);
}

/// `fpdp sweep ARGS` or `fpdp worst-case ARGS` (argv without the program): the exit status (0 every member ran, 1 a
/// member failed). Ctrl-C stops the members (app/platform/ChildProcesses) and raises fpdp.RunInterrupted.
int runStudy(const std::vector<std::string>& args, const std::string& executable) {
  std::vector<const char*> argv{"fpdp"};
  for (const auto& a : args) argv.push_back(a.c_str());
  const bool sweep = args.at(0) == "sweep";
  ProgressBridge bridge{py::none()};
  const ProgressHook hook = bridge.hook();
  int status = 1;
  std::exception_ptr failure;
  std::string interrupted;
  {
    py::gil_scoped_release released;
    try {
      const ChildWaitCheck check([&hook] { hook(RunProgress{}); });
      const int argc = static_cast<int>(argv.size());
      status = sweep ? runSweep(parseSweepCommandLine(argc, argv.data()), executable)
                     : runWorstCase(parseWorstCaseCommandLine(argc, argv.data()), executable);
    } catch (const RunInterrupted& e) {
      interrupted = e.what();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (!interrupted.empty())
    raiseInterrupted(bridge, "interrupted: the members were stopped", "");
  if (failure) raiseFailure(describeFailure(failure, nullptr, args.at(0) + " failed"), failure);
  return status;
}

/// The case text with the overrides applied and a relative data.file made absolute (a member's or a study's case
/// file, written elsewhere); validated.
std::string overriddenText(const std::string& text, const std::string& path,
                           const std::vector<std::pair<std::string, std::string>>& overrides) {
  try {
    const CaseSource source{path, text};
    const auto list = toOverrides(overrides);
    (void)readOverriddenCase(source, list);
    return overriddenCaseText(source, list);
  } catch (...) {
    raiseCurrent("reading the case failed");
  }
}

/// The case file's text as the command line reads it (its size limit and messages).
std::string caseSourceText(const std::string& path) {
  try {
    return readCaseSource(path).text;
  } catch (...) {
    raiseCurrent("reading the case failed");
  }
}

py::dict resolveCase(const std::string& text, const std::string& path,
                     const std::vector<std::pair<std::string, std::string>>& overrides) {
  try {
    const Case c = readCase(text, path, overrides);
    return py::dict(py::arg("name") = c.name, py::arg("resolved_toml") = c.resolvedToml,
                    py::arg("output_directory") = c.output.directory, py::arg("dimension") = c.mesh.dim);
  } catch (...) {
    raiseCurrent("reading the case failed");
  }
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "fpdp's C++ program as the fpdp package calls it (python/fpdp/); use the package, not this module.";
  m.def("set_errors", [](py::object caseError, py::object runError, py::object runInterrupted) {
    errors() = {std::move(caseError), std::move(runError), std::move(runInterrupted)};
  });
  m.def("read_case_source", &caseSourceText, py::arg("path"));
  m.def("resolve_case", &resolveCase, py::arg("text"), py::arg("path"), py::arg("overrides"));
  m.def("overridden_case_text", &overriddenText, py::arg("text"), py::arg("path"), py::arg("overrides"));
  m.def(
      "run",
      [](std::string text, std::string path, std::vector<std::pair<std::string, std::string>> overrides,
         std::optional<std::string> output, std::vector<std::string> petscOptions, bool restart, py::object progress) {
        return runCase(RunRequest{std::move(text), std::move(path), std::move(overrides), std::move(output),
                                  std::move(petscOptions), restart},
                       std::move(progress));
      },
      py::arg("text"), py::arg("path"), py::arg("overrides"), py::arg("output"), py::arg("petsc_options"),
      py::arg("restart"), py::arg("progress"));
  m.def("study", &runStudy, py::arg("args"), py::arg("executable"));
  m.def("schema_markdown", [] { return parameterSchemaMarkdown(); });
  // The composition baseline's closed form (mu-GDP), for deltas and eps between the run's own.
  m.def("gdp_epsilon", &fpdp::models::gdpEpsilon, py::arg("mu"), py::arg("delta"));
  m.def("gdp_delta", &fpdp::models::gdpDelta, py::arg("mu"), py::arg("eps"));
  // An upper bound of delta(eps) from upper bounds of R_alpha (MATH.md §7, CKS), for the PLD export past the
  // hockey-stick grid (fpdp.pld.rdp_tail).
  m.def(
      "cks_delta",
      [](const std::vector<double>& orders, const std::vector<double>& renyi, double eps) {
        return fpdp::models::cksDelta(orders, renyi, eps);
      },
      py::arg("orders"), py::arg("renyi"), py::arg("eps"));
  m.attr("executable") = FPDP_EXECUTABLE;
  m.attr("source_tree") = FPDP_SOURCE_TREE;
  m.attr("version") = FPDP_VERSION;
}
