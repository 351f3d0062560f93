// Training data D = (x_1..x_n), the neighbouring dataset D' that replaces, adds or removes one record (MATH.md §1),
// and a strict CSV reader for records. Every malformed input is reported with the file, line and field at fault,
// because a silently skipped or misread record changes the dataset whose privacy loss is being computed.
#include "models/Dataset.hpp"

#include "models/InputFile.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>

namespace fpdp::models {

const std::vector<Record>& Dataset::none() {
  static const std::vector<Record> empty;
  return empty;
}

Dataset::Dataset(std::vector<Record> records)
    : records_(std::make_shared<const std::vector<Record>>(std::move(records))) {
  const std::vector<Record>& all = *records_;
  if (all.empty()) return;
  const Eigen::Index dimension = all.front().x.size();
  if (dimension == 0) throw std::invalid_argument("Dataset: records must have at least one coordinate");
  for (std::size_t i = 1; i < all.size(); ++i) {
    if (all[i].x.size() != dimension) {
      throw std::invalid_argument("Dataset: record " + std::to_string(i) + " has dimension " +
                                  std::to_string(all[i].x.size()) + " but record 0 has dimension " +
                                  std::to_string(dimension));
    }
  }
}

Vector Dataset::mean() const {
  if (records().empty()) throw std::invalid_argument("Dataset::mean: the dataset is empty");
  Vector sum = Vector::Zero(dim());
  for (const Record& r : records()) sum += r.x;
  return sum / static_cast<double>(records().size());
}

std::string toString(NeighbourKind kind) {
  switch (kind) {
    case NeighbourKind::Replace:
      return "replace";
    case NeighbourKind::Add:
      return "add";
    case NeighbourKind::Remove:
      return "remove";
  }
  return "unknown";
}

Dataset Neighbour::apply(const Dataset& d) const {
  if (d.size() == 0) throw std::invalid_argument("Neighbour: the dataset D is empty");
  const bool indexed = kind == NeighbourKind::Replace || kind == NeighbourKind::Remove;
  if (indexed && index >= d.size()) {
    throw std::out_of_range("Neighbour: cannot " + toString(kind) + " record " + std::to_string(index) +
                            " (0-based): the dataset has " + std::to_string(d.size()) + " records");
  }
  const bool addsARecord = kind == NeighbourKind::Replace || kind == NeighbourKind::Add;
  if (addsARecord && replacement.x.size() != d.dim()) {
    throw std::invalid_argument("Neighbour: the " + std::string(kind == NeighbourKind::Add ? "added" : "replacement") +
                                " record has dimension " + std::to_string(replacement.x.size()) +
                                " but the dataset has dimension " + std::to_string(d.dim()));
  }
  if (kind == NeighbourKind::Remove && d.size() < 2) {
    throw std::invalid_argument("Neighbour: cannot remove record " + std::to_string(index) +
                                " from a dataset of 1 record (D' would be empty; remove needs n >= 2)");
  }
  // D' made at its final size, record by record (no copy that grows or shifts: 10^7 records are 0.5 GB).
  std::vector<Record> records;
  records.reserve(kind == NeighbourKind::Add ? d.size() + 1 : d.size());
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (indexed && i == index) {
      if (kind == NeighbourKind::Replace) records.push_back(replacement);
      continue;
    }
    records.push_back(d[i]);
  }
  if (kind == NeighbourKind::Add) records.push_back(replacement);
  return Dataset(std::move(records));
}

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

std::vector<std::string_view> splitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

enum class NumberStatus { Ok, NotANumber, NotFinite, OutOfRange };

// Strict parse: the whole field must be one decimal number (an optional leading '+' is accepted so that labels can be
// written "+1"); "nan", "inf" and values overflowing a double are rejected because they cannot be data.
NumberStatus parseNumber(std::string_view field, double& value) {
  if (field.size() > 1 && field.front() == '+' && field[1] != '-' && field[1] != '+') field.remove_prefix(1);
  if (field.empty()) return NumberStatus::NotANumber;
  const char* end = field.data() + field.size();
  const auto [ptr, ec] = std::from_chars(field.data(), end, value, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) return NumberStatus::OutOfRange;
  if (ec != std::errc() || ptr != end) return NumberStatus::NotANumber;
  if (!std::isfinite(value)) return NumberStatus::NotFinite;
  return NumberStatus::Ok;
}

std::string expectedFieldsDescription(int dim, bool withLabels) {
  const int count = dim + (withLabels ? 1 : 0);
  std::string s = std::to_string(count) + (count == 1 ? " number (" : " comma-separated numbers (") + std::to_string(dim) +
                  (dim == 1 ? " feature" : " features");
  if (withLabels) s += " + label";
  return s + ")";
}

}  // namespace

