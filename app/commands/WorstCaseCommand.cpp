#include "app/commands/WorstCaseCommand.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include <toml++/toml.h>

#include "app/case/CaseReader.hpp"
#include "app/platform/CommandLine.hpp"
#include "app/commands/MemberRuns.hpp"
#include "app/run/OutputDirectory.hpp"
#include "io/CsvReader.hpp"
#include "io/CsvTable.hpp"
#include "io/NumberText.hpp"
#include "io/OutputFile.hpp"

namespace fpdp::app {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxEvaluations = 20000;

/// One neighbour tried: which record is replaced or removed, the new record and its label.
struct Candidate {
  std::optional<std::size_t> index;  // replace, remove
  std::optional<int> label;          // logistic, replace or add
  std::vector<double> x;             // replace, add: the record x'
  int round = 0;                     // 0: the grid; r: refinement round r
  std::vector<int> gridIndex;        // round 0: the point's index per axis
  bool sameNeighbour(const Candidate& o) const { return index == o.index && label == o.label; }
};

struct Evaluation {
  Candidate candidate;
  std::string member;       // directory under members/
  int exitStatus = -1;      // -1: not run (invalid member)
  std::string failure;
  double value = NAN;
  std::string status, certified, conservative;
  double conservativeValue = NAN;
};

/// What is maximised and where it is read from the member's last output step (lastStepCells).
struct Objective {
  std::string kind;               // eps | renyi
  double delta = 0.0, alpha = 0.0;
  std::vector<CaseOverride> overrides;  // what every evaluation needs (privacy.delta, divergence.orders)
  std::string describe() const {
    return kind == "eps" ? "eps_exact at delta = " + io::shortestText(delta) + " (the larger of both directions)"
                         : "max(R_alpha(p || q), R_alpha(q || p)) at alpha = " + io::shortestText(alpha);
  }
};

/// The search as a whole: the case, the objective, the evaluations so far.
struct Search {
  std::string executable;
  int jobs = 1;
  bool quiet = false;
  CaseSource source;
  Case base;
  Objective objective;
  std::vector<Evaluation> evaluations;
  bool hasRecord() const { return base.neighbour.kind != models::NeighbourKind::Remove; }
  bool hasIndex() const { return base.neighbour.kind != models::NeighbourKind::Add; }
};

Objective makeObjective(const WorstCaseOptions& options, const Case& base) {
  Objective o;
  o.kind = options.objective;
  if (o.kind == "eps") {
    o.delta = options.delta.value_or(base.privacy.delta);
    if (o.delta != base.privacy.delta) o.overrides.push_back({"privacy.delta", tomlNumber(o.delta)});
    return o;
  }
  if (base.divergence.orders.empty())
    throw InputError(base.sourcePath.string() + ": divergence.orders is empty; --objective renyi needs an order",
                     "divergence.orders", "", "");
  o.alpha = options.order.value_or(base.divergence.orders.front().alpha);
  const bool known = std::any_of(base.divergence.orders.begin(), base.divergence.orders.end(),
                                 [&](const RenyiOrder& r) { return r.alpha == o.alpha; });
  if (!known && base.divergence.denseOrders)
    throw InputError("--order " + io::shortestText(o.alpha) + ": not among the dense orders of divergence.orders; "
                     "allowed: one of them, or list the orders in the case",
                     "divergence.orders", "\"dense\"", "");
  if (!known) {
    std::string orders = "[";
    for (const RenyiOrder& r : base.divergence.orders) orders += r.label + ", ";
    o.overrides.push_back({"divergence.orders", orders + tomlNumber(o.alpha) + "]"});
  }
  return o;
}

/// The record x' as a TOML array.
std::string recordLiteral(const std::vector<double>& x) {
  std::string text = "[";
  for (std::size_t a = 0; a < x.size(); ++a) text += (a ? ", " : "") + tomlNumber(x[a]);
  return text + "]";
}

std::string candidateText(const Candidate& c) {
  std::string text;
  if (c.index) text += "index " + std::to_string(*c.index);
  if (c.label) text += std::string(text.empty() ? "" : ", ") + "label " + std::to_string(*c.label);
  if (!c.x.empty()) text += std::string(text.empty() ? "" : ", ") + "x' = " + recordLiteral(c.x);
  return text;
}

/// The evaluation of a candidate (its member's name and overrides); its case is made and validated when it starts.
Evaluation prepare(const Search& s, const Candidate& c, std::size_t number, std::vector<CaseOverride>& overrides) {
  overrides = s.objective.overrides;
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "%04zu-r%d", number, c.round);
  std::string name = prefix;
  if (c.index) {
    overrides.push_back({"neighbour.index", std::to_string(*c.index)});
    name += "-i" + std::to_string(*c.index);
  }
  if (!c.x.empty()) {
    overrides.push_back({"neighbour.record", recordLiteral(c.x)});
    name += "-" + overrideSlug(overrides.back());
  }
  if (c.label) {
    overrides.push_back({"neighbour.label", std::to_string(*c.label)});
    name += "-y" + std::to_string(*c.label);
  }
  Evaluation e;
  e.candidate = c;
  e.member = name;
  return e;
}

