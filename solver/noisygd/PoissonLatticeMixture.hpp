#pragma once
// The push-forward part of one step of Poisson-subsampled noisy SGD in 1-D and 2-D when the exact enumeration of the
// batches (PoissonBatchMixture) is too large: the batch's random displacement on a lattice, with a rigorous bound on
// the total variation its approximations add to the step (docs/noisy-gd.md §9.2; MATH.md §8 for the step, §3 for TV).
// 1-D below; 2-D (the same three parts on the lattice Delta Z^2) at the end of this comment.
//
// The step moves a particle at theta by D_B(theta) = -(eta/b) sum_{j in B} g_j(theta), a sum of independent
// two-point variables (record j in B with probability gamma). Per source cell i (centre c_i, width h_i):
//   1. the law of D_B(c_i) by dynamic programming over the records on the lattice Delta Z: record j's displacement
//      a_j = -(eta/b) g_j(c_i) = (k_j + f_j) Delta is split between k_j Delta (probability 1 - f_j) and (k_j + 1) Delta
//      (probability f_j), which keeps its mean, and spread by one step to either side with probability (f_j - 1/2)^2,
//      and a record left out is spread about 0 (1/8, 3/4, 1/8), so that every record's rounding error has variance
//      Delta^2 / 4: the rounding adds V = n_r Delta^2 / 4 to every displacement, which the step's noise gives up
//      (addedVariance: the push-forward is followed by N(0, s^2 - V)); identical records are one group (their copies
//      convolved in turn);
//      lattice points at the law's ends lighter than `pruneMass` are moved to their inner neighbour. The law is the
//      same at every step (computed once). The differing record (`exactGroup`) is not rounded: its inclusion is a
//      two-point branch, 0 with probability 1 - gamma and its exact a_z(c_i) with probability gamma.
//   2. the cell's mass moves, for every lattice point and branch, through x -> x - (eta gamma/b) sum_j (g_j(x) -
//      g_j(c_i)) + displacement: the cell's remap (PushForward's remapLine) by the mean within-cell variation, shifted.
// Per particle x in cell i, against the exact mixture followed by the noise N(0, s^2) (s the step's noise standard
// deviation), three approximations, each bounded in TV (docs/noisy-gd.md §9.2 derives them). Two replace the
// enumeration (the lattice bound):
//   rounding: R = sum_j e_j, given the batch independent with mean 0 and variance Delta^2 / 4: swapped one at a time
//     for N(0, Delta^2 / 4) (whose sum with N(0, s^2 - V) is the step's noise), third order (lineLatticeTerm);
//   pruning: each move shifts its mass by Delta: TV <= erf(Delta / (2 sqrt(2) s)) times the mass moved (summed over
//     the moves; convolving with the later records' laws does not expand TV).
// One is the cell's spatial discretisation (first order in h_i; reported apart, the companion meshes estimate it with
// the scheme's other spatial errors):
//   within-cell: the batch's variation inside the cell replaced by its mean, error A = -(eta/b) sum_j (1_j - gamma)
//     (g_j(x) - g_j(c_i)), E A^2 = (eta/b)^2 gamma (1 - gamma) sum_j w_j^2 with w_j = sup over the cell of
//     |g_j(x) - g_j(c_i)|: at most beta h_i/2 (beta: a Lipschitz bound of every clipped per-example gradient), and for
//     nondecreasing gradients (convex losses; clipping keeps that in 1-D) the larger of its values at the two faces;
//     TV <= erf(sqrt(E A^2) / (2 sqrt(2) s)) (TV of two Gaussians, Jensen).
// A step's bound is sum_i m_i tau_i (m_i the cell's mass, tau_i the term's per unit mass, at most 1); Markov kernels
// do not expand TV, so the bounds of the steps add up.
//
// Cost: once, cells x n x L lattice updates (L the law's width in lattice points); per step and branch, on a uniform
// line, cells x (M one-cell remaps + L x (cells an image covers) additions) with M = h / Delta, elsewhere cells x L
// one-cell remaps. Works on the whole field (natural order) held by one process.
//
// 2-D (docs/noisy-gd.md §9.2, "In two dimensions"). The lattice is Delta Z^2 (the spacing as given, on any mesh).
//   1. Record j's displacement a_j = (k_x + f_x, k_y + f_y) Delta is split bilinearly between the four lattice points
//      around it (weights (1 - f_x or f_x) times (1 - f_y or f_y)), which keeps its mean per component; the law is
//      held by rows (ragged: each row of y-index its own x-range). Pruning: a row's end points lighter than
//      `pruneMass` move to their inner neighbour in the row, and an end row reduced to one such point moves one step
//      in y into the next row (on along x to that row's nearest end where it does not hold its x); every lattice
//      step along an axis is counted. Where the
//      records' gradients are the same at every cell centre (constant gradients), the cells share one law.
//   2. The differing record: its exact 2-D displacement, as in 1-D.
//   3. The deposit: cell (i, j)'s mass moves by the product of two one-cell remaps (PushForward's remapLine): along x
//      with the mean map's x-images of its x-faces on its row (y at the centre), shifted by the x-coordinate of the
//      displacement, and along y with the y-images of its y-faces on its column, shifted by the y-coordinate: the
//      target cell (X, Y) receives m P_x(X) P_y(Y). The x-profiles depend on the lattice point's x only and the
//      y-profiles on its y only, so a law of L points costs L_x + L_y one-cell remaps and about 3 L additions (rows
//      summed in x first). The product leaves out the mean map's shear inside the cell (its image a rectangle): a
//      first-order, mean-zero spatial error like the within-cell term, estimated with it by the companion meshes.
// The bounds in d dimensions, for the step's noise N(0, s^2 I) (an anisotropic N(0, S) is N(0, s^2 I) * N(0, S - s^2 I)
// with s^2 the smallest eigenvalue of S, and the second convolution does not expand TV: the caller passes that s):
//   rounding: E[R | B] = 0 per component, the remainder of the Taylor expansion along R/|R| gives
//     TV <= phi(1) E|R|^2 / s^2, E|R|^2 = gamma Delta^2 sum_j (f_x (1 - f_x) + f_y (1 - f_y));
//   pruning: erf(Delta / (2 sqrt(2) s)) per unit mass moved one step along an axis;
//   within-cell: w_j <= beta r_i, r_i the cell's half diagonal (no monotone refinement in 2-D).
// Cost: once, cells x n x (about 3 L) updates (L the law's lattice points; one law for all cells with constant
// gradients); per step and branch, cells x (L_x + L_y one-cell remaps + about 3 L additions).
#include <string>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include <stdexcept>

