#include "solver/propagation/ExponentialEvolution.hpp"

#include <petscmat.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "solver/propagation/BoolOption.hpp"

namespace fpdp::solver {

namespace {
/// The integrator's name in checkpoints (IntegratorState::tsType) and in describe().
constexpr const char* kTsTypeName = "exponential";

/// Terms per pass of the stencil path (ClenshawWavefront). kDefaultClenshawDepth: the fastest on two ranks for the OU
/// benchmark at 1024^2 and within 6 % of depth 16 on one (bench/README.md; the depths measured on 2026-11-26, commit
/// 05c2e5a: 1024^2 on 1 / 2 ranks, depth 8 3.17 / 1.79 s, depth 16 2.99 / 2.01 s; no effect at 256^2).
constexpr int kDefaultClenshawDepth = 8;

/// -fpdp_clenshaw_depth N: terms per pass, 1 .. ClenshawWavefront::kMaxDepth (1: one term at a time).
int clenshawDepthOption() {
  char value[64] = "";
  PetscBool set = PETSC_FALSE;
  FPDP_PETSC(PetscOptionsGetString(nullptr, nullptr, "-fpdp_clenshaw_depth", value, sizeof value, &set));
  if (!set) return kDefaultClenshawDepth;
  char* end = nullptr;
  errno = 0;
  const long depth = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || errno != 0 || depth < 1 || depth > ClenshawWavefront::kMaxDepth)
    throw PetscFailure(std::string("-fpdp_clenshaw_depth ") + value + ": expected an integer from 1 to " +
                       std::to_string(ClenshawWavefront::kMaxDepth));
  return static_cast<int>(depth);
}
}  // namespace

std::vector<double> scaledBesselCoefficients(double c, double tolerance) {
  if (!(c >= 0.0) || !std::isfinite(c))
    throw std::invalid_argument("scaledBesselCoefficients: c must be finite and >= 0");
  if (c == 0.0) return {1.0};
  // e^{-c} I_k(c) ~ exp(-k^2 / (2c)) / sqrt(2 pi c) for large c, and ~ (c/2)^k / k! e^{-c} for small c: starting
  // the backward recurrence well beyond the index where the terms fall below the tolerance makes the start error
  // (relative, of the size of the terms there) negligible.
  const double logTol = std::log(1.0 / tolerance);
  // The terms are about 2 sqrt(2 c log(1/tol)): bounded so that an output interval far too long for the operator
  // (T rho = 2c of 1e300, say) is an error naming its cause, not an allocation failure or an endless recurrence.
  constexpr double kMaxTerms = 1e7;
  const double startEstimate = std::ceil(2.0 * std::sqrt(2.0 * c * (logTol + 10.0)) + 2.0 * logTol + 40.0);
  if (!(startEstimate <= kMaxTerms))
    throw std::invalid_argument("the exponential integrator needs about " + std::to_string(startEstimate) +
                                " Chebyshev terms per output interval (T |A| / 2 = " + std::to_string(c) +
                                "), more than 10^7: make time.dt * output.every shorter, or choose another "
                                "solver.ts_type");
  const long start = static_cast<long>(startEstimate);
  // Backward recurrence for the minimal solution: I_{k-1} = (2k / c) I_k + I_{k+1}; rescaled on overflow.
  std::vector<double> b(static_cast<std::size_t>(start) + 2, 0.0);
  b[static_cast<std::size_t>(start)] = 1e-300;
  for (long k = start; k >= 1; --k) {
    b[static_cast<std::size_t>(k - 1)] = 2.0 * static_cast<double>(k) / c * b[static_cast<std::size_t>(k)] +
                                         b[static_cast<std::size_t>(k + 1)];
    if (b[static_cast<std::size_t>(k - 1)] > 1e250)
      for (long j = k - 1; j <= start; ++j) b[static_cast<std::size_t>(j)] *= 1e-250;
  }
  // Normalise by e^c = I_0 + 2 sum_{k>=1} I_k (summed from the small end up).
  double sum = 0.0;
  for (long k = start; k >= 1; --k) sum += 2.0 * b[static_cast<std::size_t>(k)];
  sum += b[0];
  for (auto& v : b) v /= sum;
  // Truncate: the first K with 2 sum_{k > K} b_k <= tolerance.
  double tail = 0.0;
  long K = start;
  while (K > 0 && tail + 2.0 * b[static_cast<std::size_t>(K)] <= tolerance)
    tail += 2.0 * b[static_cast<std::size_t>(K--)];
  b.resize(static_cast<std::size_t>(K) + 1);
  return b;
}

