#pragma once
// Spatial operator of the Fokker–Planck equations of Langevin diffusion (MATH.md §2.3), finite volumes:
//
//   d_t u_f = div( u_f grad Phi_f ) + div( Sigma_f grad u_f ),     f = 0..F-1 (here u_0 = p, u_1 = q),
//   Sigma_f a constant symmetric positive-definite matrix (isotropic noise: sigma^2 I),
//   no-flux walls:  ( u grad Phi + Sigma grad u ) . n = 0 on the boundary of the box.
//
// Cell averages u_c on a tensor-product mesh. The flux through a face normal to axis a is split into
//   (i)  the drift and the diagonal diffusion,  u d_a Phi + Sigma_aa d_a u,  by the face weights of
//        FaceFluxScheme.hpp (Scharfetter–Gummel by default): for cell c and its neighbour n across the face,
//        centre distance h,
//          J_cn = (Sigma_aa/h) [ w_n(P) u_n - w_c(P) u_c ],  P = (Phi_n - Phi_c)/Sigma_aa;
//   (ii) the off-diagonal diffusion  sum_{b != a} Sigma_ab d_b u,  by the oriented (sign-adapted) face flux of
//        AnisotropicDiffusion.hpp: with s = sign(Sigma_ab), lower cell L and upper cell U of the a-face,
//          F = (|Sigma_ab|/2) [ (u(U + s e_b) - u(U)) / h_b(U, U + s e_b) + (u(L) - u(L - s e_b)) / h_b(L - s e_b, L) ],
//        a half whose cells leave the box is omitted. On a uniform mesh the two halves give
//        2 Sigma_ab d_a d_b u ~ (Sigma_ab / (h_a h_b)) [u(++) - u(+0) - u(0+) + 2 u(00) - u(-0) - u(0-) + u(--)]
//        for Sigma_ab > 0 (mirrored diagonals (+-), (-+) for Sigma_ab < 0), second order; diagonal neighbours
//        get weight +|Sigma_ab|/(h_a h_b) >= 0, axis neighbours lose |Sigma_ab|/(h_a h_b).
//   d_t u_c = sum over the faces of c of (1/width_a(c)) (+-)(J + F). Wall faces carry no flux (neither part).
// Properties (docs/scheme.md): volume-weighted mass is conserved to round-off on any tensor mesh (each face flux is
// one expression, added to one cell and subtracted from the other); with a diagonal Sigma the matrix is an M-matrix
// transpose for Scharfetter–Gummel (off-diagonals >= 0, volume-weighted columns sum to zero), so backward Euler keeps
// densities non-negative, and for Sigma = D I the Gibbs density exp(-Phi/D) is an exact steady state. With
// off-diagonal Sigma the off-diagonal entries stay >= 0 only under a mesh condition (without drift:
// Sigma_aa/h_a^2 >= sum_{b != a} |Sigma_ab|/(h_a h_b); with drift the uphill weight B(|P|) must exceed the ratio);
// assembly checks every entry and reports violations (PositivityReport), it never clips.
//
// Exercised by: fpdp run cases/ou-2d.toml ; tests/solver/test_fokker_planck.cpp, tests/solver/test_anisotropic*.cpp
#include <petscmat.h>

#include <algorithm>
#include <array>
#include <functional>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/discretisation/FaceFluxScheme.hpp"
#include "solver/discretisation/StencilOperator.hpp"

namespace fpdp::solver {

using Point = std::array<double, 3>;

/// The data of one density's equation: a drift potential (evaluated at cell centres) and a constant symmetric
/// positive-definite diffusion matrix Sigma, given by its diagonal (Sigma_aa per axis; isotropic noise sigma^2 I
/// gives Sigma_aa = sigma^2) and its off-diagonal entries.
struct DriftDiffusionEquation {
  std::function<double(const Point&)> potential;
  std::array<double, 3> diffusion{1.0, 1.0, 1.0};       // Sigma_xx, Sigma_yy, Sigma_zz
  std::array<double, 3> crossDiffusion{0.0, 0.0, 0.0};  // Sigma_xy, Sigma_xz, Sigma_yz

