#pragma once
// The divergences between p (trained on D) and q (on D') of whole fields of any dimension (meshes::BoxMesh, up to six
// axes, one process): the quantities of MATH.md §3 and §7 by the same quadrature as DivergenceFunctionals (point
// values at the centres by PointValues.hpp's fourth-order reconstruction, then the midpoint rule), the same
// normalisation (each density by its computed mass) and the same cancellation-free terms (StableFunctions.hpp):
//   KL(p || q)    = sum_c |c| q h(r),  h(r) = rho u + l1l(rho),  r = p/q, rho = r - 1, u = log1p(rho);
//   E_alpha - 1   = sum_c |c| q g(r),  g(r) = em1l(alpha u) + alpha l1l(rho);  R_alpha = log1p(E_alpha - 1)/(alpha - 1)
//                   while E_alpha - 1 < 1, else log(sum_c |c| q r^alpha)/(alpha - 1) as a log-sum-exp;
//   TV            = (1/2) sum_c |c| |p - q|;
//   delta(eps)    = sum_c |c| max(p - e^eps q, 0), and eps(delta) by models::exactEpsilons on the same sums;
// both directions (p || q and q || p). +inf where q = 0 and p > 0 (R_alpha, KL of that direction).
// What it does not do (DivergenceFunctionals does, on the DMDA of d <= 3): the tail model that decides infinite
// orders of Sigma != Sigma' pairs, the noise-floor shares, I_alpha, the privacy-loss histograms, MPI. It reports what
// the accuracy contract needs besides the values: each number's share of its sum in the wall cells (a box that cuts
// off what decides it), the densities' masses and spreads, negative cells. Fields split over MPI ranks along axis 0
// (SlabNoisyGd) are summed part by part (wholeFieldDivergencesOfParts): the same numbers to round-off, the same on
// every rank.
#include <mpi.h>

#include <vector>

#include "meshes/BoxMesh.hpp"
#include "models/RdpConversion.hpp"

namespace fpdp::solver {

struct WholeFieldSettings {
  std::vector<double> orders;          // Renyi orders > 1
  std::vector<double> hockeyStickEps;  // ascending, >= 0
  std::vector<double> epsilonDeltas;   // each in (0, 1)
};

/// One direction's numbers (p || q, or q || p with the roles exchanged).
struct WholeFieldDirection {
  double kl = 0.0;
  double klWallShare = 0.0;
  std::vector<double> renyi;           // one per order
  std::vector<double> renyiWallShare;  // the wall cells' share of sum |c| q r^alpha
  std::vector<double> hockeyStick;     // delta(eps) on the eps grid
  std::vector<double> hockeyStickWallShare;
  std::vector<models::ExactEpsilon> epsilon;  // one per delta
  std::vector<double> epsilonWallShare;       // the wall cells' share of delta(eps) at the root
};

struct WholeFieldDivergences {
  double massP = 0.0, massQ = 0.0;  // sum |c| u of the cell averages, before normalisation
  double minP = 0.0, minQ = 0.0;
  long negativeCellsP = 0, negativeCellsQ = 0;  // cells with a negative average (entering the sums as 0)
  meshes::AxisValues meanP{}, meanQ{}, spreadP{}, spreadQ{};  // per axis, of the normalised cell masses
  double tv = 0.0;
  WholeFieldDirection pq, qp;
};

/// The numbers above for cell averages p and q (natural order, mesh.totalCells() each), on one process.
WholeFieldDivergences wholeFieldDivergences(const meshes::BoxMesh& mesh, const std::vector<double>& p,
                                            const std::vector<double>& q, const WholeFieldSettings& settings);

/// The same for fields split over the ranks of comm along axis 0: `part` is this rank's box (axis 0 restricted), p
/// and q its cell averages, pointP and pointQ their point values (PointValues.hpp's reconstruction with the
/// neighbouring ranks' cells: SlabNoisyGd::divergences); lowerWall/upperWall: whether the part's first/last cells
/// along axis 0 lie at the box's walls. Collective; every rank returns the same numbers.
WholeFieldDivergences wholeFieldDivergencesOfParts(MPI_Comm comm, const meshes::BoxMesh& part, bool lowerWall,
                                                   bool upperWall, const std::vector<double>& p,
                                                   const std::vector<double>& q, std::vector<double> pointP,
                                                   std::vector<double> pointQ, const WholeFieldSettings& settings);

}  // namespace fpdp::solver