std::vector<double> poissonWeights(double lambda, double growth) {
  if (!(lambda >= 0.0) || !std::isfinite(lambda) || !(growth > 0.0) || !std::isfinite(growth))
    throw std::invalid_argument("poissonWeights: lambda must be finite and >= 0, growth finite and > 0");
  if (lambda == 0.0) return {1.0};
  // Bounded as the Chebyshev coefficients are: an interval far too long for the operator is an error naming its cause.
  constexpr double kMaxTerms = 1e7;
  if (!(lambda * growth + 40.0 * std::sqrt(lambda * growth) + 800.0 <= kMaxTerms))
    throw std::invalid_argument("the exponential integrator's positive series needs about " +
                                std::to_string(lambda) + " terms per output interval (c T), more than 10^7: make "
                                "time.dt * output.every shorter, or choose another solver.ts_type");
  const auto mode = static_cast<std::size_t>(std::floor(lambda));
  std::vector<double> w(mode + 1, 0.0);
  w[mode] = 1.0;
  for (std::size_t k = mode; k >= 1; --k) w[k - 1] = w[k] * (static_cast<double>(k) / lambda);
  // Past the mode until a term is below 1e-300 of the mode's and the ratio of the terms weighted by growth^k,
  // lambda growth / (k + 1), is at most 1/2: what follows is then below the last term (its geometric tail).
  for (std::size_t k = mode;; ++k) {
    const double ratio = lambda * growth / static_cast<double>(k + 1);
    if (w[k] < 1e-300 && ratio <= 0.5) break;
    w.push_back(w[k] * (lambda / static_cast<double>(k + 1)));
  }
  double sum = 0.0;
  for (const double v : w) sum += v;
  for (double& v : w) v /= sum;
  return w;
}

double chiSquaredToMaxNormFactor(Vec w, Vec u, int fields) {
  const PetscScalar *wa, *ua;
  PetscInt n = 0;
  FPDP_PETSC(VecGetLocalSize(u, &n));
  FPDP_PETSC(VecGetArrayRead(w, &wa));
  FPDP_PETSC(VecGetArrayRead(u, &ua));
  // Per field: max log W, max log |u|, and the log-sum-exp of 2 (log |u| - log W) (shifted by its running maximum).
  std::vector<double> local(3 * static_cast<std::size_t>(fields), -INFINITY), sums(static_cast<std::size_t>(fields), 0.0);
  bool overflow = false;
  for (PetscInt i = 0; i < n; ++i) {
    const auto f = static_cast<std::size_t>(i % fields);
    const double wi = wa[i], ui = std::fabs(ua[i]);
    if (!(wi > 0.0)) {
      overflow = overflow || ui > 0.0;
      continue;
    }
    local[3 * f] = std::max(local[3 * f], std::log(wi));
    if (!(ui > 0.0)) continue;
    local[3 * f + 1] = std::max(local[3 * f + 1], std::log(ui));
    const double x = 2.0 * (std::log(ui) - std::log(wi));
    if (x > local[3 * f + 2]) {
      sums[f] = sums[f] * std::exp(local[3 * f + 2] - x) + 1.0;
      local[3 * f + 2] = x;
    } else {
      sums[f] += std::exp(x - local[3 * f + 2]);
    }
  }
  FPDP_PETSC(VecRestoreArrayRead(u, &ua));
  FPDP_PETSC(VecRestoreArrayRead(w, &wa));
  // The shifts are made global (the maximum over ranks), then the sums rescaled to it and added.
  std::vector<double> global(local.size());
  FPDP_PETSC(MPI_Allreduce(local.data(), global.data(), static_cast<PetscMPIInt>(local.size()), MPI_DOUBLE, MPI_MAX,
                           PetscObjectComm(reinterpret_cast<PetscObject>(u))));
  std::vector<double> scaled(sums.size()), total(sums.size());
  for (std::size_t f = 0; f < sums.size(); ++f)
    scaled[f] = std::isfinite(local[3 * f + 2]) ? sums[f] * std::exp(local[3 * f + 2] - global[3 * f + 2]) : 0.0;
  FPDP_PETSC(MPI_Allreduce(scaled.data(), total.data(), static_cast<PetscMPIInt>(total.size()), MPI_DOUBLE, MPI_SUM,
                           PetscObjectComm(reinterpret_cast<PetscObject>(u))));
  int anyOverflow = overflow ? 1 : 0, globalOverflow = 0;
  FPDP_PETSC(MPI_Allreduce(&anyOverflow, &globalOverflow, 1, MPI_INT, MPI_MAX, PetscObjectComm(reinterpret_cast<PetscObject>(u))));
  if (globalOverflow) return INFINITY;
  double worst = 0.0;
  for (std::size_t f = 0; f < sums.size(); ++f) {
    if (!std::isfinite(global[3 * f + 1])) continue;  // u = 0 in this field
    const double logG = global[3 * f] + 0.5 * (global[3 * f + 2] + std::log(total[f])) - global[3 * f + 1];
    worst = std::max(worst, std::exp(logG));  // +inf beyond the double range
  }
  return worst;
}

