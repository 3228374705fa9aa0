// Ethernet MAC addresses. Pure.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"

namespace pylon::net {

class MacAddress {
 public:
  MacAddress() = default;  // 00:00:00:00:00:00
  explicit constexpr MacAddress(std::array<std::uint8_t, 6> b) : bytes_(b) {}
  // "aa:bb:cc:dd:ee:ff" (case-insensitive, two hex digits per octet).
  static Result<MacAddress> Parse(std::string_view text);
  // Exactly 6 bytes (IFLA_ADDRESS of an Ethernet link).
  static Result<MacAddress> FromBytes(std::span<const std::uint8_t> bytes);
  static constexpr MacAddress Broadcast() {
    return MacAddress({0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  }

  const std::array<std::uint8_t, 6>& bytes() const { return bytes_; }
  bool is_zero() const;
  bool is_multicast() const { return (bytes_[0] & 1) != 0; }
  std::string ToString() const;  // lower-case "aa:bb:cc:dd:ee:ff"

  friend auto operator<=>(const MacAddress&, const MacAddress&) = default;

 private:
  std::array<std::uint8_t, 6> bytes_{};
};

}  // namespace pylon::net
