#include "app/case/LossBuilding.hpp"

#include <stdexcept>

#include "models/ExpressionLoss.hpp"

namespace fpdp::app {

std::shared_ptr<const models::Loss> buildLoss(const LossSpec& spec, int dim) {
  if (spec.type == "quadratic") return std::make_shared<models::QuadraticLoss>(spec.lambda);
  if (spec.type == "logistic") return std::make_shared<models::LogisticLoss>(spec.regularization);
  if (spec.type == "huber") return std::make_shared<models::HuberLoss>(spec.delta, spec.regularization);
  if (spec.type == "double_well") return std::make_shared<models::DoubleWellLoss>(spec.lambda, spec.width);
  if (spec.type == "expression") return std::make_shared<models::ExpressionLoss>(dim, spec.expression, spec.gradient);
  throw std::logic_error("buildLoss: unvalidated loss type " + spec.type);
}

}  // namespace fpdp::app