#include "solver/noisygd/MinibatchDrift.hpp"
#include "solver/noisygd/PushForward.hpp"

namespace fpdp::solver {

struct LatticeSettings {
  double spacing = 0;         // Delta > 0
  double pruneMass = 0;       // end points lighter than this are moved inwards (>= 0)
  double noiseStdDev = 0;     // s > 0: the step's noise N(0, s^2) that follows the push-forward
  double gradientLipschitz = 0;  // beta >= 0 (finite): of every clipped per-example gradient
  bool monotoneGradients = false;  // every clipped per-example gradient nondecreasing (1-D convex losses; unused in 2-D)
  /// The set-up's budget: lattice points written by the laws' convolutions, summed over the cells and records
  /// (0: none). A finer lattice (smaller tolerance) costs more; beyond the budget (or pointBudget) the constructor
  /// throws LatticeBudgetExceeded before the memory or the time runs away.
  double workBudget = 0;
  double pointBudget = 0;  // lattice points held by the laws, summed over the cells (0: none)
  /// 1-D: the rounded records whose variance every law carries (at least its own: the records but the differing
  /// one), so that D's and D''s laws ask the same of the step's noise (addedVariance).
  long roundedRecords = 0;
};

/// The displacement lattice would need more work than LatticeSettings::workBudget.
struct LatticeBudgetExceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The law of a cell's lattice displacement: probabilities at (first + k) Delta, k = 0..size-1.
struct LatticeLaw {
  long first = 0;
  std::vector<double> prob;
  double roundingVariance = 0;  // E R^2 (1-D: the same V for every batch and cell)
  double thirdMoments = 0;      // 1-D: sum_j gamma |E[e_j^3 | j in B]|
  double fourthMoments = 0;     // 1-D: sum_j (E e_j^4 + 3 (E e_j^2)^2), averaged over inclusion
  double pruned = 0;            // mass moved by pruning, one lattice step per move, summed over the moves
};

/// The law of a cell's 2-D lattice displacement, by rows: row r holds the probabilities at
/// ((rowFirst[r] + k) Delta, (firstRow + r) Delta), k = 0..rowLength(r)-1, stored at prob[rowStart[r] + k].
struct PlaneLatticeLaw {
  long firstRow = 0;
  std::vector<long> rowFirst;
  std::vector<std::size_t> rowStart{0};  // rows() + 1 offsets
  std::vector<double> prob;
  double roundingVariance = 0;  // E|R|^2
  double pruned = 0;            // mass moved by pruning, one lattice step along an axis per move
  std::size_t rows() const { return rowFirst.size(); }
  std::size_t rowLength(std::size_t r) const { return rowStart[r + 1] - rowStart[r]; }
};

class PoissonLatticeMixture {
public:
  /// groups: the records (counts >= 1); exactGroup: the group one of whose records is the differing record (its
  /// displacement exact), or -1; rate gamma in (0, 1]; expectedSize b > 0; eta the step size. 1-D and 2-D meshes.
  PoissonLatticeMixture(const meshes::BoxMesh& mesh, std::vector<RecordGroup> groups, long exactGroup, double rate,
                        double expectedSize, double eta, LatticeSettings settings);

