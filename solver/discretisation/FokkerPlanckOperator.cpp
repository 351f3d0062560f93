#include "solver/discretisation/FokkerPlanckOperator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <span>
#include <stdexcept>

#include "solver/discretisation/AnisotropicDiffusion.hpp"

namespace fpdp::solver {

double DriftDiffusionEquation::sigma(int a, int b) const {
  return a == b ? diffusion[a] : crossDiffusion[crossDiffusionIndex(std::min(a, b), std::max(a, b))];
}

void DriftDiffusionEquation::setSigma(int a, int b, double value) {
  if (a == b) diffusion[a] = value;
  else crossDiffusion[crossDiffusionIndex(std::min(a, b), std::max(a, b))] = value;
}

bool DriftDiffusionEquation::hasCrossDiffusion(int dim) const {
  for (int a = 0; a < dim; ++a)
    for (int b = a + 1; b < dim; ++b)
      if (sigma(a, b) != 0.0) return true;
  return false;
}

namespace {
/// Calls f(a, side, n, 1/|c|_a) for every face of cell c that has a neighbour n in the box (walls carry no flux):
/// axes in order, side -1 before +1, the order in which both row builders sum the diagonal.
template <class F>
void forEachInteriorFace(const meshes::BoxMesh& box, int dim, const std::array<PetscInt, 3>& c, F&& f) {
  for (int a = 0; a < dim; ++a) {
    const auto& axis = box.axis(a);
    const double invWidth = 1.0 / axis.width(static_cast<int>(c[a]));
    for (int side : {-1, +1}) {
      std::array<PetscInt, 3> n = c;
      n[a] += side;
      if (n[a] < 0 || n[a] >= axis.cells()) continue;
      f(a, side, n, invWidth);
    }
  }
}

// The Cholesky factor L of Sigma restricted to the first dim axes (without pivoting); false where Sigma is not
// positive definite there.
bool choleskyOfSigma(const DriftDiffusionEquation& eq, int dim, double (&L)[3][3]) {
  for (int i = 0; i < dim; ++i)
    for (int j = 0; j <= i; ++j) {
      double sum = eq.sigma(i, j);
      for (int k = 0; k < j; ++k) sum -= L[i][k] * L[j][k];
      if (i == j) {
        if (!(sum > 0)) return false;
        L[i][i] = std::sqrt(sum);
      } else {
        L[i][j] = sum / L[j][j];
      }
    }
  return true;
}

bool isPositiveDefinite(const DriftDiffusionEquation& eq, int dim) {
  double L[3][3] = {};
  return choleskyOfSigma(eq, dim, L);
}

// Sigma^-1 r on the first dim axes (Sigma positive definite: checked by the constructor first).
std::array<double, 3> solveWithSigma(const DriftDiffusionEquation& eq, int dim, const std::array<double, 3>& r) {
  double L[3][3] = {};
  choleskyOfSigma(eq, dim, L);
  std::array<double, 3> y{}, x{};
  for (int i = 0; i < dim; ++i) {
    double sum = r[i];
    for (int k = 0; k < i; ++k) sum -= L[i][k] * y[k];
    y[i] = sum / L[i][i];
  }
  for (int i = dim - 1; i >= 0; --i) {
    double sum = y[i];
    for (int k = i + 1; k < dim; ++k) sum -= L[k][i] * x[k];
    x[i] = sum / L[i][i];
  }
  return x;
}
}  // namespace

FokkerPlanckOperator::FokkerPlanckOperator(const meshes::DistributedBoxMesh& mesh,
                                           std::vector<DriftDiffusionEquation> equations, FaceFluxScheme scheme,
                                           SpatialAccuracy accuracy)
    : mesh_(mesh), equations_(std::move(equations)), scheme_(scheme), accuracy_(accuracy) {
  if (accuracy_.order != 2 && accuracy_.order != 4)
    throw std::invalid_argument("FokkerPlanckOperator: spatial order must be 2 or 4");
  if (static_cast<int>(equations_.size()) != mesh_.fields())
    throw std::invalid_argument("FokkerPlanckOperator: one equation per mesh field is required");
  const auto& g = mesh_.ghosted();
  const auto& box = mesh_.box();
  const int dim = mesh_.dim();
  bool cross = false;
  for (const auto& eq : equations_) {
    for (int a = 0; a < dim; ++a)
      if (!(eq.diffusion[a] > 0)) throw std::invalid_argument("FokkerPlanckOperator: diffusion must be positive");
    for (int a = 0; a < 3; ++a)
      for (int b = a + 1; b < 3; ++b)
        if (b >= dim && eq.sigma(a, b) != 0.0)
          throw std::invalid_argument("FokkerPlanckOperator: crossDiffusion couples an axis the mesh does not have");
    if (!isPositiveDefinite(eq, dim))
      throw std::invalid_argument("FokkerPlanckOperator: the diffusion matrix Sigma is not positive definite");
    cross = cross || eq.hasCrossDiffusion(dim);
  }
  if (cross) {
    DMDAStencilType stencil;
    FPDP_PETSC(DMDAGetInfo(mesh_.dm(), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                           nullptr, nullptr, nullptr, nullptr, &stencil));
    if (stencil != DMDA_STENCIL_BOX)
      throw std::invalid_argument(
          "FokkerPlanckOperator: an off-diagonal diffusion matrix couples diagonal neighbours; create the mesh with "
          "meshes::StencilShape::Box");
  }
  if (accuracy_.order == 4) {
    if (mesh_.stencilWidth() < 2)
      throw std::invalid_argument("FokkerPlanckOperator: fourth-order fluxes need a mesh with stencil width 2");
    if (dim > 1 && mesh_.stencil() != meshes::StencilShape::Box)
      throw std::invalid_argument(
          "FokkerPlanckOperator: fourth-order fluxes couple diagonal neighbours; create the mesh with "
          "meshes::StencilShape::Box");
    if (!(accuracy_.maxPeclet >= 0.0))
      throw std::invalid_argument("FokkerPlanckOperator: maxPeclet must be >= 0");
  }
  for (int a = 0; a < dim; ++a) {
    const auto& axis = box.axis(a);
    if (axis.isUniform()) uniformWidth_[static_cast<std::size_t>(a)] = (axis.upper() - axis.lower()) / axis.cells();
    uniformMesh_ = uniformMesh_ && uniformWidth_[static_cast<std::size_t>(a)] > 0.0;
  }
  // The fitted edge scheme for a full Sigma: second order on a uniform mesh (graded meshes and the fourth-order fluxes
  // keep the oriented flux of AnisotropicDiffusion.hpp).
  for (const auto& eq : equations_) {
    FittedEdges e;
    e.active = accuracy_.order == 2 && uniformMesh_ && eq.hasCrossDiffusion(dim);
    if (e.active) {
      const auto& h = uniformWidth_;
      for (int a = 0; a < dim; ++a) {
        double w = eq.diffusion[a] / (h[a] * h[a]);
        for (int b = 0; b < dim; ++b)
          if (b != a) w -= std::fabs(eq.sigma(a, b)) / (h[a] * h[b]);
        e.axisWeight[a] = w;
        std::array<double, 3> d{};
        d[a] = h[a];
        e.axisStep[a] = solveWithSigma(eq, dim, d);
        for (int b = a + 1; b < dim; ++b) {
          const double sab = eq.sigma(a, b);
          if (sab == 0.0) continue;
          const int pair = crossDiffusionIndex(a, b);
          e.diagonalWeight[pair] = std::fabs(sab) / (h[a] * h[b]);
          std::array<double, 3> diagonal{};
          diagonal[a] = h[a];
          diagonal[b] = sab > 0 ? h[b] : -h[b];
          e.diagonalStep[pair] = solveWithSigma(eq, dim, diagonal);
        }
      }
    }
    fitted_.push_back(e);
  }
  for (const auto& eq : equations_) {
    std::vector<double> phi(static_cast<std::size_t>(g.size()));
    for (PetscInt k = g.start[2]; k < g.start[2] + g.count[2]; ++k)
      for (PetscInt j = g.start[1]; j < g.start[1] + g.count[1]; ++j)
        for (PetscInt i = g.start[0]; i < g.start[0] + g.count[0]; ++i)
          phi[g.local(i, j, k)] = eq.potential(box.centre(i, j, k));
    ghostedPotential_.push_back(std::move(phi));
  }
}

const std::vector<double>& FokkerPlanckOperator::potential(int field) const {
  if (ghostedPotential_.empty())
    throw std::logic_error("FokkerPlanckOperator: the potentials were released (releasePotentials); the operator "
                           "can no longer build rows");
  return ghostedPotential_[static_cast<std::size_t>(field)];
}

void FokkerPlanckOperator::releasePotentials() {
  std::vector<std::vector<double>>().swap(ghostedPotential_);
}

std::vector<double> FokkerPlanckOperator::potentialAtOwnedCells(int field) const {
  const auto& phi = potential(field);
  std::vector<double> out(static_cast<std::size_t>(mesh_.owned().size()));
  const auto& g = mesh_.ghosted();
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    out[l] = phi[g.local(i, j, k)];
  });
  return out;
}

