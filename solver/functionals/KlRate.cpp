#include "solver/functionals/KlRate.hpp"

#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "meshes/BorrowedLocalVector.hpp"

namespace fpdp::solver {

std::shared_ptr<const CellDriftGap> gradientGapAtCells(const meshes::DistributedBoxMesh& mesh,
                                                       const GradientField& gradD,
                                                       const GradientField& gradDPrime) {
  auto gap = std::make_shared<CellDriftGap>(static_cast<std::size_t>(mesh.owned().size()), std::array<double, 3>{});
  const int d = mesh.dim();
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const ParameterPoint x = mesh.box().centreAt({static_cast<int>(i), static_cast<int>(j), static_cast<int>(k)});
    const ParameterPoint g = gradD(x), gp = gradDPrime(x);
    for (int a = 0; a < d; ++a) (*gap)[static_cast<std::size_t>(l)][a] = g[a] - gp[a];
  });
  return gap;
}

KlRateFunctional::KlRateFunctional(const meshes::DistributedBoxMesh& mesh,
                                   const GradientField& gradD,
                                   const GradientField& gradDPrime, const models::Matrix& Sigma,
                                   const models::Matrix& SigmaPrime)
    : KlRateFunctional(mesh, gradientGapAtCells(mesh, gradD, gradDPrime), Sigma, SigmaPrime) {}

KlRateFunctional::KlRateFunctional(const meshes::DistributedBoxMesh& mesh, std::shared_ptr<const CellDriftGap> gradientGap,
                                   const models::Matrix& Sigma, const models::Matrix& SigmaPrime)
    : mesh_(mesh), Sigma_(Sigma), SigmaPrime_(SigmaPrime), SigmaInv_(Sigma.inverse()), gradientGap_(std::move(gradientGap)) {
  if (!gradientGap_ || gradientGap_->size() != static_cast<std::size_t>(mesh.owned().size()))
    throw std::invalid_argument("KlRateFunctional: one drift gap per owned cell");
}

