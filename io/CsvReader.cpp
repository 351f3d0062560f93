#include "io/CsvReader.hpp"

#include "models/InputFile.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fpdp::io {

CsvText parseCsv(const std::string& text, const std::string& where) {
  CsvText out;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, cellStarted = false;
  long line = 1;
  auto endRow = [&] {
    row.push_back(cell);
    cell.clear();
    cellStarted = false;
    if (out.columns.empty()) {
      out.columns = row;
    } else {
      if (row.size() != out.columns.size())
        throw std::runtime_error(where + ": line " + std::to_string(line) + " has " + std::to_string(row.size()) +
                                 " cells, the header " + std::to_string(out.columns.size()));
      out.rows.push_back(row);
    }
    row.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        if (ch == '\n') ++line;
        cell += ch;
      }
      continue;
    }
    if (ch == '"' && cell.empty()) {
      quoted = cellStarted = true;
    } else if (ch == ',') {
      row.push_back(cell);
      cell.clear();
      cellStarted = true;
    } else if (ch == '\n') {
      endRow();
      ++line;
    } else if (ch != '\r') {
      cell += ch;
      cellStarted = true;
    }
  }
  if (quoted) throw std::runtime_error(where + ": unterminated quote at line " + std::to_string(line));
  if (cellStarted || !row.empty()) endRow();
  if (out.columns.empty()) throw std::runtime_error(where + ": no header line");
  return out;
}

CsvText readCsv(const std::string& path, std::size_t maxBytes) {
  // A run's directory may come from someone else (fpdp plot DIR reads it): only a regular file of bounded size is
  // read, and its type is checked before it is opened. A FIFO in its place blocked the reader for good, /dev/zero grew
  // it until the allocation failed, a sparse 10 GB file took the plots to 6.2 GB.
  std::string text;
  try {
    text = models::readInputFile(path, maxBytes);
  } catch (const models::InputFileError& e) {
    throw std::runtime_error("cannot read '" + path + "': " + e.what());
  }
  return parseCsv(text, path);
}

bool parseCsvNumber(const std::string& cell, double& value) {
  if (cell.empty() || cell == "nan") {
    value = std::nan("");
    return true;
  }
  if (cell == "inf" || cell == "-inf") {
    value = cell == "inf" ? HUGE_VAL : -HUGE_VAL;
    return true;
  }
  char* end = nullptr;
  errno = 0;
  value = std::strtod(cell.c_str(), &end);
  return end == cell.c_str() + cell.size() && end != cell.c_str();
}

}  // namespace fpdp::io