meshes::MatHandle FokkerPlanckOperator::assemble() const {
  meshes::MatHandle A;
  A = mesh_.createMatrix();
  assembleInto(A);
  return A;
}

void FokkerPlanckOperator::buildRow(PetscInt i, PetscInt j, PetscInt k, int f, Row& row, bool nominalCross) const {
  const auto& box = mesh_.box();
  const auto& g = mesh_.ghosted();
  const int dim = mesh_.dim();
  const std::array<PetscInt, 3> c{i, j, k};
  const auto& eq = equations_[f];
  const auto& phi = potential(f);
  const double phiC = phi[g.local(i, j, k)];
  row.clear();
  row.add(0, 0, 0, 0.0);
  if (fitted_[static_cast<std::size_t>(f)].active) {
    buildFittedEdgeRow(c, f, row);
    return;
  }
  // Drift and diagonal diffusion: the face weights of FaceFluxScheme.hpp (faces with the fourth-order flux
  // get the whole flux from addHighOrderFaceFlux instead).
  forEachInteriorFace(box, dim, c, [&](int a, int side, const std::array<PetscInt, 3>& n, double invWidth) {
    if (highOrderFace(c, a, side, f)) {
      addHighOrderFaceFlux(c, a, side, f, row);
      return;
    }
    const FaceTerm term = secondOrderFace(c, n, a, side, f, phiC, invWidth);
    std::array<int, 3> o{0, 0, 0};
    o[a] = side;
    row.add(0, 0, 0, term.diagonal);
    row.add(o[0], o[1], o[2], term.neighbour);
  });
  // Off-diagonal diffusion: the oriented mixed-derivative fluxes of AnisotropicDiffusion.hpp.
  for (int a = 0; a < dim; ++a)
    for (int b = a + 1; b < dim; ++b)
      addCrossDiffusionRow(box, c, a, b, eq.sigma(a, b), nominalCross ? uniformWidth_ : std::array<double, 3>{},
                           [&](int dx, int dy, int dz, double w) { row.add(dx, dy, dz, w); },
                           [&](int normal, int side) { return highOrderFace(c, normal, side, f); });
}

