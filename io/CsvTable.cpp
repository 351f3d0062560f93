#include "io/CsvTable.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include "io/NumberText.hpp"

namespace fpdp::io {

namespace {
std::vector<std::string>& continuedPaths() {
  static std::vector<std::string> paths;
  return paths;
}
bool continued(const std::string& path) {
  for (const auto& p : continuedPaths())
    if (p == path) return true;
  return false;
}
}  // namespace

void CsvTable::setContinuedPaths(std::vector<std::string> paths) { continuedPaths() = std::move(paths); }

CsvTable::CsvTable(const std::string& path, std::vector<std::string> columns)
    : out_(OutputFile::open(path, continued(path) ? OutputMode::Append : OutputMode::Replace)), path_(path),
      columns_(std::move(columns)) {
  if (continued(path)) return;
  std::string header;
  for (std::size_t i = 0; i < columns_.size(); ++i) header += (i ? "," : "") + columns_[i];
  out_.write(header + '\n');
}

std::string CsvTable::format(double v) { return shortestText(v); }

void CsvTable::addRow(const std::vector<double>& values) {
  if (values.size() != columns_.size())
    throw std::logic_error("CsvTable::addRow: " + std::to_string(values.size()) + " values for " +
                           std::to_string(columns_.size()) + " columns in " + path_);
  // One write per row (a row is never half on disk if the run is killed between rows).
  std::string line;
  for (std::size_t i = 0; i < values.size(); ++i) line += (i ? "," : "") + format(values[i]);
  line += '\n';
  out_.write(line);
}

void CsvTable::addRowWithMissing(const std::vector<std::optional<double>>& values) {
  if (values.size() != columns_.size())
    throw std::logic_error("CsvTable::addRow: " + std::to_string(values.size()) + " values for " +
                           std::to_string(columns_.size()) + " columns in " + path_);
  std::string line;
  for (std::size_t i = 0; i < values.size(); ++i) line += (i ? "," : "") + (values[i] ? format(*values[i]) : "");
  line += '\n';
  out_.write(line);
}

std::string textCsv(const std::vector<std::string>& columns, const std::vector<std::vector<std::string>>& rows) {
  auto cell = [](const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cell(cells[i]);
    out += '\n';
  };
  line(columns);
  for (const auto& r : rows) line(r);
  return out;
}

}  // namespace fpdp::io
