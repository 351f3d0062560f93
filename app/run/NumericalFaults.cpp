#include "app/run/NumericalFaults.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "solver/propagation/DensityFaults.hpp"

namespace fpdp::app {

namespace {

constexpr const char* kFieldNames[2] = {"p", "q"};

std::string sci(double v, const char* f = "%.3e") {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

/// x / total, with the shares a division cannot express: nothing of nothing is 0, something of nothing is +inf.
double share(double x, double total) {
  if (total > 0) return x / total;
  return x > 0 ? INFINITY : 0.0;
}

std::string where(const char* fault, long step, double t) {
  return std::string("numerical fault '") + fault + "' at step " + std::to_string(step) + " (t = " +
         sci(t, "%.6g") + "): ";
}

constexpr const char* kRelax = "; to let the run go on, relax it in the case's [faults] table (stop_on, or the tolerance; docs/faults.md)";

}  // namespace

NumericalFaultMonitor::NumericalFaultMonitor(const FaultsSpec& spec, const meshes::DistributedBoxMesh& mesh)
    : spec_(spec), mesh_(mesh) {}

void NumericalFaultMonitor::record(Worst& w, const char* fault, double figure, bool exceeded, long step, double t,
                                   const std::string& message) {
  if (exceeded && w.firstStep < 0) w.firstStep = step;
  if (figure > w.figure || w.step < 0) {
    w.figure = figure;
    w.step = step;
    w.t = t;
    if (exceeded) w.message = message;
  }
  if (exceeded && spec_.stops(fault) && !stopMessage_) stopMessage_ = message;
}

std::string NumericalFaultMonitor::faultsSoFar() const {
  const FaultsSpec defaults;
  const std::pair<const char*, bool> seen[] = {
      {"non_finite", nonFinite_.figure > 0.0},
      {"negative_mass", negative_.figure > std::min(spec_.negativeMassTolerance, defaults.negativeMassTolerance)},
      {"wall_mass", wall_.figure > std::min(spec_.wallMassTolerance, defaults.wallMassTolerance)}};
  std::string names;
  for (const auto& [name, exceeded] : seen)
    if (exceeded) names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

bool NumericalFaultMonitor::check(long step, double t, Vec u, const std::array<double, 2>& beyondBox,
                                  const WallFigures& walls) {
  if (stopped()) return true;
  const auto figures = solver::measureDensityFaults(mesh_, u);
  if (!haveInitialMass_) {
    for (int f = 0; f < 2 && f < static_cast<int>(figures.size()); ++f) initialMass_[f] = figures[f].mass;
    haveInitialMass_ = true;
  }
  const long cells = static_cast<long>(mesh_.box().totalCells());
  // One figure per fault: the worse of the two densities.
  for (int f = 0; f < 2 && f < static_cast<int>(figures.size()); ++f) {
    const auto& g = figures[f];
    const char* name = kFieldNames[f];
    {
      const double figure = static_cast<double>(g.nonFiniteCells);
      const std::string message = where("non_finite", step, t) + name + " has " +
                                  std::to_string(g.nonFiniteCells) + " NaN or Inf cell value(s) of " +
                                  std::to_string(cells) + "; tolerance: none (a blow-up: check that the loss's gradient is finite "
                                  "on the whole box, the time step and the solver)";
      record(nonFinite_, "non_finite", figure, g.nonFiniteCells > 0, step, t, message);
    }
    {
      const double figure = share(g.negativeMass, g.mass);
      const std::string message =
          where("negative_mass", step, t) + "negative mass / mass of " + name + " = " + sci(figure) + " (" +
          std::to_string(g.negativeCells) + " negative cells, smallest value " + sci(g.min) +
          ") exceeds faults.negative_mass_tolerance = " + sci(spec_.negativeMassTolerance, "%.3g") +
          " (the scheme is not sign-preserving here: " + negativeRemedy_ + ")";
      record(negative_, "negative_mass", figure, !(figure <= spec_.negativeMassTolerance), step, t, message);
    }
    {
      const double layer = walls.outermostLayer ? share(g.wallMax, g.max) : 0.0;
      const double outside = share(beyondBox[static_cast<std::size_t>(f)], initialMass_[static_cast<std::size_t>(f)]);
      const double beforeProjection = share(walls.beforeProjection, initialMass_[static_cast<std::size_t>(f)]);
      const double figure = std::max({layer, outside, beforeProjection});
      const std::string what =
          figure == layer     ? "largest density of " + std::string(name) + " in the outermost cell layer / its peak"
          : figure == outside ? "mass of " + std::string(name) + " carried beyond the box / initial mass"
                              : "largest mass in the wall cells after the noise, before the projection onto C / "
                                "initial mass";
      const std::string message = where("wall_mass", step, t) + what + " = " + sci(figure) +
                                  " exceeds faults.wall_mass_tolerance = " + sci(spec_.wallMassTolerance, "%.3g") +
                                  ": the density has reached the walls, the box is too small for the run (enlarge "
                                  "mesh.lower/upper)";
      record(wall_, "wall_mass", figure, !(figure <= spec_.wallMassTolerance), step, t, message);
    }
  }
  return stopped();
}

void NumericalFaultMonitor::throwIfStopped() const {
  if (stopMessage_) throw NumericalFault(*stopMessage_ + kRelax);
}

void NumericalFaultMonitor::summary(std::ostream& out) const {
  out << "  numerical faults (docs/faults.md), largest at any step: non-finite cells " << sci(nonFinite_.figure, "%.0f")
      << ", negative-mass share " << sci(negative_.figure) << " (tolerance " << sci(spec_.negativeMassTolerance, "%.3g")
      << "), wall figure " << sci(wall_.figure) << " (tolerance " << sci(spec_.wallMassTolerance, "%.3g") << ")\n";
  for (const Worst* w : {&nonFinite_, &negative_, &wall_})
    if (!w->message.empty())
      out << "  WARNING: not stopping the run (not in faults.stop_on), first at step " << w->firstStep
          << "; at its worst: " << w->message << "\n";
}

void NumericalFaultMonitor::saveState(io::CheckpointData& ck) const {
  ck.put("/faults/initial_mass", {initialMass_[0], initialMass_[1], haveInitialMass_ ? 1.0 : 0.0});
  const std::pair<const char*, const Worst*> worst[] = {{"non_finite", &nonFinite_}, {"negative_mass", &negative_},
                                                        {"wall_mass", &wall_}};
  for (const auto& [name, w] : worst) {
    ck.put(std::string("/faults/") + name, {w->figure, static_cast<double>(w->step), static_cast<double>(w->firstStep), w->t});
    ck.putText(std::string("/faults/") + name + "_message", w->message);
  }
}

void NumericalFaultMonitor::restoreState(const io::CheckpointData& ck) {
  const auto& m = ck.array("/faults/initial_mass", 3);
  initialMass_ = {m[0], m[1]};
  haveInitialMass_ = m[2] != 0.0;
  const std::pair<const char*, Worst*> worst[] = {{"non_finite", &nonFinite_}, {"negative_mass", &negative_},
                                                  {"wall_mass", &wall_}};
  for (const auto& [name, w] : worst) {
    const auto& v = ck.array(std::string("/faults/") + name, 4);
    w->figure = v[0], w->step = static_cast<long>(v[1]), w->firstStep = static_cast<long>(v[2]), w->t = v[3];
    w->message = ck.text(std::string("/faults/") + name + "_message");
  }
}

}  // namespace fpdp::app