// The fitted edge scheme (docs/scheme.md §3, "Fitted edges"). div(Sigma grad u) on a uniform mesh is the graph
// Laplacian of the oriented stencil (5): axis edges of weight W_a = Sigma_aa/h_a^2 - sum_{b != a} |Sigma_ab|/(h_a h_b),
// diagonal edges (c, c +- (e_a + s e_b)), s = sign(Sigma_ab), of weight |Sigma_ab|/(h_a h_b). Each edge from L to
// U = L + d carries the Scharfetter–Gummel flux of u grad Phi + Sigma grad u = Sigma (grad u + u G), G = Sigma^-1 grad Phi,
// along it: into L, w (B(-psi) u_U - B(psi) u_L) with psi = G(midpoint) . (x_U - x_L), out of U the same. Second order
// (the drift's first moment over the edges is div(Sigma G u) = div(u grad Phi)), conservative (one flux per edge), and
// a Metzler row for any drift wherever every W_a >= 0, since B > 0: no Péclet restriction. For a quadratic Phi the
// midpoint differences are exact, psi is the difference of Psi = the quadratic with gradient G, and exp(-Psi) at the
// centres is an exact steady state of the interior rows.
void FokkerPlanckOperator::buildFittedEdgeRow(const std::array<PetscInt, 3>& c, int f, Row& row) const {
  const auto& box = mesh_.box();
  const int dim = mesh_.dim();
  const FittedEdges& e = fitted_[static_cast<std::size_t>(f)];
  // The edge between c and c + t d (t = +-1): L = c for t = +1, L = c - d for t = -1; psi always from L.
  auto addEdge = [&](const std::array<int, 3>& d, int t, double w, const std::array<double, 3>& step) {
    std::array<PetscInt, 3> n = c;
    for (int x = 0; x < dim; ++x) {
      n[x] += t * d[x];
      if (n[x] < 0 || n[x] >= box.cells(x)) return;  // through a wall: no flux
    }
    const FaceWeights fw = faceWeights(scheme_, edgePsi(t > 0 ? c : n, d, step, f));
    if (t > 0) {
      row.add(0, 0, 0, -w * fw.own);
      row.add(d[0], d[1], d[2], w * fw.neighbour);
    } else {
      row.add(0, 0, 0, -w * fw.neighbour);
      row.add(-d[0], -d[1], -d[2], w * fw.own);
    }
  };
  for (int a = 0; a < dim; ++a) {
    std::array<int, 3> d{0, 0, 0};
    d[a] = 1;
    for (int t : {-1, +1}) addEdge(d, t, e.axisWeight[a], e.axisStep[a]);
  }
  const auto& eq = equations_[static_cast<std::size_t>(f)];
  for (int a = 0; a < dim; ++a)
    for (int b = a + 1; b < dim; ++b) {
      const double sab = eq.sigma(a, b);
      if (sab == 0.0) continue;
      std::array<int, 3> d{0, 0, 0};
      d[a] = 1;
      d[b] = sab > 0 ? 1 : -1;
      const int pair = crossDiffusionIndex(a, b);
      for (int t : {-1, +1}) addEdge(d, t, e.diagonalWeight[pair], e.diagonalStep[pair]);
    }
}