double detailedBalanceDefect(Mat A, Vec w) {
  meshes::MatHandle B, Bt;
  meshes::VecHandle winv;
  FPDP_PETSC(VecDuplicate(w, winv.out()));
  FPDP_PETSC(VecCopy(w, winv));
  FPDP_PETSC(VecReciprocal(winv));
  FPDP_PETSC(MatDuplicate(A, MAT_COPY_VALUES, B.out()));
  FPDP_PETSC(MatDiagonalScale(B, winv, w));  // B = W^-1 A W
  FPDP_PETSC(MatTranspose(B, MAT_INITIAL_MATRIX, Bt.out()));
  PetscInt lo, hi;
  FPDP_PETSC(MatGetOwnershipRange(B, &lo, &hi));
  double worst = 0.0;
  for (PetscInt i = lo; i < hi; ++i) {
    PetscInt nb, nt;
    const PetscInt *cb, *ct;
    const PetscScalar *vb, *vt;
    FPDP_PETSC(MatGetRow(B, i, &nb, &cb, &vb));
    FPDP_PETSC(MatGetRow(Bt, i, &nt, &ct, &vt));
    // Both rows are sorted by column; an entry missing from one side counts as 0 there.
    PetscInt a = 0, t = 0;
    while (a < nb || t < nt) {
      const PetscInt col = std::min(a < nb ? cb[a] : PETSC_MAX_INT, t < nt ? ct[t] : PETSC_MAX_INT);
      const double x = a < nb && cb[a] == col ? vb[a++] : 0.0;
      const double y = t < nt && ct[t] == col ? vt[t++] : 0.0;
      if (col == i) continue;
      if (!std::isfinite(x) || !std::isfinite(y)) {
        worst = INFINITY;
        continue;
      }
      const double scale = std::max(std::fabs(x), std::fabs(y));
      if (scale > 0.0) worst = std::max(worst, std::fabs(x - y) / scale);
    }
    FPDP_PETSC(MatRestoreRow(Bt, i, &nt, &ct, &vt));
    FPDP_PETSC(MatRestoreRow(B, i, &nb, &cb, &vb));
  }
  double global = 0.0;
  FPDP_PETSC(MPI_Allreduce(&worst, &global, 1, MPI_DOUBLE, MPI_MAX, PetscObjectComm(reinterpret_cast<PetscObject>(A))));
  return global;
}

ExponentialEvolution::ExponentialEvolution(const meshes::DistributedBoxMesh& mesh, meshes::MatHandle A, Vec w,
                                           const ExponentialSettings& settings)
    : mesh_(mesh), A_(std::move(A)), settings_(settings) {
  checkSettings();
  initialiseFromMatrix(w);
}

void ExponentialEvolution::initialiseFromMatrix(Vec w) {
  defect_ = detailedBalanceDefect(A_, w);
  checkDetailedBalance();
  // Both norms bound the spectral radius; the smaller is the tighter bound.
  PetscReal n1 = 0.0, nInf = 0.0;
  FPDP_PETSC(MatNorm(A_, NORM_1, &n1));
  FPDP_PETSC(MatNorm(A_, NORM_INFINITY, &nInf));
  rho_ = std::min(n1, nInf);
  if (!std::isfinite(rho_)) throw std::invalid_argument("the operator has entries that are not finite");
  stencil_ = std::make_unique<StencilOperator>();
  // -fpdp_exponential_aij: PETSc's AIJ product instead (for comparison).
  if (boolOption(nullptr, "-fpdp_exponential_aij", false) || !stencil_->build(A_, mesh_.dm())) stencil_.reset();
  createWavefront();
}

