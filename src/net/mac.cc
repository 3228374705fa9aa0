#include "net/mac.h"

#include <cstdio>

namespace pylon::net {
namespace {
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

Result<MacAddress> MacAddress::Parse(std::string_view text) {
  auto bad = [&] {
    return Fail(ErrorCode::kInvalidArgument, "bad MAC address '" + std::string(text) + "'");
  };
  if (text.size() != 17) return bad();
  std::array<std::uint8_t, 6> b{};
  for (std::size_t i = 0; i < 6; ++i) {
    int hi = HexDigit(text[i * 3]);
    int lo = HexDigit(text[i * 3 + 1]);
    if (hi < 0 || lo < 0 || (i < 5 && text[i * 3 + 2] != ':')) return bad();
    b[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return MacAddress(b);
}

Result<MacAddress> MacAddress::FromBytes(std::span<const std::uint8_t> bytes) {
  if (bytes.size() != 6) {
    return Fail(ErrorCode::kInvalidArgument,
                "hardware address of " + std::to_string(bytes.size()) + " bytes is not Ethernet");
  }
  std::array<std::uint8_t, 6> b{};
  for (std::size_t i = 0; i < 6; ++i) b[i] = bytes[i];
  return MacAddress(b);
}

bool MacAddress::is_zero() const {
  for (auto v : bytes_) {
    if (v != 0) return false;
  }
  return true;
}

std::string MacAddress::ToString() const {
  char buf[18];
  std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", bytes_[0], bytes_[1], bytes_[2],
                bytes_[3], bytes_[4], bytes_[5]);
  return buf;
}

}  // namespace pylon::net