/// Reads the objective of a finished evaluation.
void readObjective(const Search& s, Evaluation& e, const fs::path& runDir, const MemberFacts& memberCase) {
  const auto cells = lastStepCells(runDir, memberCase);
  auto cell = [&](const std::string& name) {
    for (const auto& [n, v] : cells)
      if (n == name) return v;
    throw std::runtime_error("the run wrote no " + name);
  };
  std::string column, status, certified, conservative;
  if (s.objective.kind == "eps") {
    const std::string label = io::shortestText(s.objective.delta);
    column = "eps_exact_delta_" + label;
    status = "eps_exact_status_delta_" + label;
    certified = "eps_exact_certified_delta_" + label;
    conservative = "eps_exact_conservative_delta_" + label;
  } else {
    const auto order = std::find_if(memberCase.orders.begin(), memberCase.orders.end(),
                                    [&](const RenyiOrder& r) { return r.alpha == s.objective.alpha; });
    column = "renyi_" + order->label;
    status = "status_renyi_" + order->label;
    certified = column + "_certified";
    conservative = column + "_conservative";
  }
  io::parseCsvNumber(cell(column), e.value);
  e.status = cell(status);
  e.certified = cell(certified);
  e.conservative = cell(conservative);
  io::parseCsvNumber(e.conservative, e.conservativeValue);
  if (std::isnan(e.value)) e.failure = "the objective " + column + " is nan at the last step (status " + e.status + ")";
  if (s.objective.kind == "eps") return;  // eps_exact is already the larger of both directions
  // R_alpha's objective is the larger direction, as an RDP guarantee over neighbours needs. R_alpha(q || p) has no
  // error estimate: where it is the larger, the value is not certified and its conservative value is +inf.
  double reverse = NAN;
  io::parseCsvNumber(cell("renyi_reverse_" + column.substr(6)), reverse);
  if (reverse > e.value || (std::isnan(reverse) && !std::isnan(e.value))) {
    e.value = reverse;
    e.status = cell("status_renyi_reverse_" + column.substr(6));
    e.certified = "0";
    e.conservative = "inf";
    e.conservativeValue = INFINITY;
  }
}

/// At most kMaxEvaluations evaluations in all (checked before a grid is built: a case file may ask for 1001^3 points).
void requireEvaluationBudget(const Search& s, double evaluations) {
  if (evaluations > static_cast<double>(kMaxEvaluations))
    throw InputError(s.source.path.string() + ": [worst_case] asks for " + io::shortestText(evaluations) +
                         " evaluations; allowed: at most " + std::to_string(kMaxEvaluations) +
                         " (fewer grid_points, indices or labels)",
                     "worst_case.grid_points", "", "");
}

/// Candidates to evaluate: their evaluations and the overrides of their member cases.
struct Batch {
  std::vector<Evaluation> evaluations;
  std::vector<std::vector<CaseOverride>> overrides;
  bool strict = false;  // the first grid: an invalid candidate is bad input (exit 2), not a failed evaluation
};

Batch prepareBatch(const Search& s, const std::vector<Candidate>& candidates, bool strict) {
  requireEvaluationBudget(s, static_cast<double>(s.evaluations.size() + candidates.size()));
  Batch b;
  b.strict = strict;
  for (const Candidate& c : candidates) {
    b.overrides.emplace_back();
    b.evaluations.push_back(prepare(s, c, s.evaluations.size() + b.evaluations.size(), b.overrides.back()));
  }
  return b;
}