ExponentialEvolution::ExponentialEvolution(const meshes::DistributedBoxMesh& mesh, const FokkerPlanckOperator& op,
                                           Vec w, const ExponentialSettings& settings)
    : mesh_(mesh), settings_(settings) {
  checkSettings();
  stencil_ = std::make_unique<StencilOperator>();
  if (boolOption(nullptr, "-fpdp_exponential_aij", false) || !op.buildStencil(*stencil_)) {
    A_ = op.assemble();  // the matrix path (whose check may refuse op)
    initialiseFromMatrix(w);
    return;
  }
  defect_ = stencil_->detailedBalanceDefect(mesh_.dm(), w);
  checkDetailedBalance();
  const auto norms = stencil_->norms(mesh_.dm());  // {infinity, 1}, as MatNorm sums them
  rho_ = std::min(norms[1], norms[0]);
  if (!std::isfinite(rho_)) throw std::invalid_argument("the operator has entries that are not finite");
  createWavefront();
}

ExponentialEvolution::ExponentialEvolution(const meshes::DistributedBoxMesh& mesh, const FokkerPlanckOperator& op,
                                           const ExponentialSettings& settings)
    : mesh_(mesh), settings_(settings), aposteriori_(true) {
  checkSettings();
  stencil_ = std::make_unique<StencilOperator>();
  if (!op.buildStencil(*stencil_, StencilOperator::Shape::Box))
    throw std::invalid_argument("the exponential integrator needs second-order fluxes (solver.spatial_order = 2): "
                                "the fourth-order rows reach two cells");
  // The infinity norm alone: its row sums are the same bits on any number of ranks, the 1-norm's column sums are
  // not (they add the neighbours' parts in another order), and every term depends on rho.
  rho_ = stencil_->norms(mesh_.dm())[0];
  if (!std::isfinite(rho_)) throw std::invalid_argument("the operator has entries that are not finite");
  if (settings_.positiveSeries) {
    const StencilOperator::Signs signs = stencil_->signs(mesh_.dm());
    // Its cost grows like c T (an explicit step's): beyond kPositiveSeriesMostTerms per output interval (a drift
    // that makes the operator huge) the Chebyshev expansion, whose cost grows like sqrt(rho T), takes over.
    const double rate = kUniformizationMargin * signs.largestOutflow;
    const double interval = settings_.dt * static_cast<double>(std::max(1L, std::min(settings_.observeEvery,
                                                                                     settings_.steps)));
    if (signs.metzler && signs.largestOutflow > 0.0 && std::isfinite(signs.largestOutflow) &&
        rate * interval <= kPositiveSeriesMostTerms) {
      positiveSeries_ = true;
      uniformRate_ = rate;
      maxNormGrowth_ = 1.0 + signs.largestRowSum / uniformRate_;  // ||I + A / c||_inf (P >= 0)
    }
  }
  createWavefront();
}

void ExponentialEvolution::checkSettings() const {
  if (!(settings_.dt > 0) || settings_.steps < 0 || settings_.observeEvery < 1 ||
      !(settings_.aposterioriTolerance > 0.0) || !(settings_.largestGrowth >= 1.0))
    throw std::invalid_argument("ExponentialEvolution: dt > 0, steps >= 0, observeEvery >= 1, aposterioriTolerance > 0 "
                                "and largestGrowth >= 1 are required");
}

void ExponentialEvolution::checkDetailedBalance() const {
  if (defect_ <= kDetailedBalanceTolerance) return;
  std::ostringstream os;
  os << "the operator does not satisfy detailed balance (largest relative asymmetry of W^-1 A W: " << defect_
     << ", allowed " << kDetailedBalanceTolerance
     << "), so its spectrum need not be real and the Chebyshev expansion of exp(T A) does not apply";
  throw std::invalid_argument(os.str());
}

void ExponentialEvolution::createWavefront() {
  if (!aposteriori_ && stencil_)
    wavefront_ = std::make_unique<ClenshawWavefront>(*stencil_, mesh_.dm(), clenshawDepthOption());
}

// The work vectors live only while an interval is propagated: between intervals the observers (the functionals of
// an output step) reuse their memory, which the heap keeps (peak memory, docs/scaling.md §6).
void ExponentialEvolution::createWorkVectors() {
  if (stencil_ && !stencil_->ghostedIsOwned()) FPDP_PETSC(DMCreateLocalVector(mesh_.dm(), ghosted_.out()));
  previous_ = mesh_.createVector();
  current_ = mesh_.createVector();
  if (aposteriori_)  // u holds the sum: two terms and the interval's start
    start_ = mesh_.createVector();
  else
    product_ = mesh_.createVector();
}

