// Case reader, [solver] and [sampler]: the PETSc solver of a run and the Monte Carlo sampler of `fpdp sample`.
#include "app/case/CaseParser.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "app/platform/PetscOptionPolicy.hpp"

namespace fpdp::app::detail {

// solver.ts_type = "exponential" (solver/propagation/ExponentialEvolution.hpp) on a case it cannot run (exponentialObstacle):
// the error names the key in the way. (A -ts_type on the command line is checked when the run builds its operator.)
void CaseParser::checkExponentialApplies(const Case& c) const {
  const auto obstacle = exponentialObstacle(c);
  if (!obstacle) return;
  const auto dot = obstacle->key.find('.');
  const toml::node* node = given(obstacle->key.substr(0, dot), obstacle->key.substr(dot + 1));
  fail(obstacle->key, node ? *node : *given("solver", "ts_type"), obstacle->reason,
       "\"auto\", a PETSc TS type, or \"exponential\" for Langevin runs with solver.spatial_order = 2");
}

void CaseParser::readSolver(Case& c) const {
  const Parameter& order = parameter("solver", "spatial_order");
  const toml::node& orderNode = required(order);
  const std::int64_t o = integer(orderNode, "solver.spatial_order", order.allowed);
  if (o != 2 && o != 4) fail("solver.spatial_order", orderNode, "is not a supported order", order.allowed);
  c.solver.spatial_order = static_cast<int>(o);
  c.solver.ts_type = petscName("ts_type");
  if (c.solver.ts_type == kExponentialTsType) checkExponentialApplies(c);
  c.solver.ksp_type = petscName("ksp_type");
  c.solver.pc_type = petscName("pc_type");
  c.solver.exponential_series = choiceAt("solver", "exponential_series");

  const Parameter& options = parameter("solver", "petsc_options");
  const toml::node& node = required(options);
  c.solver.petsc_options = string(node, "solver.petsc_options", options.allowed);
  // PETSc would take a stray word as an option value or ignore it; either way the user's intent is lost. Every
  // option is held against the allow-list (app/platform/PetscOptionPolicy.hpp): a shared case must not write files.
  std::istringstream stream(c.solver.petsc_options);
  std::vector<std::string> tokens;
  for (std::string token; stream >> token;) tokens.push_back(token);
  // The same split as insertCaseOptions: "-1" or "-.5" after an option is its value, not an option.
  const auto isName = [](const std::string& t) {
    return t.size() >= 2 && t[0] == '-' && !(t[1] >= '0' && t[1] <= '9') && t[1] != '.';
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!isName(tokens[i])) {
      fail("solver.petsc_options", node,
           "token '" + tokens[i] + "' is neither an option (starting with '-') nor the value of the option before it",
           options.allowed);
    }
    const std::string name = tokens[i];
    const std::string value = i + 1 < tokens.size() && !isName(tokens[i + 1]) ? tokens[++i] : std::string();
    if (const auto problem = caseFilePetscOptionProblem(name, value))
      fail("solver.petsc_options", node, "option '" + name + "' " + *problem, options.allowed);
  }
}

// Only the shape of the name is checked here; whether PETSc knows the type is checked by the solver.
std::string CaseParser::petscName(std::string_view key) const {
  const Parameter& p = parameter("solver", key);
  const std::string path = "solver." + std::string(key);
  const toml::node& node = required(p);
  const std::string& name = string(node, path, p.allowed);
  const bool valid = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
  });
  if (!valid) fail(path, node, "is not a PETSc type name", p.allowed);
  return name;
}

// [sampler]: the Monte Carlo sampler of `fpdp sample` (validation/MonteCarloSampler).
void CaseParser::readSampler(Case& c) const {
  c.sampler.particles = static_cast<long>(integerAt("sampler", "particles"));
  c.sampler.seed = static_cast<std::uint64_t>(integerAt("sampler", "seed"));
  c.sampler.threads = static_cast<int>(integerAt("sampler", "threads"));
  c.sampler.confidence = numberAt("sampler", "confidence");
  c.sampler.auditDelta = numberAt("sampler", "audit_delta");
  const long K = c.dynamics == "langevin" ? c.time.steps() : c.noisyGd.steps;
  if (c.dynamics == "langevin") {
    const Parameter& p = parameter("sampler", "langevin_dt");
    if (const toml::node* node = given("sampler", "langevin_dt")) {
      const double dt = numberOf(p, *node);
      const double ratio = c.time.dt / dt;
      if (!(ratio >= 1.0 - kStepTolerance) || std::abs(ratio - std::round(ratio)) > kStepTolerance * ratio ||
          ratio > kMaxSteps)
        fail("sampler.langevin_dt", *node,
             "does not divide time.dt = " + floatLiteral(c.time.dt) + " into an integer number of steps", p.allowed);
      c.sampler.langevinDt = c.time.dt / std::round(ratio);
    } else {
      c.sampler.langevinDt = c.time.dt / 10.0;
    }
  }
  const Parameter& steps = parameter("sampler", "output_steps");
  if (const toml::node* node = given("sampler", "output_steps")) {
    const toml::array& a = array(*node, "sampler.output_steps", steps.allowed);
    if (a.empty() || a.size() > 1000) fail("sampler.output_steps", *node, "must hold 1 to 1000 steps", steps.allowed);
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string path = indexed("sampler.output_steps", i);
      const std::int64_t k = integer(*a.get(i), path, steps.allowed);
      if (k < 0 || k > K)
        fail(path, *a.get(i), "is not a step of this case (K = " + std::to_string(K) + ")", steps.allowed);
      if (!c.sampler.outputSteps.empty() && k <= c.sampler.outputSteps.back())
        fail(path, *a.get(i), "does not increase", steps.allowed);
      c.sampler.outputSteps.push_back(static_cast<long>(k));
    }
  } else {
    c.sampler.outputSteps = {K};
  }
}

}  // namespace fpdp::app::detail
