#pragma once
// One printf-style formatting of a double for summaries, tables and reports, with the non-finite values spelt out
// (printf's "nan"/"inf" differ between libcs; tables want a fixed spelling).
#include <cmath>
#include <cstdio>
#include <string>

namespace fpdp::app {

inline std::string formatNumber(double v, const char* format, const char* nanText = "nan") {
  if (std::isnan(v)) return nanText;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

}  // namespace fpdp::app