/// Runs the batch's members, each made and validated as it starts (an invalid one is a failed evaluation that never
/// runs, or, in a strict batch, stops the search), and appends its evaluations with their objective values.
void runBatch(Search& s, Batch batch, const fs::path& work) {
  std::size_t cursor = 0;
  std::vector<std::size_t> evaluationOf;  // of each member made
  const auto make = [&](std::size_t) -> std::optional<MadeMember> {
    while (cursor < batch.evaluations.size()) {
      const std::size_t k = cursor++;
      Evaluation& e = batch.evaluations[k];
      MadeMember made;
      try {
        made.member = memberCase(s.source, e.member, batch.overrides[k],
                                 "worst-case evaluation (" + candidateText(e.candidate) + ")", true, made.caseText);
      } catch (const InputError& err) {
        if (batch.strict) throw;
        e.failure = err.what();  // not valid: never run
        continue;
      }
      evaluationOf.push_back(k);
      return made;
    }
    return std::nullopt;
  };
  std::vector<Member> members;
  const auto outcomes = runMembers(s.executable, work, make, s.jobs, s.quiet, members);
  for (std::size_t m = 0; m < members.size(); ++m) {
    Evaluation& e = batch.evaluations[evaluationOf[m]];
    e.exitStatus = outcomes[m].exitStatus;
    e.failure = outcomes[m].failure;
    if (e.exitStatus == 0) {
      try {
        readObjective(s, e, memberRunDirectory(work, members[m]), members[m].facts);
      } catch (const std::exception& err) {
        e.failure = std::string("unreadable output: ") + err.what();
      }
    }
  }
  for (Evaluation& e : batch.evaluations) s.evaluations.push_back(std::move(e));
}

bool succeeded(const Evaluation& e) { return e.exitStatus == 0 && e.failure.empty() && !std::isnan(e.value); }

/// The best evaluation among those `accept` admits (the first of equal values), or none.
template <class Accept>
std::optional<std::size_t> best(const Search& s, Accept accept) {
  std::optional<std::size_t> b;
  for (std::size_t i = 0; i < s.evaluations.size(); ++i)
    if (succeeded(s.evaluations[i]) && accept(s.evaluations[i]) &&
        (!b || s.evaluations[i].value > s.evaluations[*b].value))
      b = i;
  return b;
}

/// The first grid: every neighbour (index, label) times every grid point of the domain.
std::vector<Candidate> firstGrid(const Search& s) {
  const WorstCaseSpec& w = s.base.worstCase;
  std::vector<std::optional<std::size_t>> indices{std::nullopt};
  if (s.hasIndex()) {
    indices.clear();
    for (std::size_t i : w.searchedIndices(s.base.data.records.size())) indices.emplace_back(i);
  }
  std::vector<std::optional<int>> labels{std::nullopt};
  if (s.hasRecord() && !w.labels.empty()) {
    labels.clear();
    for (int y : w.labels) labels.emplace_back(y);
  }
  // The grid before a ball drops its outer points: more than 4 times the budget is over it inside any ball too (a
  // ball holds more than half of its bounding grid), and is refused before it is built.
  const double gridSize = static_cast<double>(indices.size() * labels.size()) *
                          (s.hasRecord() ? std::pow(static_cast<double>(w.gridPoints), s.base.mesh.dim) : 1.0);
  if (gridSize > 4.0 * static_cast<double>(kMaxEvaluations)) requireEvaluationBudget(s, gridSize);
  std::vector<std::vector<int>> points{{}};  // grid indices per axis
  if (s.hasRecord())
    for (int a = 0; a < s.base.mesh.dim; ++a) {
      std::vector<std::vector<int>> next;
      for (const auto& p : points)
        for (int k = 0; k < w.gridPoints; ++k) {
          auto q = p;
          q.push_back(k);
          next.push_back(std::move(q));
        }
      points = std::move(next);
    }
  std::vector<Candidate> candidates;
  for (const auto& index : indices)
    for (const auto& label : labels)
      for (const auto& p : points) {
        Candidate c{index, label, {}, 0, p};
        bool inside = true;
        double r2 = 0.0;
        for (std::size_t a = 0; a < p.size(); ++a) {
          const auto ai = static_cast<Eigen::Index>(a);
          const double lo = w.domain == "box" ? w.lower[ai] : w.centre[ai] - w.radius;
          const double hi = w.domain == "box" ? w.upper[ai] : w.centre[ai] + w.radius;
          const double x = p[a] == w.gridPoints - 1 ? hi : lo + (hi - lo) * p[a] / (w.gridPoints - 1);
          c.x.push_back(x);
          if (w.domain == "ball") r2 += (x - w.centre[ai]) * (x - w.centre[ai]);
        }
        if (w.domain == "ball") inside = std::sqrt(r2) <= w.radius * (1 + 1e-12);
        if (inside) candidates.push_back(std::move(c));
      }
  return candidates;
}

