#pragma once
// SHA-256 content hashes (OpenSSL's libcrypto, which uses the processor's SHA instructions where it has them: about
// 1.5 GB/s on the development machines), for what a restart must prove unchanged (docs/output.md, "Checkpoint and
// restart"): the data file, the case, and every file the interrupted run wrote. A running hash can be copied, so
// that a file which only grows (a table) is hashed once in all, not once per checkpoint.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace fpdp::io {

class Sha256 {
public:
  Sha256();
  Sha256(const Sha256& other);
  Sha256& operator=(const Sha256& other);
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  ~Sha256();

  void update(const void* bytes, std::size_t n);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  /// The digest of everything so far as 64 lower-case hex digits; the hash itself goes on (a copy is finished).
  std::string hex() const;
  /// How many bytes it has seen.
  std::uint64_t bytes() const { return bytes_; }

private:
  struct State;
  std::unique_ptr<State> state_;
  std::uint64_t bytes_ = 0;
};

/// The SHA-256 of `bytes` as hex.
std::string sha256Hex(std::string_view bytes);

/// Continues `hash` with the bytes of the file `path` from hash.bytes() up to `size` (the file's first `size` bytes
/// in all); throws std::runtime_error naming the file when it cannot be read or is shorter. Reads a regular file only,
/// without following a link in its name.
void hashFilePrefix(const std::filesystem::path& path, std::uint64_t size, Sha256& hash);

}  // namespace fpdp::io