  /// The bounds of one step on the TV between the lattice's and the exact mixture, each followed by the noise.
  struct StepBound {
    double lattice = 0;     // rounding and pruning
    double withinCell = 0;  // the cells' spatial discretisation (first order)
  };
  /// The mixture's push-forward of `field` (cell averages) in place; bound (out): for the field's mass.
  Outflow apply(std::vector<double>& field, StepBound& bound) const;

  /// The lattice spacing whose rounding term is at most `tolerance` per unit mass and step for n records at rate
  /// gamma in `dim` dimensions: in 2-D phi(1) gamma n dim Delta^2 / (4 s^2) <= tolerance, in 1-D lineLatticeTerm at its
  /// worst fractions (third order, with the compensated noise).
  static double spacingFor(double tolerance, double noiseStdDev, double rate, long records, int dim = 1);

  const LatticeLaw& law(std::size_t cell) const { return laws_[cell]; }
  /// 2-D: the law of cell `cell` (natural order).
  const PlaneLatticeLaw& planeLaw(std::size_t cell) const { return planeLaws_[planeLawOfCell_[cell]]; }
  /// The bounds of cell i per unit mass and step.
  double latticeBound(std::size_t cell) const { return latticeBound_[cell]; }
  double withinCellBound(std::size_t cell) const { return withinCellBound_[cell]; }
  /// The widest law's lattice points, and the sum over the laws held (in 2-D cells may share one).
  std::size_t widestLaw() const;
  double latticePoints() const;
  std::string describe() const;

  /// 1-D: the variance V the rounding adds to every batch's displacement (roundedRecords x Delta^2 / 4), which the
  /// step's noise gives up: the push-forward is to be followed by N(0, s^2 - V) (compensatedStdDev() squared), not
  /// N(0, s^2). 0 in 2-D, whose rounding is bounded at second order instead.
  double addedVariance() const { return mesh_.dim() == 1 ? addedVariance_ : 0.0; }
  double compensatedStdDev() const { return mesh_.dim() == 1 ? compensatedStdDev_ : settings_.noiseStdDev; }