Dataset readCsvDataset(const std::string& path, int dim, bool withLabels) {
  if (dim < 1) throw std::invalid_argument("readCsvDataset: dimension must be at least 1, got " + std::to_string(dim));

  // Only a regular file, only up to the limit (models/InputFile.hpp): a FIFO or /dev/zero would never end.
  std::string text;
  try {
    text = readInputFile(path, kMaxDataFileBytes);
  } catch (const InputFileError& e) {
    throw DataFileError("cannot read data file '" + path + "': " + e.what());
  }
  return parseCsvDataset(std::move(text), path, dim, withLabels);
}

Dataset parseCsvDataset(std::string text, const std::string& path, int dim, bool withLabels) {
  if (dim < 1) throw std::invalid_argument("parseCsvDataset: dimension must be at least 1, got " + std::to_string(dim));
  // A UTF-8 byte-order mark, which spreadsheet programs put before a CSV export: not part of the first field (it
  // was reported as "expected a number, got '0.1'", the mark invisible).
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);

  const std::size_t expectedCount = static_cast<std::size_t>(dim) + (withLabels ? 1 : 0);
  std::vector<Record> records;
  // At most one record a line: reserved once (a vector that doubles held 1.5 times the records' size while it grew).
  records.reserve(std::min<std::size_t>(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1,
                                        kMaxRecords));
  bool sawContentLine = false;  // the header may only be the first line that is neither blank nor a comment
  std::size_t lineStart = 0;
  for (std::size_t lineNumber = 1; lineStart < text.size(); ++lineNumber) {
    std::size_t lineEnd = text.find('\n', lineStart);
    if (lineEnd == std::string::npos) lineEnd = text.size();
    std::string_view line(text.data() + lineStart, lineEnd - lineStart);
    lineStart = lineEnd + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // files written on Windows
    const std::string_view content = trim(line);
    if (content.empty() || content.front() == '#') continue;

    const std::string where = path + ":" + std::to_string(lineNumber) + ": ";
    const std::vector<std::string_view> fields = splitFields(content);
    std::vector<double> values(fields.size());
    std::vector<NumberStatus> status(fields.size());
    bool anyNumber = false;
    for (std::size_t k = 0; k < fields.size(); ++k) {
      status[k] = parseNumber(fields[k], values[k]);
      anyNumber = anyNumber || status[k] != NumberStatus::NotANumber;
    }

    const bool firstContentLine = !sawContentLine;
    sawContentLine = true;
    // A header is a first line with no numeric field at all; a first line that mixes numbers and words is far more
    // likely a damaged record than a header, so it is reported instead of being skipped.
    if (firstContentLine && !anyNumber) continue;

    if (fields.size() != expectedCount) {
      throw DataFileError(where + "expected " + expectedFieldsDescription(dim, withLabels) + ", got " +
                          std::to_string(fields.size()));
    }
    for (std::size_t k = 0; k < fields.size(); ++k) {
      const std::string fieldName = "field " + std::to_string(k + 1) + (k == static_cast<std::size_t>(dim) ? " (label)" : "");
      std::string got = "'";  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "'" + std::string(...)
      got.append(fields[k]).append("'");
      switch (status[k]) {
        case NumberStatus::Ok:
          break;
        case NumberStatus::NotANumber:
          throw DataFileError(where + fieldName + ": expected a number, got " +
                              (fields[k].empty() ? std::string("an empty field") : got));
        case NumberStatus::NotFinite:
          throw DataFileError(where + fieldName + ": expected a finite number, got " + got);
        case NumberStatus::OutOfRange:
          throw DataFileError(where + fieldName + ": number out of the range of a double: " + got);
      }
    }

    Record record;
    record.x = Eigen::Map<const Vector>(values.data(), dim);
    if (withLabels) {
      const double label = values[static_cast<std::size_t>(dim)];
      if (label != 1.0 && label != -1.0) {
        throw DataFileError(where + "field " + std::to_string(dim + 1) + " (label): expected -1 or +1, got '" +
                            std::string(fields[static_cast<std::size_t>(dim)]) + "'");
      }
      record.y = label;
    }
    if (records.size() == kMaxRecords)
      throw DataFileError(where + "more than " + std::to_string(kMaxRecords) + " records, the most a dataset may have");
    records.push_back(std::move(record));
  }
  if (records.empty()) throw DataFileError("data file '" + path + "' contains no records");
  return Dataset(std::move(records));
}

}  // namespace fpdp::models