/// Refinement round `round` around the best point: refinement_points per axis spaced 2 h / (P - 1) (h: the previous
/// spacing per axis, updated), kept inside the domain (a box clamps, a ball drops), without points already tried.
std::vector<Candidate> refinement(const Search& s, std::size_t around, int round, std::vector<double>& h) {
  const WorstCaseSpec& w = s.base.worstCase;
  const Candidate& centre = s.evaluations[around].candidate;
  const int P = w.refinementPoints, half = (P - 1) / 2;
  for (double& step : h) step = 2.0 * step / (P - 1);
  std::vector<std::vector<double>> points{{}};
  for (std::size_t a = 0; a < centre.x.size(); ++a) {
    const auto ai = static_cast<Eigen::Index>(a);
    std::vector<std::vector<double>> next;
    for (const auto& p : points)
      for (int k = -half; k <= half; ++k) {
        double x = centre.x[a] + k * h[a];
        if (w.domain == "box") x = std::clamp(x, w.lower[ai], w.upper[ai]);
        auto q = p;
        q.push_back(x);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  std::vector<Candidate> candidates;
  for (const auto& x : points) {
    if (w.domain == "ball") {
      double r2 = 0.0;
      for (std::size_t a = 0; a < x.size(); ++a)
        r2 += std::pow(x[a] - w.centre[static_cast<Eigen::Index>(a)], 2);
      if (std::sqrt(r2) > w.radius * (1 + 1e-12)) continue;
    }
    Candidate c{centre.index, centre.label, x, round, {}};
    const auto tried = [&](const Evaluation& e) { return e.candidate.sameNeighbour(c) && e.candidate.x == c.x; };
    const auto repeated = [&](const Candidate& o) { return o.x == c.x; };
    if (std::none_of(s.evaluations.begin(), s.evaluations.end(), tried) &&
        std::none_of(candidates.begin(), candidates.end(), repeated))
      candidates.push_back(std::move(c));
  }
  return candidates;
}

/// How sure the search is: what the best point's grid neighbours and the last refinement say.
struct Confidence {
  std::optional<std::size_t> runnerUp;   // the best of another neighbour (index, label), else of another point
  double gridNeighbourSpread = NAN;      // largest |f(best grid point) - f(grid neighbour)| of the first grid
  double lastImprovement = NAN;          // best after the last refinement round minus before it
  std::optional<std::size_t> largestConservative;  // the evaluation with the largest conservative value
};

Confidence confidence(const Search& s, std::size_t top, double bestBeforeLastRound) {
  Confidence c;
  const Candidate& winner = s.evaluations[top].candidate;
  c.runnerUp = best(s, [&](const Evaluation& e) { return !e.candidate.sameNeighbour(winner); });
  if (!c.runnerUp)
    c.runnerUp = best(s, [&](const Evaluation& e) { return &e != &s.evaluations[top] && e.candidate.x != winner.x; });
  const auto gridBest =
      best(s, [&](const Evaluation& e) { return e.candidate.round == 0 && e.candidate.sameNeighbour(winner); });
  if (gridBest && !winner.x.empty()) {
    const Evaluation& g = s.evaluations[*gridBest];
    for (const Evaluation& e : s.evaluations) {
      if (!succeeded(e) || e.candidate.round != 0 || !e.candidate.sameNeighbour(winner)) continue;
      int distance = 0;
      for (std::size_t a = 0; a < e.candidate.gridIndex.size(); ++a)
        distance += std::abs(e.candidate.gridIndex[a] - g.candidate.gridIndex[a]);
      const double d = std::abs(g.value - e.value);
      if (distance == 1 && !std::isnan(d))
        c.gridNeighbourSpread = std::isnan(c.gridNeighbourSpread) ? d : std::max(c.gridNeighbourSpread, d);
    }
  }
  if (!std::isnan(bestBeforeLastRound)) c.lastImprovement = s.evaluations[top].value - bestBeforeLastRound;
  const auto conservative = [](const Evaluation& e) {
    return std::isnan(e.conservativeValue) ? e.value : e.conservativeValue;
  };
  c.largestConservative = top;  // another evaluation only where its conservative value is larger
  for (std::size_t i = 0; i < s.evaluations.size(); ++i)
    if (succeeded(s.evaluations[i]) &&
        conservative(s.evaluations[i]) > conservative(s.evaluations[*c.largestConservative]))
      c.largestConservative = i;
  return c;
}

void writeEvaluations(const fs::path& file, const Search& s, std::size_t top) {
  std::vector<std::string> columns{"evaluation", "round", "directory", "index", "label"};
  const std::size_t d = s.hasRecord() ? static_cast<std::size_t>(s.base.mesh.dim) : 0;
  for (std::size_t a = 0; a < d; ++a) columns.push_back("x_" + std::to_string(a + 1));
  for (const char* c : {"exit_status", "objective", "value", "status", "certified", "conservative", "maximiser"})
    columns.push_back(c);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < s.evaluations.size(); ++i) {
    const Evaluation& e = s.evaluations[i];
    std::vector<std::string> row{std::to_string(i), std::to_string(e.candidate.round),
                                 "members/" + e.member + "/output", e.candidate.index ? std::to_string(*e.candidate.index) : "",
                                 e.candidate.label ? std::to_string(*e.candidate.label) : ""};
    for (std::size_t a = 0; a < d; ++a) row.push_back(io::shortestText(e.candidate.x[a]));
    const bool ok = succeeded(e);
    row.insert(row.end(), {std::to_string(e.exitStatus), s.objective.describe(), ok ? io::shortestText(e.value) : "",
                           e.status, e.certified, e.conservative, i == top ? "1" : "0"});
    rows.push_back(std::move(row));
  }
  io::writeWholeFile(file, io::textCsv(columns, rows));
}

std::string valueText(const Evaluation& e) {
  std::string text = io::shortestText(e.value) + " (status " + e.status + ", ";
  text += e.certified == "1" ? "certified" : "NOT CERTIFIED, conservative value " + e.conservative;
  return text + ")";
}

void printReport(const Search& s, std::size_t top, const Confidence& c, const std::string& dir) {
  const Evaluation& b = s.evaluations[top];
  std::printf("\n  objective: %s at the last step\n", s.objective.describe().c_str());
  std::printf("  maximiser: %s (evaluation %zu, round %d)\n", candidateText(b.candidate).c_str(), top,
              b.candidate.round);
  std::printf("  value:     %s\n", valueText(b).c_str());
  std::printf("             the largest value the search found: a lower bound on the supremum over the domain, which a "
              "peak between its points (or a failed evaluation) can exceed\n");
  if (c.runnerUp)
    std::printf("  runner-up: %s: %s\n", candidateText(s.evaluations[*c.runnerUp].candidate).c_str(),
                valueText(s.evaluations[*c.runnerUp]).c_str());
  if (!std::isnan(c.gridNeighbourSpread))
    std::printf("  largest difference between the best grid point and its grid neighbours: %s\n",
                io::shortestText(c.gridNeighbourSpread).c_str());
  if (!std::isnan(c.lastImprovement))
    std::printf("  improvement of the last refinement round: %s\n", io::shortestText(c.lastImprovement).c_str());
  if (c.largestConservative && *c.largestConservative != top)
    std::printf("  largest conservative value of any evaluation: %s at %s (use it where the maximiser's value is not "
                "certified)\n",
                s.evaluations[*c.largestConservative].conservative.c_str(),
                candidateText(s.evaluations[*c.largestConservative].candidate).c_str());
  std::size_t failed = 0;
  for (const Evaluation& e : s.evaluations) failed += !succeeded(e);
  std::printf("  %zu evaluation(s), %zu failed; table: %s/worst-case.csv, plot: %s/worst-case.png\n",
              s.evaluations.size(), failed, dir.c_str(), dir.c_str());
  for (const Evaluation& e : s.evaluations)
    if (!succeeded(e))
      std::printf("    FAILED %s (exit status %d): %s\n", e.member.c_str(), e.exitStatus, e.failure.c_str());
}

/// The search domain must exist for the neighbour kind. Throws InputError.
void checkDomain(const Case& base) {
  const bool remove = base.neighbour.kind == models::NeighbourKind::Remove;
  if (!remove && base.worstCase.domain == "none")
    throw InputError(base.sourcePath.string() + ": missing [worst_case] record_lower and record_upper (a box) or "
                         "record_centre and record_radius (a ball); allowed: the records x' fpdp worst-case searches "
                         "(neighbour.kind = " + models::toString(base.neighbour.kind) + ")",
                     "worst_case.record_lower", "", "");
}

}  // namespace

