// Problem constants lambda, beta, S_g of MATH.md §1 and §5 for a pair of empirical losses on a box: closed forms
// for the built-in losses, Hessian sampling on a grid of the box otherwise (see LossConstants.hpp).
// Exercise: build/tests/models/test_models --run_test=loss_constants
#include "models/LossConstants.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>

#include "models/ExpressionLoss.hpp"

namespace fpdp::models {

namespace {

std::string number(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

void requireBox(const std::array<double, 3>& lower, const std::array<double, 3>& upper, int dim, const char* who) {
  if (dim < 1 || dim > 3) throw std::invalid_argument(std::string(who) + ": dim must be 1, 2 or 3, got " + std::to_string(dim));
  for (int a = 0; a < dim; ++a) {
    if (!std::isfinite(lower[a]) || !std::isfinite(upper[a]) || !(lower[a] < upper[a])) {
      throw std::invalid_argument(std::string(who) + ": the box needs finite lower < upper on axis " + std::to_string(a) +
                                  ", got [" + number(lower[a]) + ", " + number(upper[a]) + "]");
    }
  }
}

// Calls f(theta) at the gridPointsPerAxis^dim points lower + k (upper - lower)/(N - 1), k = 0..N-1 per axis.
void forEachGridPoint(const std::array<double, 3>& lower, const std::array<double, 3>& upper, int dim, int pointsPerAxis,
                      const std::function<void(const Vector&)>& f) {
  const int N = pointsPerAxis;
  auto coordinate = [&](int axis, int k) {
    return k == N - 1 ? upper[axis] : lower[axis] + (upper[axis] - lower[axis]) * k / (N - 1);
  };
  Vector theta(dim);
  const int nj = dim >= 2 ? N : 1, nk = dim >= 3 ? N : 1;
  for (int k = 0; k < nk; ++k) {
    if (dim >= 3) theta[2] = coordinate(2, k);
    for (int j = 0; j < nj; ++j) {
      if (dim >= 2) theta[1] = coordinate(1, j);
      for (int i = 0; i < N; ++i) {
        theta[0] = coordinate(0, i);
        f(theta);
      }
    }
  }
}

std::string gridLabel(int pointsPerAxis, int dim) {
  return "estimated on a " + std::to_string(pointsPerAxis) + "^" + std::to_string(dim) + " grid of the box";
}

bool valueOnlyGradient(const Loss& loss) {
  const auto* expression = dynamic_cast<const ExpressionLoss*>(&loss);
  return expression != nullptr && !expression->hasGradientExpressions();
}

}  // namespace

Matrix lossHessian(const Loss& loss, const Vector& theta, const Record& r) {
  if (auto closed = loss.hessian(theta, r)) return *closed;
  const Eigen::Index d = theta.size();
  Matrix H(d, d);
  if (!valueOnlyGradient(loss)) {
    // H_ij = (g_i(theta + h_j e_j) - g_i(theta - h_j e_j)) / (2 h_j): error O(h^2) + O(eps |g| / h).
    const double step = std::cbrt(std::numeric_limits<double>::epsilon());
    for (Eigen::Index j = 0; j < d; ++j) {
      const double h = step * std::max(1.0, std::abs(theta[j]));
      Vector plus = theta, minus = theta;
      plus[j] += h;
      minus[j] -= h;
      H.col(j) = (loss.gradient(plus, r) - loss.gradient(minus, r)) / (plus[j] - minus[j]);
    }
    return 0.5 * (H + H.transpose());
  }
  // Second differences of the value: error O(h^2) + O(eps |l| / h^2), optimal h ~ eps^(1/4).
  const double step = std::pow(std::numeric_limits<double>::epsilon(), 0.25);
  Vector h(d);
  for (Eigen::Index i = 0; i < d; ++i) {
    // A representable step: (theta + h) - theta == h exactly.
    const double raw = step * std::max(1.0, std::abs(theta[i]));
    h[i] = (theta[i] + raw) - theta[i];
  }
  const double centre = loss.value(theta, r);
  auto at = [&](Eigen::Index i, double si, Eigen::Index j, double sj) {
    Vector t = theta;
    t[i] += si * h[i];
    t[j] += sj * h[j];
    return loss.value(t, r);
  };
  for (Eigen::Index i = 0; i < d; ++i) {
    Vector plus = theta, minus = theta;
    plus[i] += h[i];
    minus[i] -= h[i];
    H(i, i) = (loss.value(plus, r) - 2.0 * centre + loss.value(minus, r)) / (h[i] * h[i]);
    for (Eigen::Index j = i + 1; j < d; ++j) {
      H(i, j) = H(j, i) = (at(i, 1, j, 1) - at(i, 1, j, -1) - at(i, -1, j, 1) + at(i, -1, j, -1)) / (4.0 * h[i] * h[j]);
    }
  }
  return H;
}

HessianExtremes hessianExtremesOnGrid(const EmpiricalLoss& L, const std::array<double, 3>& lower,
                                      const std::array<double, 3>& upper, int dim, int gridPointsPerAxis) {
  requireBox(lower, upper, dim, "hessianExtremesOnGrid");
  if (gridPointsPerAxis < 2) throw std::invalid_argument("hessianExtremesOnGrid: at least 2 grid points per axis");
  if (L.data().dim() != dim) throw std::invalid_argument("hessianExtremesOnGrid: the data dimension is not dim");
  HessianExtremes extremes{std::numeric_limits<double>::infinity(), 0.0};
  const double n = static_cast<double>(L.data().size());
  forEachGridPoint(lower, upper, dim, gridPointsPerAxis, [&](const Vector& theta) {
    Matrix H = Matrix::Zero(dim, dim);
    for (const Record& r : L.data().records()) H += lossHessian(L.loss(), theta, r);
    H /= n;
    const Vector eigenvalues = Eigen::SelfAdjointEigenSolver<Matrix>(H, Eigen::EigenvaluesOnly).eigenvalues();
    extremes.minEigenvalue = std::min(extremes.minEigenvalue, eigenvalues.minCoeff());
    extremes.maxAbsEigenvalue = std::max(extremes.maxAbsEigenvalue, eigenvalues.cwiseAbs().maxCoeff());
  });
  return extremes;
}

LossConstants computeConstants(const EmpiricalLoss& D, const EmpiricalLoss& DPrime, const Record& replaced,
                               const Record& replacement, const std::array<double, 3>& lower,
                               const std::array<double, 3>& upper, int dim, int gridPointsPerAxis) {
  requireBox(lower, upper, dim, "computeConstants");
  if (gridPointsPerAxis < 2) throw std::invalid_argument("computeConstants: at least 2 grid points per axis");
  if (&D.loss() != &DPrime.loss()) {
    throw std::invalid_argument("computeConstants: L_D and L_D' must share one loss object");
  }
  if (D.clipNorm() != DPrime.clipNorm()) {
    throw std::invalid_argument("computeConstants: L_D and L_D' have different clip norms");
  }
  if (D.data().dim() != dim || DPrime.data().dim() != dim || replaced.x.size() != dim || replacement.x.size() != dim) {
    throw std::invalid_argument("computeConstants: the data, the replaced and the replacement record must all have "
                                "dimension " + std::to_string(dim));
  }
  const Loss& loss = D.loss();
  const auto* quadratic = dynamic_cast<const QuadraticLoss*>(&loss);
  const auto* logistic = dynamic_cast<const LogisticLoss*>(&loss);
  const auto* huber = dynamic_cast<const HuberLoss*>(&loss);
  const auto* doubleWell = dynamic_cast<const DoubleWellLoss*>(&loss);
  const std::string grid = gridLabel(gridPointsPerAxis, dim);
  const std::string clippingNote =
      D.clipNorm() ? "; of the unclipped losses (the clipped drift is bounded by C, never strongly monotone on R^d)" : "";

  // The grid is sampled at most once per loss, and only when a closed form is missing.
  std::optional<HessianExtremes> sampled;
  auto extremes = [&]() -> const HessianExtremes& {
    if (!sampled) {
      const HessianExtremes a = hessianExtremesOnGrid(D, lower, upper, dim, gridPointsPerAxis);
      const HessianExtremes b = hessianExtremesOnGrid(DPrime, lower, upper, dim, gridPointsPerAxis);
      sampled = HessianExtremes{std::min(a.minEigenvalue, b.minEigenvalue),
                                std::max(a.maxAbsEigenvalue, b.maxAbsEigenvalue)};
    }
    return *sampled;
  };

  LossConstants c;

  // ---- lambda ----
  const std::optional<double> closedLambda = loss.strongConvexity();
  if (closedLambda && *closedLambda > 0) {
    c.strongConvexity = *closedLambda;
    if (quadratic) {
      c.strongConvexitySource = "closed form: lambda (the Hessian is lambda I everywhere; exact)";
    } else if (logistic || huber) {
      c.strongConvexitySource = "closed form: mu, the infimum over R^d of the smallest Hessian eigenvalue (exact on "
                                "R^d; on the box the losses may be more strongly convex)";
    } else {
      c.strongConvexitySource = "closed form (" + loss.name() + " loss)";
    }
    c.strongConvexitySource += clippingNote;
  } else {
    // Below 1e-6 of the largest eigenvalue a positive minimum is indistinguishable from 0 at the accuracy of a
    // differenced Hessian (and of round-off in a closed-form one): not reported as strong convexity.
    const double smallest = extremes().minEigenvalue, threshold = 1e-6 * extremes().maxAbsEigenvalue;
    const std::string onRd = closedLambda ? " (the closed-form constant on R^d is " + number(*closedLambda) + ")" : "";
    const std::string why = onRd.empty() && doubleWell ? " (each double-well term has a local maximum)" : onRd;
    if (smallest > threshold) {
      c.strongConvexity = smallest;
      c.strongConvexitySource =
          grid + ": smallest Hessian eigenvalue of L_D, L_D' (an estimate, not a bound)" + onRd + clippingNote;
    } else {
      c.strongConvexitySource = "none: not strongly convex on the box (smallest Hessian eigenvalue " + number(smallest) +
                                (smallest > 0 ? ", below 1e-6 of the largest" : "") + ", " + grid + ")" + why;
    }
  }

  // ---- beta ----
  const std::optional<double> betaD = loss.smoothness(D.data()), betaDPrime = loss.smoothness(DPrime.data());
  if (betaD && betaDPrime) {
    c.smoothness = std::max(*betaD, *betaDPrime);
    if (quadratic) {
      c.smoothnessSource = "closed form: lambda (exact)";
    } else if (logistic) {
      c.smoothnessSource = "closed-form bound: mu + max_i |x_i|^2/4 over the records of D and D' (the per-record "
                           "supremum over R^d, attained at zero margin)";
    } else if (huber) {
      c.smoothnessSource = "closed-form bound: 1 + mu (attained where theta is within delta of every record)";
    } else {
      c.smoothnessSource = "closed form (" + loss.name() + " loss)";
    }
  } else {
    c.smoothness = extremes().maxAbsEigenvalue;
    c.smoothnessSource = grid + ": largest |Hessian eigenvalue| of L_D, L_D' (an estimate, not a bound)";
    if (doubleWell) {
      const double bound = std::max(doubleWell->smoothnessBoundOnBox(D.data(), lower, upper, dim),
                                    doubleWell->smoothnessBoundOnBox(DPrime.data(), lower, upper, dim));
      c.smoothnessSource += "; closed-form bound (1/n) sum_i sup_box |Hessian l(.; x_i)| = " + number(bound);
    }
  }

  // ---- S_g ----
  const std::optional<Loss::PairGap> gap = sensitivityBound(loss, replaced, replacement, D.clipNorm());
  if (gap) {
    c.sensitivity = gap->value;
    if (D.clipNorm()) {
      const bool clipBinds = !loss.pairGradientGap(replaced, replacement) ||
                             2.0 * *D.clipNorm() <= loss.pairGradientGap(replaced, replacement)->value;
      c.sensitivitySource = std::string(gap->exact ? "closed form (exact)" : "bound") + ": min(pair gradient gap, 2C), C = " +
                            number(*D.clipNorm()) + (clipBinds ? " (2C binds)" : " (the pair gap binds)");
    } else {
      c.sensitivitySource = std::string(gap->exact ? "closed form (exact)" : "closed-form bound") +
                            ": sup_theta |grad l(theta; x) - grad l(theta; x')| of the " + loss.name() + " loss";
    }
  } else {
    double largest = 0;
    forEachGridPoint(lower, upper, dim, gridPointsPerAxis, [&](const Vector& theta) {
      largest = std::max(largest,
                         (D.perExampleGradient(theta, replaced) - D.perExampleGradient(theta, replacement)).norm());
    });
    c.sensitivity = largest;
    c.sensitivitySource = grid + ": sup |grad l(theta; x) - grad l(theta; x')| (no closed form" +
                          std::string(doubleWell ? "; infinite on R^d for the double-well loss)" : ")");
  }
  return c;
}

}  // namespace fpdp::models
