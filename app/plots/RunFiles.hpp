#pragma once
// What the plots of a run read from its output directory (docs/output.md): the CSV tables as numeric columns and,
// from fpdp.h5, the fields p and q at up to four output steps with the mesh's cell faces.
#include <map>
#include <string>
#include <vector>

namespace fpdp::app::plots {

/// A CSV table by column name; empty cells and text cells are NaN. Empty when the file does not exist.
struct Table {
  std::string file;  // its name, for messages
  std::vector<std::string> header;
  std::map<std::string, std::vector<double>> columns;
  bool empty() const { return columns.empty(); }
  bool has(const std::string& name) const { return columns.count(name) != 0; }
  /// The column `name`; throws std::runtime_error naming the file and the column when there is none.
  const std::vector<double>& operator[](const std::string& name) const;
  std::size_t rows() const { return columns.empty() ? 0 : columns.begin()->second.size(); }
};

/// Reads DIR/name; throws std::runtime_error naming the file when it is missing (and `required`) or malformed.
Table readTable(const std::string& dir, const std::string& name, bool required);

struct RunFiles {
  std::string dir;
  Table divergence, exact, accuracy, bounds, epsilon, tracing;
  std::vector<std::string> orders;  // the Rényi orders of divergence.csv ("2", "10", ...)
  std::map<int, std::string> boundNames;  // bound_applicability.csv: item -> name
  bool noisyGd = false;                   // parameters.toml: dynamics = "noisy_gd" (x is the step), else time
  double privacyDelta = 0;                // parameters.toml: privacy.delta (0 when unknown)
  std::string xColumn() const { return noisyGd ? "step" : "t"; }
  std::string xLabel() const { return noisyGd ? "step K" : "time t"; }
};

/// Every table the figures use (divergence.csv required, the others when present).
RunFiles readRunFiles(const std::string& dir);

struct FieldFrame {
  long step = 0;
  double time = 0;
  std::vector<double> p, q;  // row-major, x fastest (1-D: nx; 2-D and 3-D: ny x nx, in 3-D the layer zLayer)
};

struct Fields {
  int dim = 0;
  std::vector<std::vector<double>> faces;  // per axis
  std::size_t zLayer = 0;                  // 3-D: the cell layer in z read (nz/2, the mid-plane)
  std::vector<FieldFrame> frames;          // empty: the run wrote no fields
};

/// Up to `count` output steps of /fields in DIR/fpdp.h5 (in 3-D the mid-plane layer only), evenly spread, always
/// the first and the last; no frames
/// when the file or /fields is missing. Throws std::runtime_error when the file cannot be read.
Fields readFields(const std::string& dir, std::size_t count = 4);

}  // namespace fpdp::app::plots
