#pragma once
// Training data: records x_i in R^d (d = parameter dimension) with an optional label y_i in {-1, +1}
// (used by classification losses), and the neighbouring dataset D' (MATH.md §1).
#include <Eigen/Dense>

#include <stdexcept>
#include <string>
#include <vector>

namespace fpdp::models {

using Vector = Eigen::VectorXd;
using Matrix = Eigen::MatrixXd;

struct Record {
  Vector x;
  double y = 1.0;  // label; ignored by losses that do not use one
};

class Dataset {
public:
  Dataset() = default;
  explicit Dataset(std::vector<Record> records);

  std::size_t size() const { return records_.size(); }
  int dim() const { return records_.empty() ? 0 : static_cast<int>(records_.front().x.size()); }
  const Record& operator[](std::size_t i) const { return records_[i]; }
  const std::vector<Record>& records() const { return records_; }
  Vector mean() const;

private:
  std::vector<Record> records_;
};

/// How D' differs from D. Issue 2 supports the replacement of one record (MATH.md §1).
struct Neighbour {
  std::size_t index = 0;  // 0-based index of the replaced record
  Record replacement;
  Dataset apply(const Dataset& d) const;
};

/// Thrown for unreadable or malformed data files; message names the file, line and column.
struct DataFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads a CSV file of records: one record per line, dim comma-separated numbers, then the label
/// if withLabels. Blank lines and lines starting with '#' are skipped; a first line that does not parse
/// as numbers is taken as a header. Every other malformed line is an error naming file:line.
Dataset readCsvDataset(const std::string& path, int dim, bool withLabels);

}  // namespace fpdp::models
