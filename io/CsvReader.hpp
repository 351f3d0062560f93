#pragma once
// Reading the CSV files fpdp writes (io/CsvTable: a header line, one row per line, numbers with 17 significant digits,
// "inf"/"nan", empty cells for values that do not exist, RFC 4180 quoting in text tables). Cells are returned as text;
// the caller decides which columns are numbers.
#include <cstddef>
#include <string>
#include <vector>

namespace fpdp::io {

struct CsvText {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // each row has columns.size() cells
};

/// Parses `text` (the content of a CSV file). Throws std::runtime_error naming `where` and the line when a row has
/// a different number of cells than the header, a quote is unterminated, or there is no header.
CsvText parseCsv(const std::string& text, const std::string& where);
/// The largest table a reader of a run directory reads (fpdp plot, sweeps, worst-case searches): a run's tables are
/// far smaller (divergence.csv of 10^5 output steps is about 20 MiB), and the parsed cells take several times the
/// file's size in memory.
inline constexpr std::size_t kMaxTableBytes = std::size_t{256} << 20;

/// Reads and parses the file at `path`; throws std::runtime_error when it cannot be read, is not a regular file (a
/// FIFO or a device is refused at once, not read or waited on) or is larger than `maxBytes`.
CsvText readCsv(const std::string& path, std::size_t maxBytes = kMaxTableBytes);

/// A number in fpdp's CSV notation: decimal or exponent notation, "inf", "-inf", "nan"; an empty cell is NaN.
/// Returns false for anything else (text cells).
bool parseCsvNumber(const std::string& cell, double& value);

}  // namespace fpdp::io
