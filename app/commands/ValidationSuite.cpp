#include "app/commands/ValidationSuite.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "app/case/CaseReader.hpp"
#include "io/NumberText.hpp"

namespace fpdp::app {

namespace fs = std::filesystem;

namespace {

/// THE schema of a checks file: every key, its type, whether it is required, its default, what is allowed.
struct ChecksKey {
  const char* table;  // "" for the top level
  const char* key;
  const char* type;   // "string", "boolean", "number", "integer", "array of strings", "table of numbers"
  bool required;      // within its table (a table is optional; present = the check is on)
  const char* defaultValue;
  const char* allowed;
  const char* description;
};

constexpr ChecksKey kChecksSchema[] = {
    {"", "description", "string", true, "", "a non-empty string", "What the case validates (in the report)."},
    {"", "suite", "string", true, "", "quick, full",
     "`quick`: part of `fpdp validate --quick` (CI) and of the full suite; `full`: only the full suite."},
    {"", "beyond_assumptions", "boolean", false, "false", "true, false",
     "The case breaks an assumption of the papers: the report adds, as INFO rows, whether R_alpha converges in K "
     "(increments over the last output steps) and whether the formulas of the bounds that do not apply are "
     "nonetheless above the truth."},
    {"", "expected_warnings", "array of strings", false, "[]", "non-empty substrings of the run's WARNING lines",
     "Known limitations of the case's route (e.g. \"fokker_planck\" for R_alpha of order > 2 by noisy GD's implicit "
     "heat steps, docs/noisy-gd.md §5): a WARNING line of the run containing one of these is reported as an INFO row "
     "with its text; every other WARNING fails the case."},
    {"bounds", "tolerance", "number", true, "", "a number in [0, 1)",
     "R_alpha (KL, TV) <= every applicable bound of bounds.csv at every step, up to this relative excess "
     "(truth - bound)/bound: the truth's discretisation error."},
    {"lower_bound", "bounds", "array of strings", true, "", "bound labels of bounds.csv, e.g. \"bound5\"",
     "The bounds the truth must equal (CYS Thm 3's construction: the quadratic loss, items 5 and 6)."},
    {"lower_bound", "from_step", "integer", false, "0", "an integer >= 0",
     "First step compared (a Gaussian start approaches the point-start value as c^(2K))."},
    {"lower_bound", "tolerance", "number", true, "", "a number in (0, 1)", "Max |truth/bound - 1|."},
    {"exact", "from_step", "integer", false, "1", "an integer >= 0",
     "First step compared (at step 0 both are 0 and relative errors mean nothing)."},
    {"exact", "tolerances", "table of numbers", true, "", "keys kl, l1, tv, renyi_<alpha> (orders of the case), eps_exact_delta_<delta> (privacy.delta_grid, as in exact.csv); numbers > 0",
     "Max |relative error| of exact.csv per quantity (l1: the L1 error of p and q against the exact cell averages)."},
    {"lemma4", "tolerance", "number", true, "", "a number in [0, 1)",
     "sup|V_t - V'_t| <= (1 + tolerance) S_g/n at every tracing time (round-off), and no cell above the bound. "
     "Needs noisy_gd.tracing_substeps > 0."},
    {"mass", "tolerance", "number", true, "", "a number in (0, 1)", "|mass - 1| of p and q at every output step."},
    {"monte_carlo", "particles", "integer", false, "100000", "an integer in [100, 10^8]",
     "`fpdp sample` beside the run with this many particles per dataset; its histograms, divergences and audit must "
     "agree with the solver within the sampler's own bands (docs/sampler.md). Needs noisy GD and output.fields = true."},
    {"monte_carlo", "seed", "integer", false, "1", "an integer >= 0", "The sampler's seed."},
    {"monte_carlo", "threads", "integer", false, "2", "an integer in [1, 64]", "The sampler's threads."},
    {"renyi_rate", "rate_tolerance", "number", true, "", "a number in (0, 1)",
     "renyi_rate.csv: max over interior rows of |rate identity - d/dt R| beyond twice the central difference's "
     "truncation error, relative to max |rate identity| (MATH.md §4)."},
    {"renyi_rate", "lsi_tolerance", "number", false, "0", "a number in [0, 1)",
     "renyi_rate.csv: c_eff/c_theory >= 1 - lsi_tolerance wherever it is finite (CYS Lemma 3 with Lemma 5's c)."},
    {"exchanged", "of", "string", true, "", "the name of another case of the suite that sorts before this one",
     "This case is that case with D and D' exchanged (D' of the other is D here, and its replaced record is the "
     "neighbour's record here): p and q exchange, so eps_exact, TV and the RDP eps must be the same and the two "
     "directions (eps_exact_pq and _qp, renyi and renyi_reverse) exchanged (MATH.md §7: eps is the larger direction)."},
    {"exchanged", "tolerance", "number", true, "", "a number in (0, 1)",
     "Max relative difference of every compared value (inf equals inf)."},
    {"regression", "tolerance", "number", true, "", "a number in (0, 1)",
     "Every value of the listed files within this relative change of validation/references/NAME/<file>."},
    {"regression", "files", "array of strings", false, "[\"divergence.csv\"]",
     "CSV files of the run (divergence.csv, exact.csv, tracing.csv, kl_rate.csv, bounds.csv, renyi.csv)",
     "The files kept as references."},
};

const std::set<std::string> kRegressionFiles{"divergence.csv", "exact.csv",  "tracing.csv",
                                             "kl_rate.csv",    "bounds.csv", "renyi.csv"};

std::string render(const toml::node& n) {
  std::ostringstream s;
  if (n.is_string()) s << '"' << *n.value<std::string>() << '"';
  else if (n.is_table()) s << "{...}";
  else if (n.is_array()) s << *n.as_array();
  else n.visit([&s](const auto& x) {
    if constexpr (toml::is_value<decltype(x)>) s << x;
  });
  std::string out = s.str();
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

class ChecksReader {
public:
  ChecksReader(fs::path file, const Case& c) : file_(std::move(file)), case_(c) {}

  [[noreturn]] void fail(const std::string& key, const toml::node* value, const std::string& problem,
                         const std::string& allowed) const {
    const std::string v = value ? render(*value) : "";
    std::string message = file_.string() + ": " + key + (value ? " = " + v : "") + ": " + problem;
    if (!allowed.empty()) message += "; allowed: " + allowed;
    throw InputError(message, key, v, allowed);
  }

  ValidationChecks read() {
    toml::table root;
    try {
      root = toml::parse_file(file_.string());
    } catch (const toml::parse_error& e) {
      const auto& where = e.source().begin;
      throw InputError(file_.string() + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) + ": " +
                           std::string(e.description()),
                       "", "", "");
    }
    // Unknown keys and tables, and wrong types, first: one schema.
    for (const auto& [k, node] : root) {
      const std::string key(k.str());
      if (node.is_table() && isTable(key)) {
        for (const auto& [k2, node2] : *node.as_table()) {
          const std::string sub(k2.str());
          const ChecksKey* entry = find(key, sub);
          if (!entry) fail(key + "." + sub, &node2, "unknown key", keysOf(key));
          checkType(*entry, node2);
        }
        continue;
      }
      const ChecksKey* entry = find("", key);
      if (!entry) fail(key, &node, "unknown key or table", keysOf("") + "; tables " + tablesList());
      checkType(*entry, node);
    }
    for (const auto& entry : kChecksSchema) {
      if (!entry.required) continue;
      const std::string table(entry.table);
      if (!table.empty() && !root[table].is_table()) continue;
      const toml::node* n = table.empty() ? root.get(entry.key) : root[table].as_table()->get(entry.key);
      if (!n)
        fail(table.empty() ? entry.key : table + "." + entry.key, nullptr,
             std::string("missing required key (") + entry.type + ")", entry.allowed);
    }

    ValidationChecks v;
    v.description = *root["description"].value<std::string>();
    if (v.description.empty()) fail("description", root.get("description"), "empty", "a non-empty string");
    v.suite = *root["suite"].value<std::string>();
    if (v.suite != "quick" && v.suite != "full") fail("suite", root.get("suite"), "unknown suite", "quick, full");
    v.beyondAssumptions = root["beyond_assumptions"].value_or(false);
    if (const auto* arr = root["expected_warnings"].as_array())
      for (const auto& e : *arr) {
        const std::string w = *e.value<std::string>();
        if (w.empty()) fail("expected_warnings", &e, "empty", "non-empty substrings of the run's WARNING lines");
        v.expectedWarnings.push_back(w);
      }

    if (root["bounds"].is_table()) v.boundsTolerance = number(root, "bounds", "tolerance", 0.0, false, 1.0, false);
    if (root["lower_bound"].is_table()) {
      ValidationChecks::LowerBound lb;
      const auto* arr = root["lower_bound"]["bounds"].as_array();
      for (const auto& e : *arr) {
        const std::string label = *e.value<std::string>();
        if (label.rfind("bound", 0) != 0 || label.size() < 6)
          fail("lower_bound.bounds", &e, "not a bound label", "bound1 ... bound8, with _measured_gap");
        lb.bounds.push_back(label);
      }
      if (lb.bounds.empty()) fail("lower_bound.bounds", arr, "empty", "at least one bound label");
      lb.fromStep = integer(root, "lower_bound", "from_step", 0, 0, 1L << 40);
      lb.tolerance = number(root, "lower_bound", "tolerance", 0.0, true, 1.0, true);
      v.lowerBound = lb;
    }
    if (root["exact"].is_table()) {
      ValidationChecks::Exact ex;
      ex.fromStep = integer(root, "exact", "from_step", 1, 0, 1L << 40);
      std::set<std::string> allowedQuantities{"kl", "l1", "tv"};
      for (const auto& o : case_.divergence.orders) allowedQuantities.insert("renyi_" + o.label);
      for (double delta : case_.privacy.deltaGrid) allowedQuantities.insert("eps_exact_delta_" + io::shortestText(delta));
      std::string allowedList;
      for (const auto& q : allowedQuantities) allowedList += (allowedList.empty() ? "" : ", ") + q;
      const auto* tol = root["exact"]["tolerances"].as_table();
      for (const auto& [k, node] : *tol) {
        const std::string q(k.str());
        if (!allowedQuantities.count(q)) fail("exact.tolerances." + q, &node, "not a quantity of this case", allowedList);
        const auto x = node.value<double>();
        if (!x || !(*x > 0) || !std::isfinite(*x))
          fail("exact.tolerances." + q, &node, "not a finite number > 0", "a finite number > 0");
        ex.tolerances.emplace_back(q, *x);
      }
      if (ex.tolerances.empty()) fail("exact.tolerances", tol, "empty", allowedList);
      v.exact = ex;
    }
    if (root["lemma4"].is_table()) {
      if (case_.dynamics != "noisy_gd" || case_.noisyGd.tracing_substeps == 0)
        fail("lemma4", root.get("lemma4"), "the case traces no diffusions (noisy_gd.tracing_substeps = 0)",
             "[lemma4] with noisy_gd.tracing_substeps > 0");
      v.lemma4Tolerance = number(root, "lemma4", "tolerance", 0.0, false, 1.0, false);
    }
    if (root["mass"].is_table()) v.massTolerance = number(root, "mass", "tolerance", 0.0, true, 1.0, false);
    if (root["monte_carlo"].is_table()) {
      if (case_.dynamics != "noisy_gd" || !case_.output.fields)
        fail("monte_carlo", root.get("monte_carlo"), "needs a noisy-GD case with output.fields = true",
             "[monte_carlo] in a noisy-GD case that writes its fields");
      ValidationChecks::MonteCarlo mc;
      mc.particles = integer(root, "monte_carlo", "particles", 100000, 100, 100'000'000);
      mc.seed = integer(root, "monte_carlo", "seed", 1, 0, 1L << 62);
      mc.threads = static_cast<int>(integer(root, "monte_carlo", "threads", 2, 1, 64));
      v.monteCarlo = mc;
    }
    if (root["renyi_rate"].is_table()) {
      ValidationChecks::RenyiRate rr;
      rr.rateTolerance = number(root, "renyi_rate", "rate_tolerance", 0.0, true, 1.0, true);
      rr.lsiTolerance = root["renyi_rate"]["lsi_tolerance"]
                            ? number(root, "renyi_rate", "lsi_tolerance", 0.0, false, 1.0, true)
                            : 0.0;
      v.renyiRate = rr;
    }
    if (root["exchanged"].is_table()) {
      ValidationChecks::Exchanged ex;
      ex.of = *root["exchanged"]["of"].value<std::string>();
      if (ex.of.empty() || ex.of.find('/') != std::string::npos || ex.of.find("..") != std::string::npos)
        fail("exchanged.of", root["exchanged"].as_table()->get("of"), "not a case name",
             "the name of another case of the suite");
      ex.tolerance = number(root, "exchanged", "tolerance", 0.0, true, 1.0, true);
      v.exchanged = ex;
    }
    if (root["regression"].is_table()) {
      ValidationChecks::Regression rg;
      rg.tolerance = number(root, "regression", "tolerance", 0.0, true, 1.0, true);
      if (const auto* arr = root["regression"]["files"].as_array()) {
        for (const auto& e : *arr) {
          const std::string f = *e.value<std::string>();
          if (!kRegressionFiles.count(f))
            fail("regression.files", &e, "not a CSV file a run writes",
                 "divergence.csv, exact.csv, tracing.csv, kl_rate.csv, bounds.csv, renyi.csv");
          rg.files.push_back(f);
        }
        if (rg.files.empty()) fail("regression.files", arr, "empty", "at least one file");
      } else {
        rg.files = {"divergence.csv"};
      }
      v.regression = rg;
    }
    return v;
  }

private:
  static bool isTable(const std::string& name) {
    for (const auto& e : kChecksSchema)
      if (name == e.table) return true;
    return false;
  }
  static const ChecksKey* find(const std::string& table, const std::string& key) {
    for (const auto& e : kChecksSchema)
      if (table == e.table && key == e.key) return &e;
    return nullptr;
  }
  static std::string keysOf(const std::string& table) {
    std::string s;
    for (const auto& e : kChecksSchema)
      if (table == e.table) s += (s.empty() ? "" : ", ") + std::string(e.key);
    return s;
  }
  static std::string tablesList() {
    std::string s;
    std::set<std::string> seen;
    for (const auto& e : kChecksSchema)
      if (*e.table && seen.insert(e.table).second) s += (s.empty() ? "[" : ", [") + std::string(e.table) + "]";
    return s;
  }
  void checkType(const ChecksKey& e, const toml::node& n) const {
    const std::string type(e.type), name = *e.table ? std::string(e.table) + "." + e.key : std::string(e.key);
    bool ok = false;
    if (type == "string") ok = n.is_string();
    else if (type == "boolean") ok = n.is_boolean();
    else if (type == "number") ok = n.is_floating_point() || n.is_integer();
    else if (type == "integer") ok = n.is_integer();
    else if (type == "table of numbers") ok = n.is_table();
    else if (type == "array of strings") {
      ok = n.is_array();
      if (ok)
        for (const auto& x : *n.as_array()) ok = ok && x.is_string();
    }
    if (!ok) fail(name, &n, "wrong type (expected " + type + ")", e.allowed);
  }
  double number(const toml::table& root, const char* table, const char* key, double lo, bool loOpen, double hi,
                bool hiOpen) const {
    const toml::node* n = root[table].as_table()->get(key);
    const double x = *n->value<double>();
    const bool ok = std::isfinite(x) && (loOpen ? x > lo : x >= lo) && (hiOpen ? x < hi : x <= hi);
    if (!ok) fail(std::string(table) + "." + key, n, "out of range", find(table, key)->allowed);
    return x;
  }
  long integer(const toml::table& root, const char* table, const char* key, long fallback, long lo, long hi) const {
    const toml::node* n = root[table].as_table()->get(key);
    if (!n) return fallback;
    const long x = static_cast<long>(*n->value<std::int64_t>());
    if (x < lo || x > hi) fail(std::string(table) + "." + key, n, "out of range", find(table, key)->allowed);
    return x;
  }

  fs::path file_;
  const Case& case_;
};

}  // namespace

ValidationChecks readValidationChecks(const fs::path& file, const Case& c) { return ChecksReader(file, c).read(); }

std::vector<ValidationCase> readValidationSuite(const fs::path& directory, const std::vector<std::string>& names,
                                                bool quick) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec))
    throw InputError("validation cases directory '" + directory.string() + "' does not exist", "", "", "");
  std::set<std::string> caseNames, checkNames;
  for (const auto& entry : fs::directory_iterator(directory)) {
    const std::string f = entry.path().filename().string();
    const std::string suffix = ".checks.toml";
    if (f.size() > suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
      checkNames.insert(f.substr(0, f.size() - suffix.size()));
    else if (f.size() > 5 && f.compare(f.size() - 5, 5, ".toml") == 0)
      caseNames.insert(f.substr(0, f.size() - 5));
  }
  for (const auto& n : caseNames)
    if (!checkNames.count(n))
      throw InputError((directory / (n + ".toml")).string() + ": a validation case without " + n + ".checks.toml",
                       "", "", "");
  for (const auto& n : checkNames)
    if (!caseNames.count(n))
      throw InputError((directory / (n + ".checks.toml")).string() + ": checks without the case " + n + ".toml", "",
                       "", "");
  std::string known;
  for (const auto& n : caseNames) known += (known.empty() ? "" : ", ") + n;
  for (const auto& n : names)
    if (!caseNames.count(n))
      throw InputError("unknown validation case '" + n + "' in " + directory.string() + "; allowed: " + known, "", n,
                       known);
  std::vector<ValidationCase> out;
  for (const auto& n : caseNames) {
    if (!names.empty() && std::find(names.begin(), names.end(), n) == names.end()) continue;
    ValidationCase vc;
    vc.name = n;
    vc.caseFile = directory / (n + ".toml");
    vc.checksFile = directory / (n + ".checks.toml");
    vc.runCase = readCase(vc.caseFile);
    vc.checks = readValidationChecks(vc.checksFile, vc.runCase);
    if (quick && names.empty() && vc.checks.suite != "quick") continue;
    out.push_back(std::move(vc));
  }
  if (out.empty()) throw InputError("no validation case selected in " + directory.string(), "", "", known);
  return out;
}

std::string validationChecksSchemaMarkdown() {
  std::ostringstream s;
  s << "| table | key | type | required | default | allowed | description |\n";
  s << "|-------|-----|------|----------|---------|---------|-------------|\n";
  auto cell = [](const char* text) {  // a '|' inside a Markdown table cell must be escaped
    std::string out;
    for (const char* c = text; *c; ++c) out += *c == '|' ? std::string("\\|") : std::string(1, *c);
    return out;
  };
  for (const auto& e : kChecksSchema)
    s << "| " << (*e.table ? std::string("[") + e.table + "]" : std::string("(top)")) << " | `" << e.key << "` | "
      << e.type << " | " << (e.required ? "yes" : "no") << " | " << (*e.defaultValue ? cell(e.defaultValue) : "—")
      << " | " << cell(e.allowed) << " | " << cell(e.description) << " |\n";
  return s.str();
}

}  // namespace fpdp::app