double FokkerPlanckOperator::edgePsi(const std::array<PetscInt, 3>& L, const std::array<int, 3>& d,
                                     const std::array<double, 3>& step, int f) const {
  const auto& box = mesh_.box();
  const auto& g = mesh_.ghosted();
  const auto& phi = potential(f);
  const int dim = mesh_.dim();
  const auto& h = uniformWidth_;
  auto at = [&](const std::array<PetscInt, 3>& X) { return phi[g.local(X[0], X[1], X[2])]; };
  // The corners of the edge's cell cube: L moved along every subset of the edge's axes (2 or 4 cells).
  std::array<std::array<PetscInt, 3>, 4> corners;
  int count = 0;
  int active[2], nActive = 0;
  for (int x = 0; x < dim; ++x)
    if (d[x] != 0) active[nActive++] = x;
  for (int m = 0; m < (1 << nActive); ++m) {
    std::array<PetscInt, 3> X = L;
    for (int k = 0; k < nActive; ++k)
      if (m & (1 << k)) X[active[k]] += d[active[k]];
    corners[static_cast<std::size_t>(count++)] = X;
  }
  double psi = 0.0;
  for (int x = 0; x < dim; ++x) {
    double sum = 0.0;
    int terms = 0;
    if (d[x] != 0) {
      // Along the edge's own axes: the mean of the cube's differences along x (exact at the midpoint for quadratics).
      for (const auto& X : std::span(corners.data(), static_cast<std::size_t>(count))) {
        std::array<PetscInt, 3> Y = X;
        Y[x] += d[x];
        if (Y[x] != L[x] + d[x]) continue;  // X is already the far corner along x
        sum += (at(Y) - at(X)) / (d[x] * h[x]);
        ++terms;
      }
    } else {
      // Across it: the mean of the corners' central differences (one-sided at a wall).
      for (const auto& X : std::span(corners.data(), static_cast<std::size_t>(count))) {
        std::array<PetscInt, 3> lo = X, hi = X;
        if (X[x] > 0) --lo[x];
        if (X[x] < box.cells(x) - 1) ++hi[x];
        if (hi[x] == lo[x]) continue;  // a single cell along x
        sum += (at(hi) - at(lo)) / (static_cast<double>(hi[x] - lo[x]) * h[x]);
        ++terms;
      }
    }
    if (terms > 0) psi += sum / terms * step[x];
  }
  return psi;
}