void ExponentialEvolution::releaseWorkVectors() {
  ghosted_.reset();
  previous_.reset();
  current_.reset();
  start_.reset();
  product_.reset();
}

void ExponentialEvolution::applyOperator(Vec x, Vec y) {
  if (!stencil_) {
    FPDP_PETSC(MatMult(A_, x, y));
    return;
  }
  // y = -(0 - A x): the stencil's residual with a zero right-hand side, negated (both steps exact). The stencil
  // also where the matrix exists, so that both constructors give the same result to the last bit.
  FPDP_PETSC(VecZeroEntries(y));
  FPDP_PETSC(residual(*stencil_, mesh_.dm(), x, y, y, ghosted_));
  FPDP_PETSC(VecScale(y, -1.0));
}

ExponentialEvolution::~ExponentialEvolution() = default;

const std::vector<double>& ExponentialEvolution::coefficients(double T) const {
  auto it = coefficients_.find(T);
  if (it == coefficients_.end())
    it = coefficients_
             .emplace(T, positiveSeries_
                             ? poissonWeights(T * uniformRate_, maxNormGrowth_)
                             : scaledBesselCoefficients(0.5 * T * rho_, aposteriori_ ? kAposterioriSeriesTruncation
                                                                                     : kChebyshevTruncation))
             .first;
  return it->second;
}

long ExponentialEvolution::termsPerInterval() const {
  // A full interval is observeEvery steps, unless the whole run is shorter.
  const long steps = std::max(1L, std::min(settings_.observeEvery, settings_.steps));
  return static_cast<long>(coefficients(settings_.dt * static_cast<double>(steps)).size());
}

void ExponentialEvolution::propagate(Vec u, double T) {
  createWorkVectors();
  const struct Release {
    ExponentialEvolution& e;
    ~Release() { e.releaseWorkVectors(); }
  } release{*this};
  if (positiveSeries_) return propagatePositiveSeries(u, T);
  if (aposteriori_) return propagateWithEstimate(u, T);
  if (!(T > 0.0) || rho_ == 0.0) return;
  const std::vector<double>& a = coefficients(T);
  const std::size_t K = a.size() - 1;
  if (K == 0) {
    FPDP_PETSC(VecScale(u, a[0]));
    return;
  }
  // exp(T A) u ~ sum_k c_k T_k(X) u, X = I + (2/rho) A, c_0 = a_0, c_k = 2 a_k, by Clenshaw's recurrence from the
  // smallest coefficient up: b_(K+1) = 0, b_K = c_K u, b_k = c_k u + 2 X b_(k+1) - b_(k+2)
  //                                                      = (4/rho) A b_(k+1) + 2 b_(k+1) - b_(k+2) + c_k u,
  // and the sum a_0 u + X b_1 - b_2. Against the forward recurrence (T_(k+1) from T_k and T_(k-1), with the sum
  // accumulated term by term) one array fewer per term: u is read, the sum is neither read nor written (OU at 256^2:
  // the integration to t = 2 0.039 -> 0.034 s, to t = 20 0.125 -> 0.103 s; bench/README.md).
  Vec prev = previous_, cur = current_;
  if (wavefront_) {
    // Several terms per pass over memory (ClenshawWavefront): the same bits as one term at a time.
    wavefront_->run(u, a, 4.0 / rho_, cur, prev);
    products_ += static_cast<long>(K) - 1;
  } else {
    FPDP_PETSC(VecZeroEntries(prev));  // b_(K+1)
    FPDP_PETSC(VecCopy(u, cur));
    FPDP_PETSC(VecScale(cur, 2.0 * a[K]));  // b_K
    for (std::size_t k = K - 1; k >= 1; --k) {  // cur = b_(k+1), prev = b_(k+2) -> b_k
      FPDP_PETSC(MatMult(A_, cur, product_));
      FPDP_PETSC(VecAXPBYPCZ(prev, 4.0 / rho_, 2.0, -1.0, product_, cur));
      FPDP_PETSC(VecAXPY(prev, 2.0 * a[k], u));
      ++products_;
      std::swap(prev, cur);
    }
  }
  // cur = b_1, prev = b_2: u <- a_0 u + b_1 + (2/rho) A b_1 - b_2.
  applyOperator(cur, product_);
  ++products_;
  FPDP_PETSC(VecAXPBYPCZ(u, 1.0, 2.0 / rho_, a[0], cur, product_));  // u <- a_0 u + b_1 + (2/rho) A b_1
  FPDP_PETSC(VecAXPY(u, -1.0, prev));
}

