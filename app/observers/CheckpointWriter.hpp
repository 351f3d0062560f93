#pragma once
// Checkpoints (app/run/Checkpoint, docs/output.md "Checkpoint and restart"): at every output.checkpoint_every-th output
// step, after that step's rows and fields are written, everything the rest of the run needs goes into
// DIR.partial/checkpoint.h5. Registered after the observers whose output it must follow. Never at step 0: a
// restart from there would save nothing (it cost 5 ms of a 0.2 s run at 256^2, and a whole state's I/O on large
// meshes).
#include <functional>
#include <string>

#include "app/case/Case.hpp"
#include "app/run/Checkpoint.hpp"
#include "app/run/RunObserver.hpp"

namespace fpdp::app {

/// Whether the output step with index `output` (step / output.every) takes a checkpoint when the last one was taken at
/// index `last` (0: none yet): every `checkpointEvery`-th index, once the indices since the last checkpoint are at
/// least 1/kCheckpointGrowth of `output`. A checkpoint holds every output step's tables so far, so its size grows with
/// the run: at every output step the writing was quadratic in the steps (2000 noisy-GD steps of a 16-cell case took
/// 246 s instead of 3.5 s, 38 GB written). With the spacing, the checkpoints written up to index S hold at most about
/// (kCheckpointGrowth + 1) S output steps' tables in all, and an interruption loses at most 1/kCheckpointGrowth of the
/// output steps done; runs of up to kCheckpointGrowth output steps are checkpointed at every one, as before.
constexpr long kCheckpointGrowth = 16;
bool checkpointDue(long output, long last, long checkpointEvery);

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
  long lastCheckpointOutput_ = 0;  // the output index of the last checkpoint written by this process (0: none)

  MPI_Comm comm_;
  int rank_;
  std::string workDir_;
  std::string dataSha256_;  // of the case's data file (empty: none), which a restart checks
  CarriedFiles carried_;    // the files a restart carries over, with their hashes
  long every_, checkpointEvery_, steps_;
  std::string disabled_;
  StateSource source_;
};

}  // namespace fpdp::app
