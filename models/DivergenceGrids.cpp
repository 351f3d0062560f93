#include "models/DivergenceGrids.hpp"

#include <stdexcept>

namespace fpdp::models {

std::vector<double> denseRenyiOrders() {
  std::vector<double> a;
  for (int k = 11; k <= 109; ++k) a.push_back(k / 10.0);  // 1.1 .. 10.9 by 0.1
  for (int k = 11; k <= 63; ++k) a.push_back(k);
  for (double x : {128.0, 256.0, 512.0, 1024.0}) a.push_back(x);
  return a;
}

std::vector<double> uniformEpsGrid(double max, double step) {
  if (!(max >= 0) || !(step > 0)) throw std::invalid_argument("uniformEpsGrid: need max >= 0 and step > 0");
  std::vector<double> eps;
  for (long k = 0; static_cast<double>(k) * step <= max + 1e-9 * step; ++k) eps.push_back(static_cast<double>(k) * step);
  return eps;
}

}  // namespace fpdp::models
