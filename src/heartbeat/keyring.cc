#include "heartbeat/keyring.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cerrno>
#include <cstdio>

namespace pylon::heartbeat {

Result<KeyRing> KeyRing::Create(std::vector<std::string> keys) {
  if (keys.empty()) return Fail(ErrorCode::kInvalidArgument, "no heartbeat key");
  if (keys.size() > kMaxKeys) {
    return Fail(ErrorCode::kInvalidArgument, "more than " + std::to_string(kMaxKeys) +
                                                 " heartbeat keys (" + std::to_string(keys.size()) +
                                                 ")");
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::size_t n = keys[i].size();
    if (n < kMinKeyBytes || n > kMaxKeyBytes) {
      return Fail(ErrorCode::kInvalidArgument,
                  "heartbeat key " + std::to_string(i + 1) + " is " + std::to_string(n) +
                      " bytes; it must be " + std::to_string(kMinKeyBytes) + ".." +
                      std::to_string(kMaxKeyBytes) + " (e.g. `openssl rand -base64 32`)");
    }
  }
  return KeyRing(std::move(keys));
}

Result<KeyRing> KeyRing::Parse(std::string_view text, std::string_view origin) {
  std::vector<std::string> keys;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    keys.emplace_back(line);
  }
  auto ring = Create(std::move(keys));
  if (!ring) return Fail(ring.error().Wrap(std::string(origin)));
  return ring;
}

Mac KeyRing::Compute(std::span<const std::uint8_t> data, std::size_t index) const {
  const std::string& k = keys_.at(index);
  unsigned char full[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), k.data(), static_cast<int>(k.size()), data.data(), data.size(), full, &len);
  Mac out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = full[i];
  OPENSSL_cleanse(full, sizeof(full));
  return out;
}

bool KeyRing::Verify(std::span<const std::uint8_t> data, std::span<const std::uint8_t> mac) const {
  if (mac.size() != sizeof(Mac)) return false;
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    Mac expected = Compute(data, i);
    if (CRYPTO_memcmp(expected.data(), mac.data(), expected.size()) == 0) return true;
  }
  return false;
}

Result<KeyRing> LoadKeyRingFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    Error e = Error::FromErrno(err, "heartbeat key file " + path);
    if (err == ENOENT) return Fail(ErrorCode::kNotFound, e.message());
    return Fail(e);
  }
  constexpr std::size_t kMaxFile = 64 * 1024;
  std::string text(kMaxFile + 1, '\0');
  const std::size_t n = std::fread(text.data(), 1, text.size(), f);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Fail(ErrorCode::kSystem, "heartbeat key file " + path + ": read error");
  if (n > kMaxFile) {
    return Fail(ErrorCode::kInvalidArgument, "heartbeat key file " + path + " exceeds 64 KiB");
  }
  text.resize(n);
  auto ring = KeyRing::Parse(text, "heartbeat key file " + path);
  OPENSSL_cleanse(text.data(), text.size());
  return ring;
}

}  // namespace pylon::heartbeat
