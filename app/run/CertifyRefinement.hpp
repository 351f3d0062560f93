#pragma once
// Certified on request (`accuracy.certify`, `fpdp run --certify`; docs/scheme.md §8, "Certified on request"): before
// the run, the case is solved on a sequence of meshes, each twice as fine per axis as the last (and, where the route
// has a time error, with half the time step), until the numbers asked for are certified at accuracy.rtol by the
// finest mesh and the three below it (app/run/Certification). Where the walls decide a number (box_truncation) the
// box is widened at the same cell width and the sequence starts again. It stops at accuracy.certify_seconds or
// accuracy.certify_max_cells, or at a reason no refinement removes, and says which. The run then takes the finest
// mesh of the sequence, with the coarser ones as its companions.
#include <mpi.h>

#include <optional>
#include <string>

#include "app/case/Case.hpp"
#include "app/run/CompanionSolve.hpp"

namespace fpdp::app {

/// What --certify (accuracy.certify) did before the run: the meshes it tried and why it stopped (empty: not asked).
struct CertificationReport {
  std::string requested;  // accuracy.certify ("" or "off": not asked)
  std::string levels;     // the meshes solved, e.g. "200, 400, 800 cells"
  std::string outcome;    // "certified", or what blocked it
  std::string remedy;     // where a budget blocked it: the setting that lets the next mesh run ("" otherwise)
  double seconds = 0.0;   // the refinement's wall time
};

struct CertifiedCase {
  Case c;                                    // the case to run: the requested one, refined or widened
  std::optional<CompanionValues> companion;  // its companions' values, where the sequence computed them
  CertificationReport report;
};

/// The case `c` twice as fine per axis (the grading's square root: the same widths profile), with half the time step
/// where the route has a time-discretisation error (time.dt / 2 and output.every x 2, or noisy_gd.diffusion_substeps
/// x 2).
Case refinedCase(const Case& c);

/// The case `c` with a box twice as wide per axis about its centre and twice the cells (the same cell widths).
/// Uniform axes only (nullopt where an axis is graded).
std::optional<Case> widenedCase(const Case& c);

/// Runs the refinement (collective). `progress`: progress lines on standard output and the caller's hook (a hook's
/// RunInterrupted stops the refinement and is thrown on).
CertifiedCase certifyCase(const Case& requested, MPI_Comm comm, const CompanionProgress& progress);

}  // namespace fpdp::app