FaceWeights FokkerPlanckOperator::secondOrderFaceWeights(const std::array<PetscInt, 3>& n, int a, int f,
                                                          double phiC) const {
  const double P = (potential(f)[mesh_.ghosted().local(n[0], n[1], n[2])] - phiC) / equations_[f].diffusion[a];
  return faceWeights(scheme_, P);
}

FokkerPlanckOperator::FaceTerm FokkerPlanckOperator::secondOrderFaceTerm(const FaceWeights& w, int a, int lowerCell,
                                                                         int f, double invWidth) const {
  const double h = mesh_.box().axis(a).centreDistance(lowerCell);
  const double D = equations_[f].diffusion[a];
  const double coef = D / h * invWidth;
  return {-coef * w.own, coef * w.neighbour};
}

FokkerPlanckOperator::FaceTerm FokkerPlanckOperator::secondOrderFace(const std::array<PetscInt, 3>& c,
                                                                     const std::array<PetscInt, 3>& n, int a, int side,
                                                                     int f, double phiC, double invWidth) const {
  return secondOrderFaceTerm(secondOrderFaceWeights(n, a, f, phiC), a, static_cast<int>(side > 0 ? c[a] : n[a]), f,
                             invWidth);
}

bool FokkerPlanckOperator::highOrderFace(const std::array<PetscInt, 3>& c, int a, int side, int f) const {
  if (accuracy_.order != 4 || !uniformMesh_) return false;
  const auto& box = mesh_.box();
  const int dim = mesh_.dim();
  const PetscInt lower = side > 0 ? c[a] : c[a] - 1;  // the lower cell L of the face, along a
  if (lower - 1 < 0 || lower + 2 > box.cells(a) - 1) return false;  // 4 cells across the face
  for (int b = 0; b < dim; ++b)
    if (b != a && (c[b] - 2 < 0 || c[b] + 2 > box.cells(b) - 1)) return false;  // +-2 cells along it
  const auto& g = mesh_.ghosted();
  const auto& phi = potential(f);
  std::array<PetscInt, 3> L = c, U = c;
  L[a] = lower;
  U[a] = lower + 1;
  const double P = std::fabs(phi[g.local(U[0], U[1], U[2])] - phi[g.local(L[0], L[1], L[2])]) /
                   equations_[f].diffusion[a];
  return P <= accuracy_.maxPeclet;
}