WorstCaseOptions parseWorstCaseCommandLine(int argc, const char* const* argv) {
  WorstCaseOptions o;
  auto number = [](const std::string& option, const std::string& text, double lo, double hi) {
    double v = NAN;
    if (!io::parseCsvNumber(text, v) || text.empty() || !(v > lo && v < hi))
      throw UsageError(option + " " + text + ": not a number in (" + io::shortestText(lo) + ", " +
                       io::shortestText(hi) + ")");
    return v;
  };
  o.study = parseStudyCommandLine(argc, argv, "worst-case", "--objective eps|renyi, --delta D, --order A",
                                  [&](const std::string& t, const std::function<std::string()>& value) {
                                    if (t == "--objective") {
                                      o.objective = value();
                                      if (o.objective != "eps" && o.objective != "renyi")
                                        throw UsageError("--objective " + o.objective +
                                                         ": unknown objective; allowed: eps, renyi");
                                    } else if (t == "--delta") {
                                      o.delta = number(t, value(), 0.0, 1.0);
                                    } else if (t == "--order") {
                                      o.order = number(t, value(), 1.0, 1e6);
                                    } else {
                                      return false;
                                    }
                                    return true;
                                  });
  if (o.study.help) return o;
  if (o.study.restart) {
    // The interrupted search's own case and objective are in DIR.partial.
    if (!o.study.casePath.empty() || o.study.output || o.delta || o.order || o.objective != "eps")
      throw UsageError("'fpdp worst-case --restart DIR' continues the search with its own case and objective: give no "
                       "case file, --output, --objective, --delta or --order (allowed: --jobs N, --quiet)");
    return o;
  }
  if (o.delta && o.objective != "eps") throw UsageError("--delta goes with --objective eps");
  if (o.order && o.objective != "renyi") throw UsageError("--order goes with --objective renyi");
  return o;
}