double ExponentialEvolution::chebyshevStep(Vec x, Vec t, Vec s, double scale, double weight) {
  const Vec xv = ghostedInput(mesh_.dm(), x, ghosted_);
  const PetscScalar* xx;
  PetscScalar *tt, *ss;
  FPDP_PETSC(VecGetArrayRead(xv, &xx));
  FPDP_PETSC(VecGetArray(t, &tt));
  FPDP_PETSC(VecGetArray(s, &ss));
  double largest = stencil_->chebyshevStep(xx, tt, ss, scale, weight);
  FPDP_PETSC(VecRestoreArray(s, &ss));
  FPDP_PETSC(VecRestoreArray(t, &tt));
  FPDP_PETSC(VecRestoreArrayRead(xv, &xx));
  ++products_;
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_DOUBLE, MPI_MAX, mesh_.comm()));
  return largest;
}

namespace {
/// Terms over which the growth rate of ||T_k u|| is measured.
constexpr std::size_t kGrowthWindow = 8;

/// Whether the expansion with coefficients a may stop after term k, given norms[j] = ||T_j(X) u|| / ||u|| for
/// j <= k: the truncation estimate (the largest norm so far, carried on at the growth rate q of the last terms,
/// times the coefficients left, 2 sum_(j > k) a_j q^(j - k)) is within the tolerance. At k = K the
/// coefficients have run out (those left are below kAposterioriSeriesTruncation, unknown): no.
bool mayStop(const std::vector<double>& a, const std::vector<double>& norms, std::size_t k, double tolerance,
             double& truncation) {
  if (k + 1 >= a.size()) return false;
  double q = 1.0, largest = 1.0;
  for (std::size_t j = 0; j <= k; ++j) largest = std::max(largest, norms[j]);
  for (std::size_t j = k > kGrowthWindow ? k - kGrowthWindow + 1 : 1; j <= k; ++j)
    if (norms[j - 1] > 0.0) q = std::max(q, norms[j] / norms[j - 1]);
  double sum = 0.0, power = 1.0;
  for (std::size_t j = k + 1; j < a.size() && power < 1e300; ++j) {
    power *= q;
    sum += 2.0 * a[j] * power;
  }
  truncation = power < 1e300 ? largest * sum : INFINITY;
  return truncation <= tolerance;
}

/// Whether norms (a substep's, up to where it stopped or failed) show that coefficients a would stop before the
/// growth passed the largest accepted. T_k(X) u does not depend on the substep, only the coefficients do, so a
/// failed substep tells how far to shorten it without trying.
bool wouldConverge(const std::vector<double>& a, const std::vector<double>& norms, const ExponentialSettings& s) {
  double truncation = 0.0;
  for (std::size_t k = 1; k < norms.size(); ++k) {
    if (norms[k] > s.largestGrowth) return false;
    if (mayStop(a, norms, k, s.aposterioriTolerance, truncation)) return true;
  }
  return false;
}
}  // namespace

