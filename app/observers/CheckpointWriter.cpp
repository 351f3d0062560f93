#include "app/observers/CheckpointWriter.hpp"

#include <csignal>
#include <stdexcept>

#include "app/run/Checkpoint.hpp"
#include "app/run/InterruptHint.hpp"
#include "meshes/PetscHandles.hpp"

namespace fpdp::app {

CheckpointWriter::CheckpointWriter(MPI_Comm comm, int rank, std::string workDir, const Case& c, long steps,
                                   std::string disabled, StateSource source)
    : comm_(comm),
      rank_(rank),
      workDir_(std::move(workDir)),
      dataSha256_(c.data.fileSha256),
      every_(c.output.every),
      checkpointEvery_(c.output.checkpointEvery),
      steps_(steps),
      disabled_(std::move(disabled)),
      source_(std::move(source)) {}

bool checkpointDue(long output, long last, long checkpointEvery) {
  return output > 0 && output % checkpointEvery == 0 && (output - last) * kCheckpointGrowth >= output;
}

bool CheckpointWriter::due(long step) const {
  return disabled_.empty() && step > 0 && step < steps_ && step % every_ == 0 &&
         checkpointDue(step / every_, lastCheckpointOutput_, checkpointEvery_);
}

void CheckpointWriter::observe(const OutputStep& s) {
  if (!due(s.step)) return;
  io::CheckpointData ck;
  source_(ck, s.step, s.t, s.u);
  int ok = 1;
  std::string error;
  if (rank_ == 0) {
    try {
      carried_.save(ck, workDir_);
      ck.putText("/inputs/data_file_sha256", dataSha256_);
      io::writeCheckpointFile(workDir_ + "/" + kCheckpointName, ck);
    } catch (const std::exception& e) {
      ok = 0;
      error = e.what();
    }
  }
  FPDP_PETSC(MPI_Bcast(&ok, 1, MPI_INT, 0, comm_));
  if (!ok) throw std::runtime_error(rank_ == 0 ? "writing the checkpoint: " + error : "writing the checkpoint failed");
  lastCheckpointOutput_ = s.step / every_;
  InterruptHint::checkpointWritten();
  if (s.step == killAfterCheckpointStep()) std::raise(SIGKILL);  // the tests' interrupted run
  if (s.step == failAfterCheckpointStep())                        // the tests' full disk
    throw std::runtime_error("cannot write '" + workDir_ + "/divergence.csv': No space left on device (simulated)");
}

}  // namespace fpdp::app
