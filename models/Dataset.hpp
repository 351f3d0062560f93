#pragma once
// Training data: records x_i in R^d (d = parameter dimension) with an optional label y_i in {-1, +1}
// (used by classification losses), and the neighbouring dataset D' (MATH.md §1).
#include <Eigen/Dense>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fpdp::models {

using Vector = Eigen::VectorXd;
using Matrix = Eigen::MatrixXd;

struct Record {
  Vector x;
  double y = 1.0;  // label; ignored by losses that do not use one
};

/// Immutable once made: copies share the records (a case of 10^7 records is copied for each companion solve of the
/// error estimate, and each copy held the records again: 0.6 GB apiece).
class Dataset {
public:
  Dataset() = default;
  explicit Dataset(std::vector<Record> records);

  std::size_t size() const { return records().size(); }
  int dim() const { return records().empty() ? 0 : static_cast<int>(records().front().x.size()); }
  const Record& operator[](std::size_t i) const { return records()[i]; }
  const std::vector<Record>& records() const { return records_ ? *records_ : none(); }
  Vector mean() const;

private:
  static const std::vector<Record>& none();
  std::shared_ptr<const std::vector<Record>> records_;
};

/// How D' differs from D (MATH.md §1): Replace record `index` by `replacement` (the bounded, "replace-one" relation
/// the bounds of MATH.md §5 are stated for), Add `replacement` at the end, or Remove record `index` (the unbounded,
/// add/remove relation). D' then has n, n + 1 or n - 1 records.
enum class NeighbourKind { Replace, Add, Remove };

/// "replace", "add" or "remove".
std::string toString(NeighbourKind kind);

/// `Neighbour{index, record}` (aggregate initialisation) is a replacement, as before the kinds existed.
struct Neighbour {
  std::size_t index = 0;  // Replace, Remove: 0-based index of the replaced / removed record; ignored by Add
  Record replacement;     // Replace: the new record; Add: the appended record; ignored by Remove
  NeighbourKind kind = NeighbourKind::Replace;

  /// D' from D. Throws std::out_of_range if index >= n (Replace, Remove), std::invalid_argument if D is empty, the
  /// new record has the wrong dimension (Replace, Add), or Remove would leave D' empty (n = 1).
  Dataset apply(const Dataset& d) const;

  static Neighbour replace(std::size_t index, Record record) { return {index, std::move(record), NeighbourKind::Replace}; }
  static Neighbour add(Record record) { return {0, std::move(record), NeighbourKind::Add}; }
  static Neighbour remove(std::size_t index) { return {index, Record{}, NeighbourKind::Remove}; }
};

/// The most records a dataset may have (data.count, a data file's records): the records live in memory through the
/// run, about 80 B each in 3-D, and every gradient evaluation sums over them.
inline constexpr std::size_t kMaxRecords = 10'000'000;

/// Thrown for unreadable or malformed data files; message names the file, line and column.
struct DataFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads a CSV file of records: one record per line, dim comma-separated numbers, then the label
/// if withLabels. Blank lines and lines starting with '#' are skipped; a first line that does not parse
/// as numbers is taken as a header. Every other malformed line is an error naming file:line. Only a regular file
/// of at most kMaxDataFileBytes (models/InputFile.hpp) with at most kMaxRecords records is read.
Dataset readCsvDataset(const std::string& path, int dim, bool withLabels);
/// The parsing of readCsvDataset, of a file's content already read (`path` names it in messages): for a reader that
/// keeps the bytes it parsed, to prove later that the file has not changed.
Dataset parseCsvDataset(std::string text, const std::string& path, int dim, bool withLabels);

}  // namespace fpdp::models