// Fourth-order face average (docs/scheme.md §7) of Q = u d_a Phi + sum_b Sigma_ab d_b u over the face between
// L = (l, t) and U = (l+1, t) (t the transverse indices of c). From the cell averages ubar along a:
//   U_t  = (-ubar_{l-1} + 7 ubar_l + 7 ubar_{l+1} - ubar_{l+2}) / 12          face average of u (transverse cell t)
//   Ux   = (ubar_{l-1} - 15 ubar_l + 15 ubar_{l+1} - ubar_{l+2}) / (12 h_a)   face average of d_a u
//   <d_b u> = (U_{t-2e_b} - 8 U_{t-e_b} + 8 U_{t+e_b} - U_{t+2e_b}) / (12 h_b)  (difference of edge values)
// and from the potential at cell centres, G_t = (Phi_{l-1} - 27 Phi_l + 27 Phi_{l+1} - Phi_{l+2}) / (24 h_a) (d_a Phi
// at the face point), <d_a Phi> = G_0 + sum_b (G_{+b} - 2 G_0 + G_{-b}) / 24, and the product rule for averages
//   <u d_a Phi> = U_0 <d_a Phi> + sum_b (U_{+b} - U_{-b}) (G_{+b} - G_{-b}) / 48   (+ O(h^4)).
// The row of c gets +Q/h_a for its upper face and -Q/h_a for its lower face.
void FokkerPlanckOperator::addHighOrderFaceFlux(const std::array<PetscInt, 3>& c, int a, int side, int f,
                                                Row& row) const {
  const auto& box = mesh_.box();
  const auto& g = mesh_.ghosted();
  const int dim = mesh_.dim();
  const auto& eq = equations_[f];
  const auto& phi = potential(f);
  const double ha = box.axis(a).width(0);
  const double rowScale = (side > 0 ? 1.0 : -1.0) / ha;
  const int lowerOffset = side > 0 ? 0 : -1;  // L - c along a
  static constexpr double kAverageToFace[4] = {-1.0 / 12, 7.0 / 12, 7.0 / 12, -1.0 / 12};
  static constexpr double kAverageToDerivative[4] = {1.0 / 12, -15.0 / 12, 15.0 / 12, -1.0 / 12};
  static constexpr double kPointToDerivative[4] = {1.0 / 24, -27.0 / 24, 27.0 / 24, -1.0 / 24};
  // Adds weight * U_t (t = transverse offset vector, zero along a) to the row.
  auto addFaceAverage = [&](const std::array<int, 3>& t, double weight) {
    for (int m = 0; m < 4; ++m) {
      std::array<int, 3> o = t;
      o[a] = lowerOffset + m - 1;
      row.add(o[0], o[1], o[2], rowScale * weight * kAverageToFace[m]);
    }
  };
  auto G = [&](const std::array<int, 3>& t) {
    double sum = 0.0;
    for (int m = 0; m < 4; ++m) {
      std::array<PetscInt, 3> cell{c[0] + t[0], c[1] + t[1], c[2] + t[2]};
      cell[a] = c[a] + lowerOffset + m - 1;
      sum += kPointToDerivative[m] * phi[g.local(cell[0], cell[1], cell[2])];
    }
    return sum / ha;
  };
  const std::array<int, 3> zero{0, 0, 0};
  const double G0 = G(zero);
  double meanDerivative = G0;  // <d_a Phi>
  for (int b = 0; b < dim; ++b) {
    if (b == a) continue;
    std::array<int, 3> plus{0, 0, 0}, minus{0, 0, 0};
    plus[b] = 1, minus[b] = -1;
    const double Gp = G(plus), Gm = G(minus);
    meanDerivative += (Gp - 2.0 * G0 + Gm) / 24.0;
    // Product-rule correction (U_{+b} - U_{-b}) (G_{+b} - G_{-b}) / 48.
    addFaceAverage(plus, (Gp - Gm) / 48.0);
    addFaceAverage(minus, -(Gp - Gm) / 48.0);
    // Mixed diffusion Sigma_ab <d_b u>.
    const double sab = eq.sigma(a, b);
    if (sab != 0.0) {
      const double hb = box.axis(b).width(0);
      static constexpr double kEdgeDifference[5] = {1.0, -8.0, 0.0, 8.0, -1.0};
      for (int m = 0; m < 5; ++m) {
        if (kEdgeDifference[m] == 0.0) continue;
        std::array<int, 3> t{0, 0, 0};
        t[b] = m - 2;
        addFaceAverage(t, sab * kEdgeDifference[m] / (12.0 * hb));
      }
    }
  }
  addFaceAverage(zero, meanDerivative);
  // Diagonal diffusion Sigma_aa <d_a u>.
  for (int m = 0; m < 4; ++m) {
    std::array<int, 3> o{0, 0, 0};
    o[a] = lowerOffset + m - 1;
    row.add(o[0], o[1], o[2], rowScale * eq.diffusion[a] * kAverageToDerivative[m] / ha);
  }
}

long FokkerPlanckOperator::highOrderFaces() const {
  long local = 0;
  const int dim = mesh_.dim();
  if (accuracy_.order == 4) {
    mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt) {
      const std::array<PetscInt, 3> c{i, j, k};
      for (int f = 0; f < mesh_.fields(); ++f)
        for (int a = 0; a < dim; ++a)
          if (highOrderFace(c, a, +1, f)) ++local;  // each face once: as the upper face of its lower cell
    });
  }
  long global = 0;
  FPDP_PETSC(MPI_Allreduce(&local, &global, 1, MPI_LONG, MPI_SUM, mesh_.comm()));
  return global;
}

