#pragma once
// The storage of a checkpoint (docs/output.md, "Checkpoint and restart"): a sealed HDF5 file holding named 1-D
// float64 arrays and fixed-length strings, nothing else. app/run/Checkpoint gives the names their meaning.
//
// Integrity is checked before the HDF5 library parses anything: the file begins with a 512-byte HDF5 user block
// (HDF5 readers skip it) holding the seal, one text line
//     FPDP-CHECKPOINT 1 size=<bytes of the file> fnv1a64=<16 hex digits>\n
// whose hash covers every byte after the user block. A truncated, extended or corrupted file, or an HDF5 file that
// fpdp did not write, fails this check with a message naming the file and what was expected; only a file whose
// seal holds is opened with HDF5 (with the library's checksummed 1.10 metadata format as a second line of defence),
// and then every object must be a 1-D float64 array or a scalar fixed-length string whose size the file can hold.
//
// Written to `<path>.tmp`, sealed, fsync'ed and renamed over `<path>`: a reader sees the previous checkpoint or the
// new one, never a partial one (a run killed while writing leaves `<path>.tmp`, which is ignored).
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fpdp::io {

/// A defect of a checkpoint file or of its content; the message names the file and the dataset.
struct CheckpointFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The content of a checkpoint: named arrays and texts, with accessors that check presence and size and throw
/// CheckpointFileError naming the file, the dataset and what was expected.
class CheckpointData {
public:
  std::map<std::string, std::vector<double>> arrays;  // absolute dataset path ("/state/u") -> values
  std::map<std::string, std::string> texts;           // absolute dataset path -> text
  std::string source;                                 // the file it was read from (for messages)

  void put(const std::string& name, std::vector<double> values) { arrays[name] = std::move(values); }
  void putScalar(const std::string& name, double value) { arrays[name] = {value}; }
  void putText(const std::string& name, std::string text) { texts[name] = std::move(text); }
  /// Rows of equal length, stored as <name>/values (row-major) and <name>/columns.
  void putTable(const std::string& name, const std::vector<std::vector<double>>& rows, std::size_t columns);

  bool has(const std::string& name) const { return arrays.count(name) || texts.count(name); }
  /// The array `name`; with `size`, it must hold exactly that many values.
  const std::vector<double>& array(const std::string& name, std::optional<std::size_t> size = std::nullopt) const;
  /// A one-value array whose value is finite.
  double scalar(const std::string& name) const;
  /// A one-value array holding an integer in [lo, hi].
  long integer(const std::string& name, long lo, long hi) const;
  const std::string& text(const std::string& name) const;
  /// A table written by putTable: `columns` columns (if given) and `rows` rows (if given).
  std::vector<std::vector<double>> table(const std::string& name, std::optional<std::size_t> columns,
                                         std::optional<std::size_t> rows) const;
  /// Throws CheckpointFileError "checkpoint '<source>': dataset <name>: <what>".
  [[noreturn]] void fail(const std::string& name, const std::string& what) const;
};

/// Writes `data` to `path` atomically (temporary name, seal, fsync, rename). Serial: one process calls it.
void writeCheckpointFile(const std::string& path, const CheckpointData& data);

/// Reads a sealed checkpoint; throws CheckpointFileError naming the file (and the dataset) on any defect.
CheckpointData readCheckpointFile(const std::string& path);

/// (Re)computes and writes the seal of an HDF5 file that has a 512-byte user block. Used by writeCheckpointFile and
/// by the test corpus's generator, which builds structurally wrong but sealed files.
void sealCheckpointFile(const std::string& path);

/// The 64-bit FNV-1a hash of `n` bytes continuing from `hash` (start with kFnvOffset).
constexpr unsigned long long kFnvOffset = 14695981039346656037ull;
unsigned long long fnv1a64(const unsigned char* bytes, std::size_t n, unsigned long long hash = kFnvOffset);

}  // namespace fpdp::io
