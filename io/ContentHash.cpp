#include "io/ContentHash.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace fpdp::io {

struct Sha256::State {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  State() {
    if (!context || EVP_DigestInit_ex(context, EVP_sha256(), nullptr) != 1)
      throw std::runtime_error("SHA-256: cannot initialise OpenSSL's digest");
  }
  State(const State& other) {
    if (!context || EVP_MD_CTX_copy_ex(context, other.context) != 1)
      throw std::runtime_error("SHA-256: cannot copy a digest");
  }
  State& operator=(const State&) = delete;
  ~State() { EVP_MD_CTX_free(context); }
};

Sha256::Sha256() : state_(std::make_unique<State>()) {}
Sha256::Sha256(const Sha256& other) : state_(std::make_unique<State>(*other.state_)), bytes_(other.bytes_) {}
Sha256& Sha256::operator=(const Sha256& other) {
  if (this != &other) {
    state_ = std::make_unique<State>(*other.state_);
    bytes_ = other.bytes_;
  }
  return *this;
}
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;
Sha256::~Sha256() = default;

void Sha256::update(const void* bytes, std::size_t n) {
  if (n == 0) return;
  if (EVP_DigestUpdate(state_->context, bytes, n) != 1) throw std::runtime_error("SHA-256: digest update failed");
  bytes_ += n;
}

std::string Sha256::hex() const {
  State copy(*state_);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(copy.context, digest, &length) != 1) throw std::runtime_error("SHA-256: digest failed");
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += digits[digest[i] >> 4];
    out += digits[digest[i] & 15];
  }
  return out;
}

std::string sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex();
}

void hashFilePrefix(const std::filesystem::path& path, std::uint64_t size, Sha256& hash) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot read '" + path.string() + "': " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw std::runtime_error("cannot read '" + path.string() + "': not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) < size)
    throw std::runtime_error("'" + path.string() + "' has " + std::to_string(st.st_size) + " bytes, fewer than " +
                             std::to_string(size));
  std::vector<char> buffer(1 << 20);
  std::uint64_t at = hash.bytes();
  while (at < size) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), size - at));
    const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw std::runtime_error("cannot read '" + path.string() + "': " +
                                           (got < 0 ? std::strerror(errno) : "it ended early"));
    hash.update(buffer.data(), static_cast<std::size_t>(got));
    at += static_cast<std::uint64_t>(got);
  }
}

}  // namespace fpdp::io