KlRate KlRateFunctional::evaluate(Vec u) const {
  const meshes::BorrowedLocalVector ghosted(mesh_.dm(), u);
  const PetscScalar* a;
  FPDP_PETSC(VecGetArrayRead(ghosted, &a));
  const auto& g = mesh_.ghosted();
  const auto& box = mesh_.box();
  const auto& vol = mesh_.ownedVolumes();
  const int d = mesh_.dim();
  // Small fixed-size copies of the matrices, and the log of every ghosted value once (a cell's log enters the
  // differences of up to 2d neighbours): per-cell Eigen vectors of dynamic size and four logs per axis made this
  // functional 14 ms of a 256^2 output step.
  double S[3][3] = {}, dS[3][3] = {}, Sinv[3][3] = {};
  for (int r = 0; r < d; ++r)
    for (int c = 0; c < d; ++c)
      S[r][c] = Sigma_(r, c), dS[r][c] = Sigma_(r, c) - SigmaPrime_(r, c), Sinv[r][c] = SigmaInv_(r, c);
  const std::size_t values = 2 * static_cast<std::size_t>(g.size());
  std::vector<double> logs(values);
  for (std::size_t v = 0; v < values; ++v) logs[v] = a[v] > 0 ? std::log(a[v]) : 0.0;  // used only where a > 0
  // Per axis and owned index: the strides to the difference's two cells (0 on the wall side: one-sided there) and
  // the distance of their centres, read once (the per-cell lookups through the box were a third of the loop).
  struct AxisGeometry {
    PetscInt first = 0;
    std::vector<PetscInt> lowerStride, upperStride;
    std::vector<double> span;
  };
  std::array<AxisGeometry, 3> axes;
  {
    const PetscInt stride[3] = {2, 2 * g.count[0], 2 * g.count[0] * g.count[1]};
    for (int ax = 0; ax < d; ++ax) {
      auto& geo = axes[static_cast<std::size_t>(ax)];
      geo.first = mesh_.owned().start[static_cast<std::size_t>(ax)];
      const int cells = box.cells(ax);
      for (PetscInt c = geo.first; c < geo.first + mesh_.owned().count[static_cast<std::size_t>(ax)]; ++c) {
        const PetscInt m = c > 0 ? c - 1 : c, p = c < cells - 1 ? c + 1 : c;
        geo.lowerStride.push_back((c - m) * stride[ax]);
        geo.upperStride.push_back((p - c) * stride[ax]);
        geo.span.push_back(box.axis(ax).centre(static_cast<int>(p)) - box.axis(ax).centre(static_cast<int>(m)));
      }
    }
  }
  double sums[7] = {0, 0, 0, 0, 0, 0, 0};  // quadratic, cross, bound integrand, excluded mass, E_p[gap_a^2] x3
  double mass = 0.0;
  const CellDriftGap& gradientGap = *gradientGap_;
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const std::array<PetscInt, 3> c{i, j, k};
    const double p = a[2 * g.local(i, j, k)], q = a[2 * g.local(i, j, k) + 1];
    mass += vol[l] * p;
    double driftGap[3];  // b - b' with b = -grad L
    for (int ax = 0; ax < d; ++ax) driftGap[ax] = -gradientGap[static_cast<std::size_t>(l)][ax];
    for (int ax = 0; ax < d; ++ax) sums[4 + ax] += vol[l] * std::max(p, 0.0) * driftGap[ax] * driftGap[ax];
    if (!(p > 0 && q > 0)) {
      sums[3] += vol[l] * std::max(p, 0.0);
      return;
    }
    double glp[3] = {0, 0, 0}, glq[3] = {0, 0, 0};  // grad log p, grad log q
    const PetscInt centre = 2 * g.local(i, j, k);
    for (int ax = 0; ax < d; ++ax) {
      const auto& geo = axes[static_cast<std::size_t>(ax)];
      const std::size_t n = static_cast<std::size_t>(c[ax] - geo.first);
      const PetscInt im = centre - geo.lowerStride[n], ip = centre + geo.upperStride[n];
      if (!(a[im] > 0 && a[ip] > 0 && a[im + 1] > 0 && a[ip + 1] > 0)) {
        sums[3] += vol[l] * p;
        return;
      }
      glp[ax] = (logs[ip] - logs[im]) / geo.span[n];
      glq[ax] = (logs[ip + 1] - logs[im + 1]) / geo.span[n];
    }
    double glr[3], w[3];  // grad log (p/q); b - b' - (Sigma - Sigma') grad log q
    for (int r = 0; r < d; ++r) {
      glr[r] = glp[r] - glq[r];
      double t = 0.0;
      for (int c2 = 0; c2 < d; ++c2) t += dS[r][c2] * glq[c2];
      w[r] = driftGap[r] - t;
    }
    double quadratic = 0.0, cross = 0.0, bound = 0.0;
    for (int r = 0; r < d; ++r) {
      double sg = 0.0, sw = 0.0;
      for (int c2 = 0; c2 < d; ++c2) sg += S[r][c2] * glr[c2], sw += Sinv[r][c2] * w[c2];
      quadratic += glr[r] * sg;
      cross += glr[r] * w[r];
      bound += w[r] * sw;
    }
    sums[0] += vol[l] * p * quadratic;
    sums[1] += vol[l] * p * cross;
    sums[2] += vol[l] * p * 0.25 * bound;
  });
  FPDP_PETSC(VecRestoreArrayRead(ghosted, &a));
  double local[8] = {sums[0], sums[1], sums[2], sums[3], mass, sums[4], sums[5], sums[6]}, global[8];
  FPDP_PETSC(MPI_Allreduce(local, global, 8, MPI_DOUBLE, MPI_SUM, mesh_.comm()));
  KlRate r;
  for (int ax = 0; ax < 3; ++ax) r.gapSquared[ax] = global[5 + ax] / global[4];
  // p normalised by its mass (the divergences are of probability densities).
  r.identity = (-global[0] + global[1]) / global[4];
  r.boundIntegrand = global[2] / global[4];
  r.excludedMass = global[3] / global[4];
  return r;
}

}  // namespace fpdp::solver
