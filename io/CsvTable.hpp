#pragma once
// CSV time series: a header line, then one row per output step, flushed as written so that an interrupted
// run keeps every completed row. Numbers are written with 17 significant digits (round-trip exact); infinite
// values as "inf", undefined ones as "nan". Written by rank 0 only (the caller decides). Opened as io/OutputFile
// opens every output file: never through a link, never a special file.
#include <optional>
#include <string>
#include <vector>

#include "io/OutputFile.hpp"

namespace fpdp::io {

class CsvTable {
public:
  CsvTable(const std::string& path, std::vector<std::string> columns);
  /// Continuing an interrupted run (app/run/Checkpoint): a table opened at one of these paths appends to the existing
  /// file (which the restart truncates to its size at the checkpoint) instead of starting it with a header.
  /// Process-wide; the restart sets it before the outputs are constructed and clears it after.
  static void setContinuedPaths(std::vector<std::string> paths);
  void addRow(const std::vector<double>& values);
  /// A row where some values do not exist (e.g. a bound whose assumptions fail): an empty cell for nullopt.
  void addRowWithMissing(const std::vector<std::optional<double>>& values);
  const std::vector<std::string>& columns() const { return columns_; }
  static std::string format(double v);

private:
  OutputFile out_;
  std::string path_;
  std::vector<std::string> columns_;
};

/// A small table of text cells (RFC 4180 quoting: cells with ',', '"' or a line break are quoted, '"' doubled).
std::string textCsv(const std::vector<std::string>& columns, const std::vector<std::vector<std::string>>& rows);

}  // namespace fpdp::io
