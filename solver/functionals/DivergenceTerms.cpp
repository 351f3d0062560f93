// DivergenceFunctionals' per-cell terms: their sources and pass 2 (the terms, with KL, TV and the excluded masses).
#include "solver/functionals/Divergences.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "solver/functionals/DivergencesDetail.hpp"
#include "solver/numerics/StableFunctions.hpp"

namespace fpdp::solver {

DivergenceFunctionals::Terms DivergenceFunctionals::termSources(const double* p, const double* q,
                                                                std::ptrdiff_t stride, const SingularMasses* singular,
                                                                const std::array<double, 3>* gradient, double invMp,
                                                                double invMq) const {
  Terms t;
  t.p = p, t.q = q, t.stride = stride, t.volume = quadrature_.weights().data(), t.cells = quadrature_.weights().size();
  t.singular = singular, t.invMp = invMp, t.invMq = invMq, t.gradient = gradient, t.dim = quadrature_.dim();
  t.sigma = &sigma_, t.onBoundary = onBoundary_.data(), t.nextToWall = nextToWall_.data(), t.shell = shell_.data();
  int rank = 0;
  FPDP_PETSC(MPI_Comm_rank(quadrature_.comm(), &rank));
  t.count = t.cells + (singular && rank == 0 ? singular->p.size() : 0);
  return t;
}

DivergenceFunctionals::Terms DivergenceFunctionals::measureTerms(const double* p, const double* q,
                                                                 std::ptrdiff_t stride, const SingularMasses* singular,
                                                                 const std::array<double, 3>* gradient,
                                                                 double invMp, double invMq, double maxP) const {
  const auto& w = quadrature_.weights();
  const std::size_t n = w.size();
  const int dim = quadrature_.dim();
  constexpr double kNegligible = 1e-200;
  Terms out = termSources(p, q, stride, singular, gradient, invMp, invMq);
  out.flags.reserve(out.size());
  out.u.reserve(out.size());
  out.l1l.reserve(out.size());
  out.logWq.reserve(out.size());
  const double pMaxNormalised = maxP * invMp;
  auto push = [&](Terms::Kind kind, bool nearOne = false, double u = 0.0, double l1l = 0.0, double logWq = 0.0) {
    out.flags.push_back(static_cast<unsigned char>(kind | (nearOne ? Terms::kNearOne : 0)));
    out.u.push_back(u);
    out.l1l.push_back(l1l);
    out.logWq.push_back(logWq);
  };
  auto classify = [&](double wc, double pRaw, double qRaw, const double* grad) {
    const bool boundary = out.boundary(out.flags.size());  // the term about to be pushed
    const bool next = out.nextLayer(out.flags.size());
    const double pc = std::max(pRaw, 0.0) * invMp;  // negatives enter as 0 (counted above)
    const double qc = std::max(qRaw, 0.0) * invMq;
    out.tv += wc * std::fabs(pc - qc);
    if (qRaw < 0.0) {
      // A negative q is an artefact of a non-positive scheme, not a zero of the density: the cell is left out of
      // KL and R_alpha (which a zero q would make +inf), and the p-mass left out is reported.
      out.excludedP += wc * pc;
      push(Terms::Skip);  // still counted by the hockey-stick sums (like TV)
      return;
    }
    if (qc == 0.0) {
      // q underflowed to 0. Where p is negligible too (below 1e-200 of its maximum) the cell is numerically empty:
      // both true densities are below the range of doubles there and their contribution is not resolvable, so it is
      // dropped and counted (DivergenceValues::underflowCells). Where p is not negligible, r = inf: +infinity.
      Terms::Kind kind = Terms::Skip;
      if (pc > 0.0 && pc <= kNegligible * pMaxNormalised) {
        ++out.underflow;
      } else if (pc > 0.0) {
        out.infinite = true;
        kind = Terms::Infinite;
      }
      push(kind);
      return;
    }
    const double logWq = std::log(wc * qc);
    if (pc == 0.0) {  // r = 0: h = 1, g_alpha = alpha - 1, g'_alpha = 1, r^alpha = 0
      out.kl += wc * qc;
      if (boundary) out.klWall += wc * qc;
      if (next) out.klNext += wc * qc;
      push(Terms::PZero, false, 0.0, 0.0, logWq);
      return;
    }
    // Near r = 1 (|rho| < 1/2) the cancellation-free forms; farther out the direct ones (cellLogRatio):
    //   q h(r) = p log r - (p - q),   q g_alpha(r) = q r^alpha - q - alpha (p - q).
    const CellLogRatio r = cellLogRatio(pc, qc);
    const bool nearOne = r.nearOne;
    const double u = r.u, l1l = r.l1l;
    const double klTerm = klCellTerm(r, wc, pc, qc);
    out.kl += klTerm;
    if (boundary) out.klWall += klTerm;
    if (next) out.klNext += klTerm;
    double g2, gs;
    // A stencil cell has p <= 0 or q <= 0 (or there are no gradients): log r has no gradient there.
    if (grad && !gradientForms(grad, dim, sigma_, g2, gs)) out.excludedInfoP += wc * pc;
    push(Terms::Regular, nearOne, u, l1l, logWq);
  };
  static constexpr std::array<double, 3> kNoGradient{kNaN, kNaN, kNaN};
  for (std::size_t c = 0; c < n; ++c)
    classify(w[c], p[c * stride], q[c * stride], gradient ? gradient[c].data() : kNoGradient.data());
  // Singular masses (mass form, on rank 0): no gradient in the ambient space, so no part of I_alpha's numerator.
  for (std::size_t j = 0; n + j < out.size(); ++j) classify(1.0, singular->p[j], singular->q[j], nullptr);
  return out;
}

}  // namespace fpdp::solver
