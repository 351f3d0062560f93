// A per-example loss from a muParser expression (see ExpressionLoss.hpp), MATH.md §1. The solver evaluates L_D at
// every mesh cell (n parser evaluations per cell, ~50 ns each), so parsing happens once per parser set and the sets
// are reused through a small pool rather than rebuilt per call.
// Exercise: build/tests/models/test_models --run_test=expression_loss
#include "models/ExpressionLoss.hpp"

#include <muParser.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <stdexcept>
#include <utility>

namespace fpdp::models {

namespace {

double log1pFunction(double z) { return std::log1p(z); }
double expm1Function(double z) { return std::expm1(z); }
// log(1 + e^z) without overflow for large z and without losing the tiny value for very negative z.
double softplusFunction(double z) { return std::max(z, 0.0) + std::log1p(std::exp(-std::abs(z))); }
// 1 / (1 + e^{-z}) with a non-positive exponent on both branches.
double sigmoidFunction(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

std::string variableList(int dim) {
  const std::string d = std::to_string(dim);
  if (dim == 1) return "theta1, x1, y";
  return "theta1..theta" + d + ", x1..x" + d + ", y";
}

// theta<digits>, x<digits> or y: the names reserved for variables, whatever the dimension.
bool isVariableName(const std::string& name) {
  if (name == "y") return true;
  for (const std::string prefix : {"theta", "x"}) {
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                    [](char c) { return c >= '0' && c <= '9'; })) {
      return true;
    }
  }
  return false;
}

}  // namespace

// One parser per expression, all bound to this evaluator's own variable storage (so an Evaluator never moves once
// built: it lives behind a unique_ptr).
struct ExpressionLoss::Evaluator {
  std::vector<double> theta, x;
  double y = 1.0;
  std::unique_ptr<mu::Parser> value;
  std::vector<std::unique_ptr<mu::Parser>> gradient;

  void bind(const Vector& t, const Record& r) {
    for (std::size_t i = 0; i < theta.size(); ++i) {
      theta[i] = t[static_cast<Eigen::Index>(i)];
      x[i] = r.x[static_cast<Eigen::Index>(i)];
    }
    y = r.y;
  }
};

// Each thread holds its own parser set per loss, made on the thread's first evaluation and found again through a
// thread-local table keyed by the loss's serial number (never reused, unlike an address): evaluating takes no lock.
// The last set used is remembered, so a loop over cells and records does not even look it up.
namespace {
std::atomic<std::uint64_t> nextSerial{1};
std::mutex& creationMutex() {  // parser sets are built one at a time (rare: once per thread and loss)
  static std::mutex m;
  return m;
}
}  // namespace

struct ExpressionLoss::ThreadSets {
  std::unordered_map<std::uint64_t, std::unique_ptr<Evaluator>> bySerial;
  std::uint64_t lastSerial = 0;
  Evaluator* last = nullptr;
  static ThreadSets& mine() {
    thread_local ThreadSets sets;
    return sets;
  }
};

ExpressionLoss::Evaluator& ExpressionLoss::evaluator() const {
  ThreadSets& sets = ThreadSets::mine();
  if (sets.lastSerial == serial_) return *sets.last;
  auto& slot = sets.bySerial[serial_];
  if (!slot) {
    const std::lock_guard<std::mutex> lock(creationMutex());
    slot = makeEvaluator();
  }
  sets.lastSerial = serial_;
  sets.last = slot.get();
  return *slot;
}

ExpressionLoss::ExpressionLoss(int dim, std::string valueExpression, std::vector<std::string> gradientExpressions,
                               std::map<std::string, double> constants)
    : dim_(dim),
      valueExpression_(std::move(valueExpression)),
      gradientExpressions_(std::move(gradientExpressions)),
      constants_(std::move(constants)),
      serial_(nextSerial.fetch_add(1)) {
  if (dim_ < 1) throw std::invalid_argument("ExpressionLoss: the dimension must be at least 1, got " + std::to_string(dim_));
  if (!gradientExpressions_.empty() && gradientExpressions_.size() != static_cast<std::size_t>(dim_)) {
    throw std::invalid_argument("ExpressionLoss: " + std::to_string(gradientExpressions_.size()) +
                                " gradient expressions given for dimension " + std::to_string(dim_) +
                                " (give none, for central differences, or one per coordinate)");
  }
  for (const auto& [name, number] : constants_) {
    if (isVariableName(name)) {
      throw std::invalid_argument("ExpressionLoss: the constant '" + name + "' has the name of a variable (" +
                                  variableList(dim_) + " and every theta<k>, x<k> are reserved)");
    }
    if (!std::isfinite(number)) {
      throw std::invalid_argument("ExpressionLoss: the constant '" + name + "' is not finite");
    }
  }
  // Build (and so parse and check) the constructing thread's parser set now: errors surface at construction, not in
  // the solver.
  evaluator();
  // Which variables the gradient expressions use, asked of a parser set of its own (GetUsedVar re-parses).
  const auto probe = makeEvaluator();
  gradientFreeOfTheta_ = !probe->gradient.empty();
  for (const auto& g : probe->gradient)
    for (const auto& used : g->GetUsedVar())
      if (used.first.rfind("theta", 0) == 0) gradientFreeOfTheta_ = false;
}

ExpressionLoss::~ExpressionLoss() {
  // This thread's set goes with the loss; another thread's stays in its table until that thread ends.
  ThreadSets& sets = ThreadSets::mine();
  sets.bySerial.erase(serial_);
  if (sets.lastSerial == serial_) {
    sets.lastSerial = 0;
    sets.last = nullptr;
  }
}