  /// Sigma_ab for any a, b in 0..2.
  double sigma(int a, int b) const;
  /// Sets Sigma_ab = Sigma_ba (a != b) or Sigma_aa.
  void setSigma(int a, int b, double value);
  /// Whether some off-diagonal entry among the first dim axes is non-zero.
  bool hasCrossDiffusion(int dim) const;
};

/// Index of the pair (a, b), a != b, in DriftDiffusionEquation::crossDiffusion: (0,1) -> 0, (0,2) -> 1, (1,2) -> 2.
constexpr int crossDiffusionIndex(int a, int b) { return a + b - 1; }

/// Sign structure of the assembled matrix (all fields, all ranks): the operator is a Metzler matrix (M-matrix
/// transpose, so that backward Euler preserves non-negativity) iff no off-diagonal entry is negative.
struct PositivityReport {
  long rows = 0;                         // matrix rows checked (cells x fields)
  long violatingRows = 0;                // rows with at least one negative off-diagonal entry
  double mostNegativeOffDiagonal = 0.0;  // min(0, smallest off-diagonal entry)
  double worstRelativeViolation = 0.0;   // max over rows of (-smallest off-diagonal) / |diagonal|, 0 if none
  bool holds = true;                     // violatingRows == 0
};

/// Spatial accuracy of the face fluxes (docs/scheme.md §7).
///   order 2: Scharfetter–Gummel drift and diagonal diffusion with the oriented mixed-derivative flux, on every face:
///            second order, and a Metzler matrix under the condition of docs/scheme.md §3.
///   order 4: on the interior faces of a uniform mesh whose fourth-order stencil (4 cells across the face, +-2 cells
///            along it) lies inside the box and whose face Péclet number |Phi_U - Phi_L| / Sigma_aa is at most
///            maxPeclet, the fourth-order face average of the whole flux (drift, diagonal and mixed diffusion);
///            order 2 on every other face. Each face has one flux, so mass is conserved to round-off either way. The
///            fourth-order rows are not Metzler: positivity is then measured, not guaranteed (the positivity report
///            counts them). Needs a mesh with stencil width 2 and, in 2-D/3-D, a box stencil.
struct SpatialAccuracy {
  int order = 2;
  double maxPeclet = 1.0;
};

class FokkerPlanckOperator {
public:
  /// Throws if an equation's Sigma is not positive definite, or if it has off-diagonal entries and the mesh's DMDA
  /// stencil is not a box stencil (meshes::StencilShape::Box: the mixed derivatives couple diagonal neighbours).
  FokkerPlanckOperator(const meshes::DistributedBoxMesh& mesh, std::vector<DriftDiffusionEquation> equations,
                       FaceFluxScheme scheme, SpatialAccuracy accuracy = {});

  /// A new matrix on the mesh's DM, holding the operator (block diagonal in the fields).
  meshes::MatHandle assemble() const;
  /// Fill an existing matrix created by the mesh's DM. Collective; also computes the positivity report.
  void assembleInto(Mat A) const;
  /// The operator as stencil coefficient arrays (solver/discretisation/StencilOperator.hpp), built row by row without
  /// an assembled matrix; also computes the positivity report. Returns false (stencil left empty) where the rows are
  /// not of that shape: a star refuses cross-diffusion, both refuse fourth-order fluxes (two cells away). Collective.
  bool buildStencil(StencilOperator& stencil, StencilOperator::Shape shape = StencilOperator::Shape::Star) const;

  /// The sign structure of the operator: from the last assembly, or (collective, if never assembled) computed by
  /// building the rows without a matrix.
  PositivityReport positivity() const;

  /// The potential of field f at the owned cell centres (local order), e.g. to build Gibbs states.
  std::vector<double> potentialAtOwnedCells(int field) const;
  /// Frees the potentials (8 B per cell and field) once the propagator holds what it needs of the rows (its
  /// stencil or assembled matrix): a positivity report computed before stays; anything that builds rows or reads
  /// the potentials afterwards throws std::logic_error.
  void releasePotentials();

