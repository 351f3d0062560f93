#pragma once
// The columns that place a row in time, shared by the tables of a run (docs/output.md): `step` and `t` of an
// output step.
#include "io/Column.hpp"

namespace fpdp::app {

inline io::Column outputStepColumn() { return io::integer("step", io::units::kSteps, "The output step."); }
inline io::Column outputTimeColumn() { return io::real("t", io::units::kTime, "The time of the output step."); }

}  // namespace fpdp::app
