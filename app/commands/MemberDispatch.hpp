#pragma once
// `fpdp sweep` and `fpdp worst-case` under mpiexec (docs/scaling.md §7): the members are spread over groups of ranks
// instead of child processes, so that a job of many ranks runs many members at once, each on one or several ranks.
//
//   mpiexec -n R fpdp sweep CASE --set KEY=V1,V2,... [--ranks-per-member M] [...]
//
// MPI_COMM_WORLD is split (MPI_Comm_split) into R / M groups of M consecutive ranks, and each group's communicator is
// PETSC_COMM_WORLD for the members it runs. Rank 0 runs the study as without MPI (reading and validating the
// members, the study directory, the tables, the plots, the summary); where it would start child processes it sends
// the members' `run` commands to every rank instead, member m going to group m mod (R / M). Each group runs its
// members in turn, in this process (the command `fpdp run` would run, with the member's own PETSc options database and
// its output in the member's log files), and the groups' leaders return the exit statuses to rank 0. With one rank
// per member every member computes exactly what `fpdp run` computes in a child process, so the study's tables are
// those of the serial study; with several ranks per member, what a parallel `fpdp run` computes. The study directory
// must be on a file system every rank sees.
#include <functional>

namespace fpdp::app {

/// Whether this process was started by an MPI launcher with more than one rank (OMPI_COMM_WORLD_SIZE or PMI_SIZE).
bool studyLaunchedOnRanks();

/// Runs `study(argc, argv)` (the study command, without --ranks-per-member) on rank 0 with its members dispatched
/// over the groups, and serves the members on every other rank. Returns rank 0's exit status on rank 0 (2 for a bad
/// --ranks-per-member, reported once), 0 elsewhere. Starts and ends MPI and PETSc.
int runStudyOnRanks(int argc, char** argv, const std::function<int(int, char**)>& study);

}  // namespace fpdp::app