  const meshes::DistributedBoxMesh& mesh() const { return mesh_; }
  FaceFluxScheme scheme() const { return scheme_; }
  const SpatialAccuracy& accuracy() const { return accuracy_; }
  /// Faces (owned by this rank's cells, each counted once per rank that owns an adjacent cell) that carry the
  /// fourth-order flux, over all fields; 0 for order 2. Collective.
  long highOrderFaces() const;
  const std::vector<DriftDiffusionEquation>& equations() const { return equations_; }

private:
  // One row: coefficients of the 5^3 neighbours (dx, dy, dz) in {-2..2}^3, index (dx+2) + 5 (dy+2) + 25 (dz+2)
  // (offsets of +-2 only with the fourth-order fluxes).
  static constexpr int kRowSize = 125, kCentre = 62;
  /// One row by offset slot (5 per axis). The used slots are listed, so that clearing and reading a row touch only
  /// them: a row of the 2-D star uses 5 of the 125 slots, and zeroing all of them made the assembly's row loop
  /// 20 ms at 256^2 (two fields).
  struct Row {
    std::array<double, kRowSize> value{};
    std::array<bool, kRowSize> used{};
    std::array<int, kRowSize> slots{};  // the used slots; ascending after sortSlots
    int count = 0;
    void add(int dx, int dy, int dz, double v) {
      const int s = (dx + 2) + 5 * (dy + 2) + 25 * (dz + 2);
      if (!used[s]) used[s] = true, slots[static_cast<std::size_t>(count++)] = s;
      value[s] += v;
    }
    void clear() {
      for (int n = 0; n < count; ++n) value[slots[n]] = 0.0, used[slots[n]] = false;
      count = 0;
    }
    void sortSlots() { std::sort(slots.begin(), slots.begin() + count); }
  };
  /// nominalCross: the cross-diffusion terms with the nominal width of uniform axes (AnisotropicDiffusion.hpp).
  void buildRow(PetscInt i, PetscInt j, PetscInt k, int field, Row& row, bool nominalCross = false) const;
  /// The row of a field with a full Sigma on a uniform mesh at second order: the exponentially fitted edge scheme
  /// (docs/scheme.md §3, "Fitted edges"), a Metzler row whenever Sigma is diagonally dominant on the mesh.
  void buildFittedEdgeRow(const std::array<PetscInt, 3>& c, int field, Row& row) const;
  /// psi of the edge from cell L to L + d (d an axis or a diagonal step, components in {-1, 0, 1}): grad Phi at the
  /// edge's midpoint, from centre differences, times Sigma^-1 (x_{L+d} - x_L) (FittedEdges::step).
  double edgePsi(const std::array<PetscInt, 3>& L, const std::array<int, 3>& d, const std::array<double, 3>& step,
                 int field) const;
  /// Per field with a full Sigma: the fitted scheme's edge weights and Sigma^-1 times each edge's step.
  struct FittedEdges {
    bool active = false;
    std::array<double, 3> axisWeight{};                 // Sigma_aa/h_a^2 - sum_{b != a} |Sigma_ab|/(h_a h_b)
    std::array<std::array<double, 3>, 3> axisStep{};    // Sigma^-1 h_a e_a
    std::array<double, 3> diagonalWeight{};             // |Sigma_ab|/(h_a h_b) per pair (crossDiffusionIndex)
    std::array<std::array<double, 3>, 3> diagonalStep{};  // Sigma^-1 (h_a e_a + sign(Sigma_ab) h_b e_b) per pair
  };
  std::vector<FittedEdges> fitted_;
  /// Row c's second-order term through its face to the face neighbour n (along axis a, on side +-1): the diagonal's
  /// part -(D/h)(1/|c|_a) w_c(P) and n's coefficient (D/h)(1/|c|_a) w_n(P) (FaceFluxScheme.hpp). invWidth = 1/|c|_a.
  struct FaceTerm {
    double diagonal, neighbour;
  };
  FaceTerm secondOrderFace(const std::array<PetscInt, 3>& c, const std::array<PetscInt, 3>& n, int a, int side,
                           int field, double phiC, double invWidth) const;
  /// Its two parts: the face weights oriented from c (potential phiC) to n along axis a (FaceFluxScheme.hpp), and the
  /// row's term from the weights oriented from the row's cell (lowerCell: the face's lower cell along a). The
  /// weights of the face seen from n are those seen from c exchanged, to the last bit (faceWeights evaluates
  /// B(-P) = B(P) + P the same way from both sides), so buildStencil computes each face's once.
  FaceWeights secondOrderFaceWeights(const std::array<PetscInt, 3>& n, int a, int field, double phiC) const;
  FaceTerm secondOrderFaceTerm(const FaceWeights& w, int a, int lowerCell, int field, double invWidth) const;
  /// Whether the face of cell c normal to axis a on side +-1 carries the fourth-order flux (the same answer from
  /// both cells of the face).
  bool highOrderFace(const std::array<PetscInt, 3>& c, int a, int side, int field) const;
  /// Adds to row c the fourth-order face-average flux through that face (docs/scheme.md §7).
  void addHighOrderFaceFlux(const std::array<PetscInt, 3>& c, int a, int side, int field, Row& row) const;
  PositivityReport checkRows(Mat A) const;  // A may be null: only the report
  const std::vector<double>& potential(int field) const;  // on the ghosted block; throws once released

  const meshes::DistributedBoxMesh& mesh_;
  std::vector<DriftDiffusionEquation> equations_;
  FaceFluxScheme scheme_;
  SpatialAccuracy accuracy_;
  bool uniformMesh_ = true;
  std::array<double, 3> uniformWidth_{};  // per uniform axis its nominal cell width, 0 for a graded one
  // Potential of each field on the ghosted block (owned cells plus the stencil layer), evaluated once.
  std::vector<std::vector<double>> ghostedPotential_;
  mutable PositivityReport positivity_;
  mutable bool assembled_ = false;
};

}  // namespace fpdp::solver