namespace {

/// What `--restart` needs to make the same evaluations: the case file's path, the SHA-256 of its data file and the
/// objective (DIR.partial/study.toml). The evaluations' names follow from the case and the objective, and each
/// round from the objective values of the rounds before it, so a continued search makes the same members and keeps
/// those whose output was published.
std::string worstCaseRecord(const CaseSource& source, const std::string& dataSha256, const WorstCaseOptions& o) {
  toml::table record;
  record.insert("command", "worst-case");
  record.insert("case_file", fs::absolute(source.path).lexically_normal().string());
  record.insert("data_file_sha256", dataSha256);
  record.insert("objective", o.objective);
  if (o.delta) record.insert("delta", *o.delta);
  if (o.order) record.insert("order", *o.order);
  std::ostringstream out;
  out << record << "\n";
  return out.str();
}

/// The interrupted search's case (its copy in DIR.partial, read as if it were at its first path) and objective.
void readWorstCaseRecord(const fs::path& work, CaseSource& source, std::string& dataSha256, WorstCaseOptions& o) {
  const std::string file = (work / kStudyRecord).string();
  const toml::table record = readStudyRecordTable(work);
  if (record["command"].value_or(std::string()) != "worst-case")
    throw OutputDirectoryError("'" + file + "' does not record a worst-case search (a sweep's: continue it with "
                               "'fpdp sweep --restart')");
  source.path = record["case_file"].value_or(std::string());
  dataSha256 = record["data_file_sha256"].value_or(std::string());
  o.objective = record["objective"].value_or(std::string("eps"));
  if (const auto d = record["delta"].value<double>()) o.delta = *d;
  if (const auto a = record["order"].value<double>()) o.order = *a;
  if (source.path.empty() || (o.objective != "eps" && o.objective != "renyi"))
    throw OutputDirectoryError("'" + file + "' does not record a worst-case search (its case_file and objective)");
  source.text = readCaseSource(work / "case.toml").text;
}

}  // namespace

