// The shared heartbeat key(s) and the MAC computed with them.
//
// Key file (`--heartbeat-key-file`, typically a mounted Secret): text, one key per line. Blank
// lines and lines starting with '#' are ignored; a trailing "\r" is stripped. Each key is the
// line's bytes as written (e.g. the output of `openssl rand -base64 32`), at least kMinKeyBytes
// and at most kMaxKeyBytes long; at most kMaxKeys keys. The FIRST key signs outgoing heartbeats;
// every key is accepted on receipt. That is how the key is rotated without a flag day:
//   1. add the new key as the second line, roll the DaemonSet (everyone accepts both);
//   2. move it to the first line, roll (everyone signs with the new key);
//   3. remove the old line, roll.
// Pure apart from LoadKeyRingFile; holds the secret in memory, never logs it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace pylon::heartbeat {

inline constexpr std::size_t kMinKeyBytes = 16;
inline constexpr std::size_t kMaxKeyBytes = 1024;
inline constexpr std::size_t kMaxKeys = 8;

using Mac = std::array<std::uint8_t, 16>;

class KeyRing {
 public:
  // Fails (kInvalidArgument) when there is no key, more than kMaxKeys, or a key of a bad length.
  static Result<KeyRing> Create(std::vector<std::string> keys);
  // Parses the key-file format above; `origin` names the file in error messages.
  static Result<KeyRing> Parse(std::string_view text, std::string_view origin = "key file");

  std::size_t size() const { return keys_.size(); }

  // HMAC-SHA256 of `data` with key `index` (0 = the signing key), truncated to 16 bytes.
  Mac Compute(std::span<const std::uint8_t> data, std::size_t index = 0) const;
  // Whether `mac` is the MAC of `data` under any key (constant-time per key).
  bool Verify(std::span<const std::uint8_t> data, std::span<const std::uint8_t> mac) const;

 private:
  explicit KeyRing(std::vector<std::string> keys) : keys_(std::move(keys)) {}
  std::vector<std::string> keys_;
};

// Reads and parses a key file (at most 64 KiB). kNotFound if it does not exist.
Result<KeyRing> LoadKeyRingFile(const std::string& path);

}  // namespace pylon::heartbeat
