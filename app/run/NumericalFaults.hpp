#pragma once
// The numerical faults of a run (docs/faults.md §1) and the decision whether they stop it. The figures are the
// solver's (solver/propagation/DensityFaults.hpp); the tolerances and the list of faults that stop the run come from the case's
// [faults] table (Case::faults). Faults, per density (p, q) at every step:
//   non_finite     a NaN or Inf cell value;
//   negative_mass  negative mass / mass  > faults.negative_mass_tolerance, with
//                  negative mass = sum |c| max(-u_c, 0), mass = sum |c| |u_c| (BDF2 and the fourth-order flux leave
//                  round-off negatives, ~1e-16 of the mass, far below the default 1e-6);
//   wall_mass      max(largest density in the outermost cell layer / peak density, mass carried beyond the box /
//                  initial mass) > faults.wall_mass_tolerance (default 1e-3): the density has reached the no-flux
//                  walls (or left the box, for noisy GD with exact_convolution and the push-forward), so the box is
//                  too small for the run. The density ratio, unlike the layer's mass, does not depend on the width of
//                  the wall cells. With a constraint set, WallFigures below.
// A fault listed in faults.stop_on stops the run at the step it is found: check() returns true, the caller stops
// stepping and calls throwIfStopped(), which throws NumericalFault with the message (runCase's caller prints it and
// exits with status 1; the output stays in DIR.partial, which the failed run removes). A fault not listed is
// remembered (its worst figure) and reported by summary().
// Checked at every step, not only at output steps: the measurement is one O(N) pass and two reductions, cheaper than
// the step's linear solve, and a blow-up between output steps is then caught at the step it happens.
#include <petscvec.h>

#include <array>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include "io/CheckpointFile.hpp"
#include "app/case/Case.hpp"
#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::app {

struct NumericalFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What counts as mass at the walls. Without a constraint set: the density in the outermost cell layer. With one (projected noisy
/// GD, docs/noisy-gd.md §6) the mass of the cells next to the walls may legitimately sit on the boundary of C, which
/// may coincide with the walls: the layer is not counted; instead, the Fokker–Planck route reports the mass in the wall
/// cells after the noise and before Pi_C (what the no-flux walls reflected), and the exact-convolution route pads the
/// mesh by the kernel's reach, so nothing reaches its walls.
struct WallFigures {
  bool outermostLayer = true;
  double beforeProjection = 0.0;  // largest mass (either density) in the wall cells before Pi_C so far
};

class NumericalFaultMonitor {
public:
  NumericalFaultMonitor(const FaultsSpec& spec, const meshes::DistributedBoxMesh& mesh);

  /// Measures the state u (p and q interlaced) at (step, t). beyondBox[f]: the mass of field f carried beyond the box
  /// so far (noisy GD outflow; 0 for Langevin). Collective. Returns true if a fault that stops the run has been found
  /// (at this step or before): the caller stops stepping and calls throwIfStopped().
  bool check(long step, double t, Vec u, const std::array<double, 2>& beyondBox = {0.0, 0.0},
             const WallFigures& walls = {});
  bool stopped() const { return stopMessage_.has_value(); }
  /// The faults whose figure has exceeded, at some step so far, the stricter of the case's tolerance and the default
  /// one (stopping the run or not), by name; empty if none has. A case file that relaxes a tolerance lets its run go
  /// on, but the accuracy (AccuracyOutput::watchFaults) certifies nothing past the default.
  std::string faultsSoFar() const;
  /// What the negative-mass message suggests, for the settings in effect (negativeMassRemedy); "refine the mesh" until
  /// set.
  void setNegativeMassRemedy(std::string remedy) { negativeRemedy_ = std::move(remedy); }
  /// Throws NumericalFault with the message of the fault that stopped the run; nothing if none did.
  void throwIfStopped() const;
  /// Summary lines: the largest figures met, and a WARNING for each fault that occurred without stopping the run.
  void summary(std::ostream& out) const;
  /// Checkpoint/restart (app/run/Checkpoint): the mass reference and the worst figures so far, so that a continued run
  /// judges and reports exactly as the uninterrupted one.
  void saveState(io::CheckpointData& ck) const;
  void restoreState(const io::CheckpointData& ck);

private:
  std::string negativeRemedy_ = "refine the mesh";
  struct Worst {
    double figure = 0.0;        // the largest share (or count of non-finite cells) seen
    long step = -1, firstStep = -1;  // where the figure was largest; where it first exceeded the tolerance
    double t = 0.0;
    std::string message;        // the fault's message at its worst (empty: never exceeded)
  };
  void record(Worst& w, const char* fault, double figure, bool exceeded, long step, double t,
              const std::string& message);

  FaultsSpec spec_;
  const meshes::DistributedBoxMesh& mesh_;
  std::array<double, 2> initialMass_{0.0, 0.0};
  bool haveInitialMass_ = false;
  Worst nonFinite_, negative_, wall_;
  std::optional<std::string> stopMessage_;
};

}  // namespace fpdp::app