bool ExponentialEvolution::forwardExpansion(Vec u, double tau, double& estimate) {
  const std::vector<double>& a = coefficients(tau);
  const std::size_t K = a.size() - 1;
  PetscReal size = 0.0;
  FPDP_PETSC(VecNorm(u, NORM_INFINITY, &size));
  norms_.assign(1, 1.0);
  if (K == 0 || size == 0.0) return true;  // exp(tau A) = I to the series' truncation, or u = 0
  Vec prev = previous_, cur = current_;
  FPDP_PETSC(VecCopy(u, prev));  // T_0 u
  FPDP_PETSC(VecCopy(u, cur));
  FPDP_PETSC(VecScale(u, a[0]));  // u holds the sum from here on
  // T_1 u = X u = (2/rho) A u + u: the term's 2 x - t with t = x (exact).
  norms_.push_back(chebyshevStep(prev, cur, u, 2.0 / rho_, 2.0 * a[1]) / size);
  double used = a[0] + 2.0 * a[1], truncation = 0.0;
  std::size_t k = 1;
  while (!mayStop(a, norms_, k, settings_.aposterioriTolerance, truncation)) {
    // Round-off: the terms' rounding errors, about eps ||T_k u|| each, would reach the tolerance.
    if (k == K || norms_[k] > settings_.largestGrowth) return false;
    // cur = T_k u, prev = T_(k-1) u -> prev = T_(k+1) u = (4/rho) A T_k u + 2 T_k u - T_(k-1) u.
    norms_.push_back(chebyshevStep(cur, prev, u, 4.0 / rho_, 2.0 * a[k + 1]) / size);
    used += 2.0 * a[++k];
    std::swap(prev, cur);
  }
  // The coefficients left out go to the last term: they then sum to 1, and exp(0) = 1 keeps the mass. A loop, not
  // VecAXPY: BLAS fuses the multiply-add in its vector body and not in its tail, so the bits would depend on where
  // a rank's array starts (this file is compiled without contraction).
  PetscScalar* s;
  const PetscScalar* t;
  PetscInt n = 0;
  FPDP_PETSC(VecGetLocalSize(u, &n));
  FPDP_PETSC(VecGetArray(u, &s));
  FPDP_PETSC(VecGetArrayRead(cur, &t));
  const double left = 1.0 - used;
  for (PetscInt i = 0; i < n; ++i) s[i] += left * t[i];
  FPDP_PETSC(VecRestoreArrayRead(cur, &t));
  FPDP_PETSC(VecRestoreArray(u, &s));
  estimate += truncation;
  return true;
}

void ExponentialEvolution::propagateWithEstimate(Vec u, double T) {
  if (!(T > 0.0) || rho_ == 0.0) return;
  // Substeps T / 2^j. After a failed substep (done again from its start) j grows until the failed terms' norms
  // predict success (wouldConverge); after a successful one it shrinks where that substep's norms predict that a
  // doubled one succeeds too. Each interval starts from the whole of T, so the substeps depend on the state only:
  // a restart takes the same ones.
  constexpr int kMostHalvings = 20;
  int halvings = 0;
  double done = 0.0, estimate = 0.0;
  PetscReal largest = 0.0;  // max |u| at the interval's start: the estimate's unit
  FPDP_PETSC(VecNorm(u, NORM_INFINITY, &largest));
  while (done < T) {
    const double tau = std::min(std::ldexp(T, -halvings), T - done);
    FPDP_PETSC(VecCopy(u, start_));
    if (forwardExpansion(u, tau, estimate)) {
      done += tau;
      ++substeps_;
      if (halvings > 0 && wouldConverge(coefficients(std::ldexp(T, 1 - halvings)), norms_, settings_)) --halvings;
      continue;
    }
    FPDP_PETSC(VecCopy(start_, u));
    do {
      if (++halvings > kMostHalvings)
        throw PetscFailure("the exponential integrator's expansion does not converge in substeps of 2^-20 of an "
                           "output interval (its terms grow beyond " + std::to_string(settings_.largestGrowth) +
                           " times the state): is the state or the operator not finite?");
    } while (!wouldConverge(coefficients(std::ldexp(T, -halvings)), norms_, settings_));
  }
  errorEstimate_ = std::max(errorEstimate_, estimate);
  stateError_ += estimate * largest;
}

void ExponentialEvolution::propagatePositiveSeries(Vec u, double T) {
  if (!(T > 0.0)) return;
  const std::vector<double>& w = coefficients(T);
  const std::size_t K = w.size() - 1;
  PetscReal size = 0.0;
  FPDP_PETSC(VecNorm(u, NORM_INFINITY, &size));
  if (K == 0 || size == 0.0) return;  // exp(T A) = I to round-off, or u = 0
  // tails[j] = sum_(k > j) w_k g^(k - j): the truncation after term j is at most ||P^j u||_inf tails[j]. Past K the
  // terms weighted by g^k fall by 1/2 or more each (poissonWeights), so their sum is below w_K g.
  const double g = maxNormGrowth_;
  std::vector<double> tails(K + 1);
  tails[K] = w[K] * g;
  for (std::size_t j = K; j >= 1; --j) tails[j - 1] = g * (w[j] + tails[j]);
  Vec prev = previous_, cur = current_;
  FPDP_PETSC(VecCopy(u, prev));  // P^0 u
  FPDP_PETSC(VecScale(u, w[0]));  // u holds the sum from here on
  double norm = size, used = w[0];
  std::size_t j = 0;
  while (!(norm * tails[j] <= kPositiveSeriesTolerance * size)) {
    if (j == K)
      throw PetscFailure("the exponential integrator's positive series does not reach its tolerance within its " +
                         std::to_string(K) + " terms: is the state or the operator not finite?");
    // cur = P prev = prev + (1/c) A prev: the Chebyshev term's t <- scale A x + 2 x - t with t = x (2 x - x exact).
    FPDP_PETSC(VecCopy(prev, cur));
    norm = chebyshevStep(prev, cur, u, 1.0 / uniformRate_, w[j + 1]);
    used += w[++j];
    std::swap(prev, cur);
  }
  // The sum is divided by the weights used (1 to round-off and the tails below the tolerance): the mass (P keeps it)
  // is then kept to round-off, and every cell changes by the same relative amount. Not as the Chebyshev expansion
  // does it (the rest to the last term): that term is 10^-60 of the sum at the tails' end, and the rest's round-off
  // of 1e-16 of max |u| would be its largest part there, a floor where every cell was known relatively.
  FPDP_PETSC(VecScale(u, 1.0 / used));
  const double bound = norm * tails[j];
  ++substeps_;
  errorEstimate_ = std::max(errorEstimate_, bound / size);
  stateError_ += bound;
}

