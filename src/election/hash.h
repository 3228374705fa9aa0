// The election hash: SHA-256 of `node + "#" + address`, the address in canonical text (dotted quad
// or RFC 5952). A lower digest (compared as big-endian bytes) ranks first.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace pylon::election {

using Digest = std::array<std::uint8_t, 32>;

// The first 8 digest bytes as a big-endian integer: orders exactly like the digest unless two
// digests share their first 64 bits, in which case the full digests decide.
inline std::uint64_t DigestRank(const Digest& d) {
  std::uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r = (r << 8) | d[static_cast<std::size_t>(i)];
  return r;
}

std::string DigestHex(const Digest& d);

// Computes election digests. Not thread-safe (holds a reusable context); one per Elector.
// An interface so tests can force hash ties, which SHA-256 never produces.
class ElectionHasher {
 public:
  virtual ~ElectionHasher() = default;
  virtual Digest Hash(std::string_view node, std::string_view address) = 0;
};

// SHA-256 through OpenSSL's EVP interface, with one digest context reused across calls.
class Sha256Hasher final : public ElectionHasher {
 public:
  // Fails (kUnsupported) only if libcrypto offers no SHA-256 (e.g. a broken provider config).
  static Result<std::unique_ptr<Sha256Hasher>> Create();
  ~Sha256Hasher() override;
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  Digest Hash(std::string_view node, std::string_view address) override;

 private:
  struct Impl;
  explicit Sha256Hasher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One-shot convenience (creates a context per call; fine for tests and tools, slow in loops).
Result<Digest> ElectionDigest(std::string_view node, std::string_view address);

}  // namespace pylon::election
