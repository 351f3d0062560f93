#pragma once
// Reading the CSV files fpdp writes (io/CsvTable: a header line, one row per line, numbers with 17 significant digits,
// "inf"/"nan", empty cells for values that do not exist, RFC 4180 quoting in text tables). Cells are returned as text;
// the caller decides which columns are numbers.
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
/// Reads and parses the file at `path`; throws std::runtime_error when it cannot be read or is not a regular file
/// (after symbolic links: a FIFO or a device is refused, not read).
CsvText readCsv(const std::string& path);

/// A number in fpdp's CSV notation: decimal or exponent notation, "inf", "-inf", "nan"; an empty cell is NaN.
/// Returns false for anything else (text cells).
bool parseCsvNumber(const std::string& cell, double& value);

}  // namespace fpdp::io
