#pragma once
// One spelling of a double as text for every file fpdp writes (CSV, VTK, XDMF, the resolved case): the shortest text
// that reads back as the same double (1.1, 1e-05; not 1.1000000000000001), integers up to 1e15 without an exponent,
// and nan / inf / -inf spelt alike on every libc.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace fpdp::io {

inline std::string shortestText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buffer, sizeof buffer, "%.0f", v);
    return buffer;
  }
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, result.ptr);
}

}  // namespace fpdp::io
