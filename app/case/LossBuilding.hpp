#pragma once
// The loss l(theta; x) of a case, for the run and for the case reader's check that it is finite on the mesh.
#include <memory>

#include "app/case/Case.hpp"
#include "models/Loss.hpp"

namespace fpdp::app {

std::shared_ptr<const models::Loss> buildLoss(const LossSpec& spec, int dim);

}  // namespace fpdp::app
