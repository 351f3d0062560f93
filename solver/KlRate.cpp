#include "solver/KlRate.hpp"

#include <cmath>

namespace fpdp::solver {

KlRateFunctional::KlRateFunctional(const meshes::DistributedBoxMesh& mesh, std::function<Point3(const Point3&)> gradD,
                                   std::function<Point3(const Point3&)> gradDPrime, const models::Matrix& Sigma,
                                   const models::Matrix& SigmaPrime)
    : mesh_(mesh), Sigma_(Sigma), SigmaPrime_(SigmaPrime), SigmaInv_(Sigma.inverse()) {
  driftGap_.resize(static_cast<std::size_t>(mesh.owned().size()));
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const Point3 x = mesh.box().centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
    const Point3 g = gradD(x), gp = gradDPrime(x);
    for (int a = 0; a < 3; ++a) driftGap_[l][a] = -(g[a] - gp[a]);  // b - b' with b = -grad L
  });
  FPDP_PETSC(DMCreateLocalVector(mesh.dm(), local_.out()));
}

KlRate KlRateFunctional::evaluate(Vec u) const {
  FPDP_PETSC(DMGlobalToLocalBegin(mesh_.dm(), u, INSERT_VALUES, local_));
  FPDP_PETSC(DMGlobalToLocalEnd(mesh_.dm(), u, INSERT_VALUES, local_));
  const PetscScalar* a;
  FPDP_PETSC(VecGetArrayRead(local_, &a));
  const auto& g = mesh_.ghosted();
  const auto& box = mesh_.box();
  const auto& vol = mesh_.ownedVolumes();
  const int d = mesh_.dim();
  const models::Matrix dSigma = Sigma_ - SigmaPrime_;
  KlRate r;
  double sums[7] = {0, 0, 0, 0, 0, 0, 0};  // quadratic, cross, bound integrand, excluded mass, E_p[gap_a^2] x3
  double mass = 0.0;
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const std::array<PetscInt, 3> c{i, j, k};
    const double p = a[2 * g.local(i, j, k)], q = a[2 * g.local(i, j, k) + 1];
    mass += vol[l] * p;
    for (int ax = 0; ax < d; ++ax) sums[4 + ax] += vol[l] * std::max(p, 0.0) * driftGap_[l][ax] * driftGap_[l][ax];
    if (!(p > 0 && q > 0)) {
      sums[3] += vol[l] * std::max(p, 0.0);
      return;
    }
    models::Vector glp(d), glq(d);  // grad log p, grad log q
    bool ok = true;
    for (int ax = 0; ax < d; ++ax) {
      std::array<PetscInt, 3> m = c, pl = c;
      const int n = box.cells(ax);
      if (c[ax] > 0) --m[ax];
      if (c[ax] < n - 1) ++pl[ax];
      const double xm = box.axis(ax).centre(static_cast<int>(m[ax])), xp = box.axis(ax).centre(static_cast<int>(pl[ax]));
      const double pm = a[2 * g.local(m[0], m[1], m[2])], pp = a[2 * g.local(pl[0], pl[1], pl[2])];
      const double qm = a[2 * g.local(m[0], m[1], m[2]) + 1], qp = a[2 * g.local(pl[0], pl[1], pl[2]) + 1];
      if (!(pm > 0 && pp > 0 && qm > 0 && qp > 0)) {
        ok = false;
        break;
      }
      glp[ax] = (std::log(pp) - std::log(pm)) / (xp - xm);
      glq[ax] = (std::log(qp) - std::log(qm)) / (xp - xm);
    }
    if (!ok) {
      sums[3] += vol[l] * p;
      return;
    }
    const models::Vector glr = glp - glq;
    models::Vector gap(d);
    for (int ax = 0; ax < d; ++ax) gap[ax] = driftGap_[l][ax];
    const models::Vector w = gap - dSigma.topLeftCorner(d, d) * glq;
    sums[0] += vol[l] * p * glr.dot(Sigma_.topLeftCorner(d, d) * glr);
    sums[1] += vol[l] * p * glr.dot(w);
    sums[2] += vol[l] * p * 0.25 * w.dot(SigmaInv_.topLeftCorner(d, d) * w);
  });
  FPDP_PETSC(VecRestoreArrayRead(local_, &a));
  double local[8] = {sums[0], sums[1], sums[2], sums[3], mass, sums[4], sums[5], sums[6]}, global[8];
  FPDP_PETSC(MPI_Allreduce(local, global, 8, MPI_DOUBLE, MPI_SUM, mesh_.comm()));
  for (int ax = 0; ax < 3; ++ax) r.gapSquared[ax] = global[5 + ax] / global[4];
  // p normalised by its mass (the divergences are of probability densities).
  r.identity = (-global[0] + global[1]) / global[4];
  r.boundIntegrand = global[2] / global[4];
  r.excludedMass = global[3] / global[4];
  return r;
}

}  // namespace fpdp::solver