void ExponentialEvolution::advance(Vec u, const Observer& observer, long fromStep, double startTime) {
  step_ = fromStep;
  const long every = settings_.observeEvery;
  while (step_ < settings_.steps && (stopAfter_ < 0 || step_ < stopAfter_)) {
    const long next = std::min(settings_.steps, (step_ / every + 1) * every);
    propagate(u, settings_.dt * static_cast<double>(next - step_));
    step_ = next;
    time_ = startTime + settings_.dt * static_cast<double>(step_);
    observer(step_, time_, u);
  }
}

void ExponentialEvolution::run(Vec u, const Observer& observer, double startTime) {
  products_ = 0;
  errorEstimate_ = 0.0;
  stateError_ = 0.0;
  substeps_ = 0;
  step_ = 0;
  time_ = startTime;
  stopAfter_ = -1;  // before the first observer call, which may already stop the run (a fault in the initial state)
  observer(0, startTime, u);
  advance(u, observer, 0, startTime);
}

void ExponentialEvolution::resume(Vec u, const Observer& observer, const IntegratorState& state) {
  if (state.tsType != kTsTypeName)
    throw PetscFailure("the checkpoint was written by ts_type " + state.tsType + ", this run uses " + kTsTypeName);
  if (state.step % settings_.observeEvery != 0 && state.step != settings_.steps)
    throw PetscFailure("the checkpoint's step " + std::to_string(state.step) + " is not an output step");
  products_ = 0;
  errorEstimate_ = 0.0;
  stateError_ = state.stateErrorBound;  // the intervals before the checkpoint: the bound carries on
  substeps_ = 0;
  time_ = state.time;
  stopAfter_ = -1;
  // Times are startTime + step dt: the start time of the uninterrupted run.
  advance(u, observer, state.step, state.time - settings_.dt * static_cast<double>(state.step));
}

IntegratorState ExponentialEvolution::captureState() const {
  IntegratorState s;
  s.tsType = kTsTypeName;
  s.step = step_;
  s.time = time_;
  s.timeStep = settings_.dt;
  s.stateErrorBound = stateError_;
  return s;
}

std::string ExponentialEvolution::describe() const {
  std::ostringstream os;
  os.precision(6);
  if (positiveSeries_) {
    os << "ts_type=" << kTsTypeName << " (positive series: uniformization at rate " << uniformRate_
       << ", truncation " << kPositiveSeriesTolerance << " of max |u| per output interval, at most "
       << termsPerInterval() << " terms per output interval, " << stencil_->points() << "-point stencil products)";
    return os.str();
  }
  if (aposteriori_) {
    os << "ts_type=" << kTsTypeName << " (Chebyshev with a posteriori control, tolerance " << settings_.aposterioriTolerance
       << ", spectral bound " << rho_ << ", at most " << termsPerInterval() << " terms per output interval, "
       << stencil_->points() << "-point stencil products)";
    return os.str();
  }
  os << "ts_type=" << kTsTypeName << " (Chebyshev, spectral bound " << rho_ << ", " << termsPerInterval()
     << " terms per output interval, " << (stencil_ ? "star-stencil" : "AIJ") << " products";
  if (wavefront_) os << ", " << wavefront_->depth() << " terms per pass";
  os << ")";
  return os.str();
}

}  // namespace fpdp::solver
