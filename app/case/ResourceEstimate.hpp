#pragma once
// Before a run allocates or writes anything: will it fit in the memory and on the disk of this machine? A mesh of
// 16384^2 cells is an allowed case that needs about 130 GB of memory; without this check it grew until the kernel's
// OOM killer ended it. 10^7 noisy-GD steps with fields at every 10th would write 10^6 field steps.
#include <cstdint>
#include <optional>
#include <string>

#include "app/case/Case.hpp"

namespace fpdp::app {

/// A lower estimate of a run's resident memory, whole job: cells x the lowest measured bytes per cell of the
/// integrator the case selects (bench/README.md, "Peak memory per cell"; docs/scaling.md §3) plus the fixed
/// footprint of one process (MPI, PETSc, HDF5) per rank. Low on purpose: a run it refuses cannot fit.
struct MemoryEstimate {
  std::uint64_t bytes = 0;
  std::uint64_t cells = 0;
  std::uint64_t bytesPerCell = 0;
  std::string basis;  // which figure was used, for the message
};

/// `solverOptionsGiven`: PETSc options on the command line, which may select another integrator than the case's:
/// then the lowest figure of all (the exponential integrator's) is used.
MemoryEstimate estimateRunMemory(const Case& c, int ranks, bool solverOptionsGiven);

/// `fpdp sample` with `threads` threads per rank: every thread keeps a histogram of the mesh per output step and
/// dataset (validation/MonteCarloSampler), 8 B per cell each, and one more set sums them.
MemoryEstimate estimateSampleMemory(const Case& c, int ranks, int threads);

/// The memory this machine can give a new process: MemAvailable of /proc/meminfo (else MemTotal), in bytes; none if
/// it cannot be read.
std::optional<std::uint64_t> availableMemory();

/// Throws InputError (exit status 2) if the run of `c` cannot fit: its estimate for the ranks on this node
/// (OMPI_COMM_WORLD_LOCAL_SIZE of OMPI_COMM_WORLD_SIZE, else all of them) exceeds availableMemory(). Called by
/// fpdp for every command that reads a case, after the case is read and before anything is allocated for it;
/// `samplerThreads`: the command is `fpdp sample` with that many threads per rank.
void requireMemoryFits(const Case& c, bool solverOptionsGiven, std::optional<int> samplerThreads = std::nullopt);

/// The number of output steps of the run: every output.every-th step, the first and the last.
std::uint64_t outputStepCount(const Case& c);

/// The tables a run keeps in memory, on every rank, for every output step until its end, when fpdp.h5 gets them
/// (app/observers/FunctionalsOutput.cpp): 12 numbers per Rényi order, 2 per eps of the hockey-stick grid, 2 per
/// privacy-loss bin, 8 B each. 10^4 output steps with 10^6 bins are 160 GB; they grew until the allocation failed.
/// requireMemoryFits counts them for every command but `sample`.
std::uint64_t estimateTableBytes(const Case& c);

/// The densities p and q (8 B per cell each) at every output step when output.fields, the same again for the VTK
/// files when output.vtk.
std::uint64_t estimateFieldBytes(const Case& c);

/// The least the run writes into its output directory: its fields and its tables (fpdp.h5; the CSV files repeat
/// them as text, not counted).
std::uint64_t estimateOutputBytes(const Case& c);

/// Throws InputError (exit status 2) if estimateOutputBytes(c) exceeds the space available to this user on the
/// file system that will hold `outputDirectory` (its nearest existing ancestor). Called by fpdp for run and
/// noise-study with the directory the run will write, and for check with the case's output.directory.
void requireOutputFits(const Case& c, const std::string& outputDirectory);

}  // namespace fpdp::app