namespace {
/// The sign structure of the rows, tallied row by row and reduced over the ranks (PositivityReport).
struct PositivityTally {
  long rows = 0, violating = 0;
  double mostNegative = 0.0, worstRelative = 0.0;
  void add(double smallestOffDiagonal, double diagonal) {
    ++rows;
    if (smallestOffDiagonal < 0.0) {
      ++violating;
      mostNegative = std::min(mostNegative, smallestOffDiagonal);
      if (diagonal != 0.0) worstRelative = std::max(worstRelative, -smallestOffDiagonal / std::fabs(diagonal));
    }
  }
  PositivityReport reduce(MPI_Comm comm) const {
    double counts[2] = {static_cast<double>(rows), static_cast<double>(violating)}, gcounts[2];
    FPDP_PETSC(MPI_Allreduce(counts, gcounts, 2, MPI_DOUBLE, MPI_SUM, comm));
    PositivityReport r;
    r.rows = static_cast<long>(gcounts[0]);
    r.violatingRows = static_cast<long>(gcounts[1]);
    FPDP_PETSC(MPI_Allreduce(&mostNegative, &r.mostNegativeOffDiagonal, 1, MPI_DOUBLE, MPI_MIN, comm));
    FPDP_PETSC(MPI_Allreduce(&worstRelative, &r.worstRelativeViolation, 1, MPI_DOUBLE, MPI_MAX, comm));
    r.holds = r.violatingRows == 0;
    return r;
  }
};
}  // namespace

PositivityReport FokkerPlanckOperator::checkRows(Mat A) const {
  PositivityTally tally;
  Row row;
  MatStencil rowIndex{};
  MatStencil cols[kRowSize];
  PetscScalar vals[kRowSize];
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt) {
    for (int f = 0; f < mesh_.fields(); ++f) {
      buildRow(i, j, k, f, row);
      rowIndex.i = i, rowIndex.j = j, rowIndex.k = k, rowIndex.c = f;
      int nnz = 0;
      double smallest = 0.0;
      row.sortSlots();  // the columns in slot order, as before the list
      for (int n = 0; n < row.count; ++n) {
        const int s = row.slots[static_cast<std::size_t>(n)];
        const int dx = s % 5 - 2, dy = (s / 5) % 5 - 2, dz = s / 25 - 2;
        cols[nnz].i = i + dx, cols[nnz].j = j + dy, cols[nnz].k = k + dz, cols[nnz].c = f;
        vals[nnz] = row.value[s];
        ++nnz;
        if (s != kCentre) smallest = std::min(smallest, row.value[s]);
      }
      tally.add(smallest, row.value[kCentre]);
      if (A) FPDP_PETSC(MatSetValuesStencil(A, 1, &rowIndex, nnz, cols, vals, INSERT_VALUES));
    }
  });
  return tally.reduce(mesh_.comm());
}