  /// The spacing in use: the given one, refined on a uniform line to h / M with M whole.
  double spacing() const { return settings_.spacing; }

private:
  /// `work` (in, out): the lattice points written so far, checked against the budget.
  LatticeLaw displacementLaw(std::size_t cell, double& work) const;
  /// 2-D (PoissonLatticeMixture2d.cpp): the set-up, the law of one cell, and the deposit.
  void setUpPlane();
  PlaneLatticeLaw planeDisplacementLaw(std::size_t cell, double& work) const;
  /// The set-up's budgets (both dimensions): throw LatticeBudgetExceeded beyond them.
  void checkWork(double work, std::size_t cell) const;
  void checkPoints(double stored, std::size_t cell) const;
  Outflow applyPlane(std::vector<double>& field, StepBound& bound) const;
  /// The within-cell term per unit mass for the squared sum sum_j w_j^2 (both dimensions).
  double withinCellTerm(double squares) const;
  /// 2-D: the lattice's term per unit mass for a law's rounding variance and pruned mass.
  double latticeTerm(double roundingVariance, double pruned) const;
  /// 1-D: the lattice's term per unit mass of a law (its rounding's third and fourth moments, its pruned mass).
  double lineLatticeTerm(const LatticeLaw& law) const;
  /// One source cell's mass (one branch of the differing record, its weight in `mass` and the densities) moved by
  /// the mean map shifted by `shift` and every lattice point of the cell's law.
  struct Deposit {
    std::size_t cell;
    double mass, rhoLeft, rhoRight, shift;
  };
  /// A one-cell remap per lattice point (any line).
  void depositByRemaps(const Deposit& d, std::vector<double>& out, Outflow& outflow) const;
  /// A uniform line: one remap per residue of the lattice modulo a cell, then shifted sums.
  void depositOnUniformLine(const Deposit& d, std::vector<double>& out, Outflow& outflow) const;

  const meshes::BoxMesh& mesh_;
  std::vector<RecordGroup> groups_;
  long exactGroup_;
  long records_ = 0;
  double rate_, expectedSize_, eta_;
  LatticeSettings settings_;
  long cellsPerStep_ = 0;  // M on a uniform line (h = M Delta), 0 otherwise
  long roundedRecords_ = 0;       // 1-D: the records whose rounding variance every law carries
  double addedVariance_ = 0;      // 1-D: V = roundedRecords_ Delta^2 / 4
  double compensatedStdDev_ = 0;  // 1-D: sqrt(s^2 - V)
  std::vector<std::vector<double>> centreGradients_;  // per group, at the cell centres (2-D: [2 cell + a])
  std::vector<double> meanImages_, meanSlopes_;      // x - (eta gamma/b) sum_j g_j(x) at the faces and its slope
  std::vector<double> meanSumAtCentre_;              // (eta gamma/b) sum_j g_j(c_i)
  std::vector<LatticeLaw> laws_;
  std::vector<double> exactShift_;                   // a_z(c_i) (0 without an exact record)
  std::vector<double> latticeBound_, withinCellBound_;
  // 2-D: the mean map's x-images
  // of the x-faces per row ([row][face]) and y-images of the y-faces per column, their slopes, the mean sum at the
  // centres and the differing record's displacement ([2 cell + a]), the laws and which law each cell takes.
  std::vector<double> planeMeanSum_, planeExactShift_;
  std::vector<std::vector<double>> rowImages_, rowSlopes_, columnImages_, columnSlopes_;
  std::vector<PlaneLatticeLaw> planeLaws_;
  std::vector<std::size_t> planeLawOfCell_;
};

}  // namespace fpdp::solver
