#include "election/hash.h"

#include <openssl/evp.h>

#include <cstdlib>

namespace pylon::election {

std::string DigestHex(const Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(d.size() * 2);
  for (std::uint8_t b : d) {
    out += kHex[b >> 4];
    out += kHex[b & 0x0f];
  }
  return out;
}

struct Sha256Hasher::Impl {
  EVP_MD* md = nullptr;
  EVP_MD_CTX* ctx = nullptr;
  std::string message;  // reused: one digest update per call, no allocation once warm
  ~Impl() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
};

Sha256Hasher::Sha256Hasher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sha256Hasher::~Sha256Hasher() = default;

Result<std::unique_ptr<Sha256Hasher>> Sha256Hasher::Create() {
  auto impl = std::make_unique<Impl>();
  impl->md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  impl->ctx = EVP_MD_CTX_new();
  if (impl->md == nullptr || impl->ctx == nullptr) {
    return Fail(ErrorCode::kUnsupported, "libcrypto provides no SHA-256 digest");
  }
  return std::unique_ptr<Sha256Hasher>(new Sha256Hasher(std::move(impl)));
}

Digest Sha256Hasher::Hash(std::string_view node, std::string_view address) {
  Digest out{};
  unsigned int len = 0;
  impl_->message.assign(node);
  impl_->message += '#';
  impl_->message.append(address);
  // With a fetched SHA-256 and a live context these calls cannot fail short of memory corruption.
  const bool ok = EVP_DigestInit_ex2(impl_->ctx, impl_->md, nullptr) == 1 &&
                  EVP_DigestUpdate(impl_->ctx, impl_->message.data(), impl_->message.size()) == 1 &&
                  EVP_DigestFinal_ex(impl_->ctx, out.data(), &len) == 1 && len == out.size();
  if (!ok) std::abort();
  return out;
}

Result<Digest> ElectionDigest(std::string_view node, std::string_view address) {
  auto hasher = Sha256Hasher::Create();
  if (!hasher) return Fail(hasher.error());
  return (*hasher)->Hash(node, address);
}

}  // namespace pylon::election
