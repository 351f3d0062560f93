#include "models/GaussianGridAverages.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "models/Gaussian.hpp"
#include "models/GaussianFunctionals.hpp"

namespace fpdp::models {

namespace {

void checkArguments(const Vector& mean, const Matrix& covariance, const std::vector<std::vector<double>>& faces) {
  const auto d = mean.size();
  if (d < 1 || covariance.rows() != d || covariance.cols() != d || static_cast<Eigen::Index>(faces.size()) != d)
    throw std::invalid_argument("gaussianGridAverages: mean, covariance and faces must have one entry per axis");
  if ((covariance - covariance.transpose()).cwiseAbs().maxCoeff() > 0.0 || covariance.llt().info() != Eigen::Success)
    throw std::invalid_argument("gaussianGridAverages: the covariance must be symmetric positive definite");
  for (const auto& f : faces) {
    if (f.size() < 2) throw std::invalid_argument("gaussianGridAverages: an axis needs at least one cell");
    for (std::size_t i = 0; i + 1 < f.size(); ++i)
      if (!(f[i] < f[i + 1]) || !std::isfinite(f[i]) || !std::isfinite(f[i + 1]))
        throw std::invalid_argument("gaussianGridAverages: faces must be finite and increasing");
  }
}

/// The probabilities of the standard normal on the intervals [t_j, t_{j+1}] of increasing points t (out[j], j <
/// t.size() - 1): one erfc per point, the difference taken between the tails on the side where both are small (so the
/// tails keep relative accuracy), and normalIntervalProbability's quadrature where an interval is so narrow against
/// the tail's scale 1 / max(1, |t|) that the difference would cancel.
void intervalProbabilities(const std::vector<double>& t, std::vector<double>& tail, std::vector<double>& out) {
  const std::size_t n = t.size();
  tail.resize(n);
  for (std::size_t j = 0; j < n; ++j) tail[j] = normalUpperTail(std::fabs(t[j]));  // the smaller tail at t_j
  for (std::size_t j = 0; j + 1 < n; ++j) {
    const double a = t[j], b = t[j + 1];
    if ((b - a) * std::max(1.0, std::min(std::fabs(a), std::fabs(b))) < 1e-3) {
      out[j] = normalIntervalProbability(a, b);
    } else if (a >= 0) {
      out[j] = tail[j] - tail[j + 1];  // P(Z > a) - P(Z > b)
    } else if (b <= 0) {
      out[j] = tail[j + 1] - tail[j];  // P(Z < b) - P(Z < a)
    } else {
      out[j] = 1.0 - tail[j] - tail[j + 1];
    }
  }
}

}  // namespace

int fullCovarianceNodes(std::size_t totalCells, int d) {
  for (int n : {4, 3})
    if (static_cast<double>(totalCells) * std::pow(n, d - 1) <= 2e9) return n;
  return 2;
}

std::vector<double> gaussianGridAverages(const Vector& mean, const Matrix& covariance,
                                         const std::vector<std::vector<double>>& faces, int nodes) {
  checkArguments(mean, covariance, faces);
  if (nodes < 1 || nodes > 16) throw std::invalid_argument("gaussianGridAverages: nodes must be 1 to 16");
  const int d = static_cast<int>(mean.size());
  std::vector<int> cells(static_cast<std::size_t>(d));
  std::size_t total = 1;
  for (int a = 0; a < d; ++a) {
    cells[static_cast<std::size_t>(a)] = static_cast<int>(faces[static_cast<std::size_t>(a)].size()) - 1;
    total *= static_cast<std::size_t>(cells[static_cast<std::size_t>(a)]);
  }
  std::vector<double> out(total, 0.0);

  if (covariance.isDiagonal(0.0)) {
    // Independent coordinates: each axis's interval probabilities over its widths, multiplied cell by cell.
    std::vector<std::vector<double>> axis(static_cast<std::size_t>(d));
    for (int a = 0; a < d; ++a) {
      const auto& f = faces[static_cast<std::size_t>(a)];
      const double m = mean[a], s = std::sqrt(covariance(a, a));
      for (std::size_t i = 0; i + 1 < f.size(); ++i)
        axis[static_cast<std::size_t>(a)].push_back(normalIntervalProbability((f[i] - m) / s, (f[i + 1] - m) / s) /
                                                    (f[i + 1] - f[i]));
    }
    std::vector<int> index(static_cast<std::size_t>(d), 0);
    for (std::size_t k = 0; k < total; ++k) {
      double v = 1.0;
      for (int a = 0; a < d; ++a) v *= axis[static_cast<std::size_t>(a)][static_cast<std::size_t>(index[static_cast<std::size_t>(a)])];
      out[k] = v;
      for (int a = 0; a < d; ++a) {
        if (++index[static_cast<std::size_t>(a)] < cells[static_cast<std::size_t>(a)]) break;
        index[static_cast<std::size_t>(a)] = 0;
      }
    }
    return out;
  }

  // Full covariance: x = (u, v), u the first k = d - 1 coordinates, v the last. v given u is
  // N(m_v + beta (u - m_u), s^2) with beta = C_vu C_uu^-1, s^2 = C_vv - beta C_uv; u has the density of N(m_u, C_uu).
  const int k = d - 1;
  const Matrix Cuu = covariance.topLeftCorner(k, k);
  const Eigen::LLT<Matrix> cholesky(Cuu);
  const Matrix precision = cholesky.solve(Matrix::Identity(k, k));
  const Vector cuv = covariance.col(k).head(k);
  const Vector beta = cholesky.solve(cuv);
  const double conditionalVariance = covariance(k, k) - beta.dot(cuv);
  if (!(conditionalVariance > 0.0))
    throw std::invalid_argument("gaussianGridAverages: the covariance must be symmetric positive definite");
  const double s = std::sqrt(conditionalVariance);
  double logDet = 0.0;
  for (int i = 0; i < k; ++i) logDet += 2.0 * std::log(cholesky.matrixL()(i, i));
  const double logNorm = -0.5 * (k * std::log(2.0 * std::numbers::pi) + logDet);

  // The outer rule's nodes and weights per axis and cell (a weight: the Gauss-Legendre weight times the half-width).
  const int n = nodes;
  const GaussLegendreRule& rule = gaussLegendre(n);
  std::vector<std::vector<double>> node(static_cast<std::size_t>(k)), weight(static_cast<std::size_t>(k));
  for (int a = 0; a < k; ++a) {
    const auto& f = faces[static_cast<std::size_t>(a)];
    for (std::size_t i = 0; i + 1 < f.size(); ++i) {
      const double c = 0.5 * (f[i] + f[i + 1]), h = 0.5 * (f[i + 1] - f[i]);
      for (int q = 0; q < n; ++q) {
        node[static_cast<std::size_t>(a)].push_back(c + h * rule.nodes[static_cast<std::size_t>(q)] - mean[a]);
        weight[static_cast<std::size_t>(a)].push_back(h * rule.weights[static_cast<std::size_t>(q)]);
      }
    }
  }
  const auto& last = faces[static_cast<std::size_t>(k)];
  const int lastCells = cells[static_cast<std::size_t>(k)];
  std::size_t lineStride = 1;  // the distance of neighbours along the last axis (the other axes' cells)
  for (int a = 0; a < k; ++a) lineStride *= static_cast<std::size_t>(cells[static_cast<std::size_t>(a)]);
  std::vector<double> t(last.size()), tail, probability(static_cast<std::size_t>(lastCells)),
      line(static_cast<std::size_t>(lastCells));
  Vector z(k);
  std::size_t nodesPerCell = 1;
  for (int a = 0; a < k; ++a) nodesPerCell *= static_cast<std::size_t>(n);
  // Outer cells (axis 0 fastest), and within each its tensor nodes: the cell's line along the last axis is summed in
  // `line` and written once (the line's cells lie lineStride apart).
  std::vector<int> cell(static_cast<std::size_t>(k), 0), point(static_cast<std::size_t>(k), 0);
  for (std::size_t outer = 0; outer < lineStride; ++outer) {
    std::fill(line.begin(), line.end(), 0.0);
    std::fill(point.begin(), point.end(), 0);
    for (std::size_t visit = 0; visit < nodesPerCell; ++visit) {
      double w = 1.0;
      for (int a = 0; a < k; ++a) {
        const auto at = static_cast<std::size_t>(cell[static_cast<std::size_t>(a)] * n + point[static_cast<std::size_t>(a)]);
        z[a] = node[static_cast<std::size_t>(a)][at];
        w *= weight[static_cast<std::size_t>(a)][at];
      }
      for (int a = 0; a < k; ++a) {
        if (++point[static_cast<std::size_t>(a)] < n) break;
        point[static_cast<std::size_t>(a)] = 0;
      }
      const double mass = w * std::exp(logNorm - 0.5 * z.dot(precision * z));
      if (mass == 0.0) continue;  // underflow: every term of this node is 0
      const double conditionalMean = mean[k] + beta.dot(z);
      for (std::size_t j = 0; j < last.size(); ++j) t[j] = (last[j] - conditionalMean) / s;
      intervalProbabilities(t, tail, probability);
      for (int j = 0; j < lastCells; ++j) line[static_cast<std::size_t>(j)] += mass * probability[static_cast<std::size_t>(j)];
    }
    for (int j = 0; j < lastCells; ++j) out[outer + static_cast<std::size_t>(j) * lineStride] = line[static_cast<std::size_t>(j)];
    for (int a = 0; a < k; ++a) {
      if (++cell[static_cast<std::size_t>(a)] < cells[static_cast<std::size_t>(a)]) break;
      cell[static_cast<std::size_t>(a)] = 0;
    }
  }
  // Probabilities to averages.
  std::vector<int> index(static_cast<std::size_t>(d), 0);
  for (std::size_t c = 0; c < total; ++c) {
    double volume = 1.0;
    for (int a = 0; a < d; ++a) {
      const auto& f = faces[static_cast<std::size_t>(a)];
      const auto i = static_cast<std::size_t>(index[static_cast<std::size_t>(a)]);
      volume *= f[i + 1] - f[i];
    }
    out[c] /= volume;
    for (int a = 0; a < d; ++a) {
      if (++index[static_cast<std::size_t>(a)] < cells[static_cast<std::size_t>(a)]) break;
      index[static_cast<std::size_t>(a)] = 0;
    }
  }
  return out;
}

double gaussianOutsideBoxBound(const Vector& mean, const Matrix& covariance, const std::vector<double>& lower,
                               const std::vector<double>& upper) {
  const auto d = mean.size();
  if (covariance.isDiagonal(0.0)) {
    double inside = 1.0;
    for (Eigen::Index a = 0; a < d; ++a) {
      const double s = std::sqrt(covariance(a, a));
      inside *= normalIntervalProbability((lower[static_cast<std::size_t>(a)] - mean[a]) / s,
                                          (upper[static_cast<std::size_t>(a)] - mean[a]) / s);
    }
    return std::max(0.0, 1.0 - inside);
  }
  double outside = 0.0;
  for (Eigen::Index a = 0; a < d; ++a) {
    const double s = std::sqrt(covariance(a, a));
    outside += normalUpperTail((mean[a] - lower[static_cast<std::size_t>(a)]) / s) +
               normalUpperTail((upper[static_cast<std::size_t>(a)] - mean[a]) / s);
  }
  return std::min(1.0, outside);
}

}  // namespace fpdp::models
