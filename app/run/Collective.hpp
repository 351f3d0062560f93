#pragma once
// Rank 0 acts (on the file system), every rank learns the outcome: a failure throws the same error on every rank,
// so that no rank waits in a collective call another has left.
#include <mpi.h>

#include <functional>
#include <string>

namespace fpdp::app {

/// Runs `rank0Action` on rank 0 and broadcasts its success; on failure every rank throws Error(rank 0's message).
template <class Error>
void onRankZero(MPI_Comm comm, int rank, const std::function<void()>& rank0Action) {
  int ok = 1;
  std::string message;
  if (rank == 0) {
    try {
      rank0Action();
    } catch (const std::exception& e) {
      ok = 0;
      message = e.what();
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  int length = static_cast<int>(message.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  message.resize(static_cast<std::size_t>(length));
  if (length > 0) MPI_Bcast(message.data(), length, MPI_CHAR, 0, comm);
  if (!ok) throw Error(message);
}

}  // namespace fpdp::app