std::unique_ptr<ExpressionLoss::Evaluator> ExpressionLoss::makeEvaluator() const {
  auto e = std::make_unique<Evaluator>();
  e->theta.assign(static_cast<std::size_t>(dim_), 0.0);
  e->x.assign(static_cast<std::size_t>(dim_), 0.0);

  auto build = [&](const std::string& expression, const std::string& what) {
    auto parser = std::make_unique<mu::Parser>();
    try {
      for (int i = 0; i < dim_; ++i) {
        // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "literal" + std::to_string(...).
        const std::string index = std::to_string(i + 1);
        parser->DefineVar(std::string("theta").append(index), &e->theta[static_cast<std::size_t>(i)]);
        parser->DefineVar(std::string("x").append(index), &e->x[static_cast<std::size_t>(i)]);
      }
      parser->DefineVar("y", &e->y);
      parser->DefineFun("log1p", log1pFunction);
      parser->DefineFun("expm1", expm1Function);
      parser->DefineFun("softplus", softplusFunction);
      parser->DefineFun("sigmoid", sigmoidFunction);
      for (const auto& [name, number] : constants_) parser->DefineConst(name, number);
    } catch (const mu::Parser::exception_type& err) {
      throw std::invalid_argument("ExpressionLoss: cannot define the variables, functions and constants: " +
                                  err.GetMsg());
    }
    try {
      parser->SetExpr(expression);
      parser->Eval();  // muParser parses on first evaluation: do it now, at theta = x = 0, y = 1
    } catch (const mu::Parser::exception_type& err) {
      // muParser parses the expression with a space appended, so an error at the end reports a position one or two
      // past the last character: clamp it to the length of the expression as written.
      std::string message = err.GetMsg();
      const int reported = err.GetPos(), length = static_cast<int>(expression.size());
      const std::string where =
          "position " + (reported > length ? std::to_string(length) + " (the end)" : std::to_string(reported));
      const std::string asReported = "position " + std::to_string(reported);
      if (const std::size_t at = message.find(asReported); at != std::string::npos) {
        message.replace(at, asReported.size(), where);
      } else if (reported >= 0) {
        message += " at " + where;
      }
      throw std::invalid_argument("ExpressionLoss: cannot parse the " + what + " \"" + expression + "\": " + message +
                                  " (positions count from 0; the variables are " + variableList(dim_) + ")");
    }
    if (parser->GetNumResults() != 1) {
      throw std::invalid_argument("ExpressionLoss: the " + what + " \"" + expression + "\" holds " +
                                  std::to_string(parser->GetNumResults()) +
                                  " comma-separated expressions; expected exactly one");
    }
    return parser;
  };

  e->value = build(valueExpression_, "loss expression");
  for (std::size_t i = 0; i < gradientExpressions_.size(); ++i) {
    e->gradient.push_back(build(gradientExpressions_[i], "gradient expression " + std::to_string(i + 1) +
                                                             " (d l / d theta" + std::to_string(i + 1) + ")"));
  }
  return e;
}

void ExpressionLoss::requireDimensions(const Vector& theta, const Record& r) const {
  if (theta.size() != dim_ || r.x.size() != dim_) {
    throw std::invalid_argument("ExpressionLoss: the loss has dimension " + std::to_string(dim_) +
                                " but theta has dimension " + std::to_string(theta.size()) +
                                " and the record dimension " + std::to_string(r.x.size()));
  }
}

double ExpressionLoss::finiteDifferenceStep(double thetaComponent) {
  static const double cbrtEpsilon = std::cbrt(std::numeric_limits<double>::epsilon());
  return cbrtEpsilon * std::max(1.0, std::abs(thetaComponent));
}

double ExpressionLoss::value(const Vector& theta, const Record& r) const {
  requireDimensions(theta, r);
  Evaluator& e = evaluator();
  e.bind(theta, r);
  try {
    return e.value->Eval();
  } catch (const mu::Parser::exception_type& err) {
    throw std::runtime_error("ExpressionLoss: evaluating \"" + valueExpression_ + "\" failed: " + err.GetMsg());
  }
}

Vector ExpressionLoss::gradient(const Vector& theta, const Record& r) const {
  requireDimensions(theta, r);
  Evaluator& e = evaluator();
  e.bind(theta, r);
  Vector g(dim_);
  try {
    if (!e.gradient.empty()) {
      for (int i = 0; i < dim_; ++i) g[i] = e.gradient[static_cast<std::size_t>(i)]->Eval();
      return g;
    }
    // Central differences; dividing by the representable step (plus - minus) removes the rounding of theta +- h.
    for (int i = 0; i < dim_; ++i) {
      double& coordinate = e.theta[static_cast<std::size_t>(i)];
      const double centre = coordinate;
      const double h = finiteDifferenceStep(centre);
      const double plus = centre + h, minus = centre - h;
      coordinate = plus;
      const double valuePlus = e.value->Eval();
      coordinate = minus;
      const double valueMinus = e.value->Eval();
      coordinate = centre;
      g[i] = (valuePlus - valueMinus) / (plus - minus);
    }
  } catch (const mu::Parser::exception_type& err) {
    throw std::runtime_error("ExpressionLoss: evaluating the gradient of \"" + valueExpression_ +
                             "\" failed: " + err.GetMsg());
  }
  return g;
}

std::optional<Loss::PairGap> ExpressionLoss::pairGradientGap(const Record& a, const Record& b) const {
  return std::nullopt;
}

}  // namespace fpdp::models
