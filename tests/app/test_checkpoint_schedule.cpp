// Which output steps take a checkpoint (app/observers/CheckpointWriter.hpp, checkpointDue). A checkpoint holds every
// output step's tables so far; written at every output step, the run's writing grew with the square of its output
// steps (2000 noisy-GD steps of a 16-cell case: 246 s instead of 3.5 s, 38 GB written). The schedule must keep the
// tables written in all linear in the output steps, lose at most 1/16 of the run on an interruption, and keep short
// runs checkpointed at every output step.
#define BOOST_TEST_MODULE app_checkpoint_schedule
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "app/observers/CheckpointWriter.hpp"

using fpdp::app::checkpointDue;
using fpdp::app::kCheckpointGrowth;

namespace {

struct Schedule {
  long checkpoints = 0;
  long tablesWritten = 0;  // output steps' tables written over all checkpoints
  long largestLoss = 0;    // output steps an interruption just before a checkpoint would lose
};

Schedule schedule(long outputs, long every) {
  Schedule s;
  long last = 0;
  for (long n = 1; n <= outputs; ++n) {
    s.largestLoss = std::max(s.largestLoss, n - last);
    if (!checkpointDue(n, last, every)) continue;
    ++s.checkpoints;
    s.tablesWritten += n;
    BOOST_TEST((n - last) * kCheckpointGrowth >= n);
    last = n;
  }
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(short_runs_are_checkpointed_at_every_output_step) {
  for (long n = 1; n <= kCheckpointGrowth; ++n) BOOST_TEST(checkpointDue(n, n - 1, 1));
  BOOST_TEST(schedule(kCheckpointGrowth, 1).checkpoints == kCheckpointGrowth);
  // checkpoint_every still decides which output steps may take one.
  BOOST_TEST(!checkpointDue(3, 2, 2));
  BOOST_TEST(checkpointDue(4, 2, 2));
  BOOST_TEST(!checkpointDue(0, 0, 1));
}

BOOST_AUTO_TEST_CASE(the_tables_written_grow_linearly_with_the_output_steps) {
  for (const long outputs : {100L, 2000L, 100000L}) {
    for (const long every : {1L, 3L}) {
      BOOST_TEST_CONTEXT(outputs << " output steps, checkpoint_every " << every) {
        const Schedule s = schedule(outputs, every);
        // At every output step this was outputs^2 / 2 (2e6 for 2000; 5e9 for 100000).
        BOOST_TEST(s.tablesWritten <= (kCheckpointGrowth + 2) * outputs);
        BOOST_TEST(s.checkpoints >= 1);
        // An interruption loses at most 1/16 of the output steps done, rounded up to checkpoint_every.
        BOOST_TEST(s.largestLoss <= outputs / kCheckpointGrowth + kCheckpointGrowth * every);
      }
    }
  }
}