bool FokkerPlanckOperator::buildStencil(StencilOperator& stencil, StencilOperator::Shape shape) const {
  PositivityTally tally;
  bool star = accuracy_.order == 2;  // second-order fluxes without cross-diffusion: a star row of face terms
  for (const auto& eq : equations_) star = star && !eq.hasCrossDiffusion(mesh_.dim());
  bool built = false;
  if (star) {
    // The rows of buildRow without its general slot list: the same face terms summed into the diagonal in the same
    // order, so the same bits. Each face's weights are computed once, from its lower cell, into an array over the
    // ghosted block (per field and axis; the row of the upper cell reads them exchanged, secondOrderFaceWeights).
    // 256^2, two fields: the integrator set-up 21.8 -> 17.2 ms without the slot list, -> 12.4 ms with the face cache
    // and StencilOperator::buildStar (tabulating D/h and 1/|c|_a as well gained nothing).
    const auto& box = mesh_.box();
    const auto& g = mesh_.ghosted();
    const int dim = mesh_.dim();
    const int F = mesh_.fields();
    std::vector<FaceWeights> upperFace(static_cast<std::size_t>(F * dim) * static_cast<std::size_t>(g.size()));
    auto faceAt = [&](int f, int a, PetscInt local) -> FaceWeights& {
      return upperFace[(static_cast<std::size_t>(f * dim + a)) * static_cast<std::size_t>(g.size()) +
                       static_cast<std::size_t>(local)];
    };
    for (int f = 0; f < F; ++f)
      for (PetscInt k = g.start[2]; k < g.start[2] + g.count[2]; ++k)
        for (PetscInt j = g.start[1]; j < g.start[1] + g.count[1]; ++j)
          for (PetscInt i = g.start[0]; i < g.start[0] + g.count[0]; ++i) {
            const std::array<PetscInt, 3> c{i, j, k};
            const PetscInt local = g.local(i, j, k);
            const double phiC = potential(f)[local];
            for (int a = 0; a < dim; ++a) {
              std::array<PetscInt, 3> n = c;
              ++n[a];
              if (n[a] >= g.start[a] + g.count[a]) continue;  // beyond the ghosted block: no owned row needs it
              faceAt(f, a, local) = secondOrderFaceWeights(n, a, f, phiC);
            }
          }
    built = stencil.buildStar(mesh_.dm(), [&](PetscInt i, PetscInt j, PetscInt k, int f,
                                              StencilOperator::StarRow& row) {
      const std::array<PetscInt, 3> c{i, j, k};
      double diagonal = 0.0, smallest = 0.0;
      forEachInteriorFace(box, dim, c, [&](int a, int side, const std::array<PetscInt, 3>& n, double invWidth) {
        // The face's weights from its lower cell; from the upper one (side -1) exchanged.
        const FaceWeights& lower = faceAt(f, a, side > 0 ? g.local(i, j, k) : g.local(n[0], n[1], n[2]));
        const FaceWeights w = side > 0 ? lower : FaceWeights{lower.neighbour, lower.own};
        const FaceTerm term = secondOrderFaceTerm(w, a, static_cast<int>(side > 0 ? c[a] : n[a]), f, invWidth);
        diagonal += term.diagonal;
        row.neighbour[static_cast<std::size_t>(2 * a + (side > 0 ? 1 : 0))] = term.neighbour;
        smallest = std::min(smallest, term.neighbour);
      });
      row.diagonal = diagonal;
      tally.add(smallest, diagonal);
    });
  } else {
    Row row;
    // The cross terms with the nominal width of uniform axes (AnisotropicDiffusion.hpp): the box's edge coefficients
    // are then the same along every run of a line, stored once per run.
    const bool nominalCross = shape == StencilOperator::Shape::Box;
    built = stencil.build(mesh_.dm(), [&](PetscInt i, PetscInt j, PetscInt k, int f,
                                          StencilOperator::RowEntries& entries) {
      buildRow(i, j, k, f, row, nominalCross);
      double smallest = 0.0;
      for (int n = 0; n < row.count; ++n) {
        const int s = row.slots[static_cast<std::size_t>(n)];
        const int dx = s % 5 - 2, dy = (s / 5) % 5 - 2, dz = s / 25 - 2;
        if (std::abs(dx) > 1 || std::abs(dy) > 1 || std::abs(dz) > 1) {
          // A coupling two cells away (fourth-order fluxes): not a star; passed on so that build refuses it.
          entries.count = 0;
          entries.add(dx, dy, dz, 1.0);
          break;
        }
        entries.add(dx, dy, dz, row.value[s]);  // at most the 27 slots within one cell
        if (s != kCentre) smallest = std::min(smallest, row.value[s]);
      }
      tally.add(smallest, row.value[kCentre]);
    }, /*forSmoothing=*/false, shape);
  }
  if (!built) return false;
  positivity_ = tally.reduce(mesh_.comm());
  assembled_ = true;
  return true;
}

void FokkerPlanckOperator::assembleInto(Mat A) const {
  FPDP_PETSC(MatZeroEntries(A));
  const PositivityReport report = checkRows(A);
  FPDP_PETSC(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  FPDP_PETSC(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  positivity_ = report;
  assembled_ = true;
}

PositivityReport FokkerPlanckOperator::positivity() const {
  if (!assembled_) {
    positivity_ = checkRows(nullptr);
    assembled_ = true;
  }
  return positivity_;
}

}  // namespace fpdp::solver
