#pragma once
// Checkpoints (app/Checkpoint, docs/output.md "Checkpoint and restart"): at every output.checkpoint_every-th output
// step, after that step's rows and fields are written, everything the rest of the run needs goes into
// DIR.partial/checkpoint.h5. Registered after the observers whose output it must follow. Never at step 0: a
// restart from there would save nothing (it cost 5 ms of a 0.2 s run at 256^2, and a whole state's I/O on large
// meshes).
#include <functional>
#include <string>

#include "app/Case.hpp"
#include "app/run/RunObserver.hpp"

namespace fpdp::app {

class CheckpointWriter final : public RunObserver {
public:
  /// Fills a checkpoint with the run's state at (step, t, u): the stepper's and every observer's.
  using StateSource = std::function<void(io::CheckpointData&, long step, double t, Vec u)>;
  /// `disabled`: why the run writes no checkpoints (empty: it does). Collective; rank 0 writes the file.
  CheckpointWriter(MPI_Comm comm, int rank, std::string workDir, const Case& c, long steps, std::string disabled,
                   StateSource source);

  void observe(const OutputStep& s) override;

private:
  bool due(long step) const;

  MPI_Comm comm_;
  int rank_;
  std::string workDir_;
  long every_, checkpointEvery_, steps_;
  std::string disabled_;
  StateSource source_;
};

}  // namespace fpdp::app