int runWorstCase(const WorstCaseOptions& given, const std::string& executable) {
  WorstCaseOptions options = given;
  Search s;
  s.executable = executable;
  s.jobs = options.study.jobs.value_or(defaultJobs());
  s.quiet = options.study.quiet;
  std::optional<fs::path> restartWork;
  std::string recordedDataSha256;
  if (options.study.restart) {
    const std::string dir = normaliseOutputDirectory(*options.study.restart);
    restartWork = dir + ".partial";
    readWorstCaseRecord(*restartWork, s.source, recordedDataSha256, options);
    options.study.output = dir;
    options.study.casePath = s.source.path;
  } else {
    s.source = readCaseSource(options.study.casePath);
  }
  s.base = readCaseString(s.source.text, s.source.path);
  if (restartWork && recordedDataSha256 != s.base.data.fileSha256)
    throw InputError("--restart: the data file '" + s.base.data.file + "' has changed since the search started; its "
                     "evaluations would mix two datasets: restore it, or start the search again",
                     "data.file", "", "");
  checkDomain(s.base);
  s.objective = makeObjective(options, s.base);
  // The first grid (the domain's corners included) is validated as its members start; its first member before
  // anything is written.
  Batch firstBatch = prepareBatch(s, firstGrid(s), true);
  if (!firstBatch.evaluations.empty()) {
    std::string text;
    (void)memberCase(s.source, firstBatch.evaluations.front().member, firstBatch.overrides.front(),
                     "worst-case evaluation (" + candidateText(firstBatch.evaluations.front().candidate) + ")", true,
                     text);
  }
  StudyDirectory study(options.study.output.value_or(s.base.name + "-worst-case"), s.source,
                       worstCaseRecord(s.source, s.base.data.fileSha256, options), restartWork.has_value(),
                       "worst-case");
  std::printf("fpdp worst-case '%s': maximising %s: %zu evaluation(s) on the first grid, then %d refinement "
              "round(s), %d at a time, into %s%s\n",
              options.study.casePath.c_str(), s.objective.describe().c_str(), firstBatch.evaluations.size(),
              s.hasRecord() ? s.base.worstCase.refinementRounds : 0, s.jobs, study.finalDir().c_str(),
              restartWork ? " (continued: finished evaluations kept)" : "");
  if (!s.hasRecord() && s.base.worstCase.domain != "none")
    std::printf("  note: the [worst_case] record domain is not used when removing a record (neighbour.kind = "
                "\"remove\"): the search is over worst_case.indices\n");
  std::fflush(stdout);
  try {
    runBatch(s, std::move(firstBatch), study.work());
  } catch (const InputError&) {
    study.discard();  // bad input: nothing is kept
    throw;
  }
  double bestBeforeLastRound = NAN;
  if (s.hasRecord()) {
    const WorstCaseSpec& w = s.base.worstCase;
    std::vector<double> h;
    for (int a = 0; a < s.base.mesh.dim; ++a) {
      const auto ai = static_cast<Eigen::Index>(a);
      h.push_back((w.domain == "box" ? w.upper[ai] - w.lower[ai] : 2 * w.radius) / (w.gridPoints - 1));
    }
    for (int round = 1; round <= w.refinementRounds; ++round) {
      const auto top = best(s, [](const Evaluation&) { return true; });
      if (!top) break;
      bestBeforeLastRound = s.evaluations[*top].value;
      runBatch(s, prepareBatch(s, refinement(s, *top, round, h), false), study.work());
    }
  }
  const auto top = best(s, [](const Evaluation&) { return true; });
  if (!top) {
    writeEvaluations(study.work() / "worst-case.csv", s, s.evaluations.size());
    study.publish();
    for (const Evaluation& e : s.evaluations)
      std::printf("    FAILED %s (exit status %d): %s\n", e.member.c_str(), e.exitStatus, e.failure.c_str());
    std::fprintf(stderr, "fpdp: worst-case: no evaluation succeeded (%s/worst-case.csv)\n", study.finalDir().c_str());
    return 1;
  }
  const Confidence c = confidence(s, *top, bestBeforeLastRound);
  writeEvaluations(study.work() / "worst-case.csv", s, *top);
  const std::string plotWarning = plotStudy(study.work(), "worst-case");
  study.publish();
  printReport(s, *top, c, study.finalDir());
  if (!plotWarning.empty()) std::printf("  WARNING: %s\n", plotWarning.c_str());
  const bool allSucceeded = std::all_of(s.evaluations.begin(), s.evaluations.end(), succeeded);
  if (!allSucceeded) std::fprintf(stderr, "fpdp: worst-case: not every evaluation succeeded (worst-case.csv)\n");
  return allSucceeded ? 0 : 1;
}

}  // namespace fpdp::app
