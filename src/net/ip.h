// Address math: strong types for IP addresses, prefixes and inclusive ranges, with 128-bit
// arithmetic so that an IPv6 /64 (2^64 addresses) is counted, compared and printed exactly.
// Pure: no I/O, no allocation beyond strings.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace pylon::net {

__extension__ using Uint128 = unsigned __int128;

// Decimal text of a 128-bit count (e.g. "18446744073709551616" for a /64).
std::string ToDecimal(Uint128 value);
// Parses a decimal count; fails on anything but digits or on overflow.
Result<Uint128> ParseDecimal(std::string_view text);

enum class Family : std::uint8_t { kV4 = 4, kV6 = 6 };

// "IPv4" / "IPv6", as Kubernetes spells ipFamilies.
std::string_view FamilyName(Family f);
Result<Family> ParseFamilyName(std::string_view name);
constexpr int FamilyBits(Family f) { return f == Family::kV4 ? 32 : 128; }
constexpr Uint128 FamilyMax(Family f) {
  return f == Family::kV4 ? Uint128{0xffffffffu} : ~Uint128{0};
}

class IpAddress {
 public:
  IpAddress() = default;
  // Parses dotted-quad IPv4 (no leading zeros) or RFC 4291 IPv6 text. No zone, no prefix.
  static Result<IpAddress> Parse(std::string_view text);
  static IpAddress FromValue(Family family, Uint128 value);
  static IpAddress V4(std::uint32_t host_order) { return FromValue(Family::kV4, host_order); }
  // bytes: 4 (IPv4) or 16 (IPv6) bytes in network order.
  static IpAddress FromBytes(Family family, const std::uint8_t* bytes);

  Family family() const { return family_; }
  bool is_v4() const { return family_ == Family::kV4; }
  bool is_v6() const { return family_ == Family::kV6; }
  Uint128 value() const { return value_; }
  // Network-order bytes; only the first 4 are meaningful for IPv4.
  std::array<std::uint8_t, 16> bytes() const;
  // Canonical text: dotted quad, or RFC 5952 for IPv6.
  std::string ToString() const;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
  friend std::strong_ordering operator<=>(const IpAddress& a, const IpAddress& b) {
    if (auto c = a.family_ <=> b.family_; std::is_neq(c)) return c;
    return a.value_ == b.value_  ? std::strong_ordering::equal
           : a.value_ < b.value_ ? std::strong_ordering::less
                                 : std::strong_ordering::greater;
  }

 private:
  IpAddress(Family f, Uint128 v) : family_(f), value_(v) {}
  Family family_ = Family::kV4;
  Uint128 value_ = 0;
};

class Prefix {
 public:
  Prefix() = default;
  // "addr/len". The address is kept as written (host bits may be set; see HasHostBits()).
  static Result<Prefix> Parse(std::string_view text);
  static Result<Prefix> Make(IpAddress address, int length);

  const IpAddress& address() const { return address_; }
  int length() const { return length_; }
  Family family() const { return address_.family(); }
  IpAddress Network() const;    // host bits cleared
  IpAddress Broadcast() const;  // host bits set (last address)
  bool HasHostBits() const { return address_ != Network(); }
  Prefix Masked() const { return Prefix(Network(), length_); }
  bool Contains(const IpAddress& a) const;
  bool Contains(const Prefix& p) const;
  // Number of addresses, saturated at 2^128-1 for an IPv6 /0.
  Uint128 Size() const;
  std::string ToString() const;  // "<address as written>/<len>"

  friend bool operator==(const Prefix&, const Prefix&) = default;

 private:
  Prefix(IpAddress a, int len) : address_(a), length_(len) {}
  IpAddress address_;
  int length_ = 0;
};

// An inclusive range [first, last] of one family; first <= last always holds.
class AddressRange {
 public:
  AddressRange() = default;
  static Result<AddressRange> Make(IpAddress first, IpAddress last);
  // "a-b" (spaces around '-' allowed) or a single address.
  static Result<AddressRange> Parse(std::string_view text);
  // The whole prefix, network to broadcast.
  static AddressRange FromPrefix(const Prefix& p);

  const IpAddress& first() const { return first_; }
  const IpAddress& last() const { return last_; }
  Family family() const { return first_.family(); }
  bool Contains(const IpAddress& a) const {
    return a.family() == family() && first_ <= a && a <= last_;
  }
  bool Contains(const AddressRange& r) const {
    return r.family() == family() && first_ <= r.first_ && r.last_ <= last_;
  }
  bool Overlaps(const AddressRange& r) const {
    return r.family() == family() && first_ <= r.last_ && r.first_ <= last_;
  }
  // Number of addresses, saturated at 2^128-1 for the whole IPv6 space.
  Uint128 Size() const;
  std::string ToString() const;  // "a-b", or "a" for a single address

  friend bool operator==(const AddressRange&, const AddressRange&) = default;

 private:
  AddressRange(IpAddress f, IpAddress l) : first_(f), last_(l) {}
  IpAddress first_;
  IpAddress last_;
};

}  // namespace pylon::net

template <>
struct std::hash<pylon::net::IpAddress> {
  std::size_t operator()(const pylon::net::IpAddress& a) const noexcept {
    auto v = a.value();
    auto lo = static_cast<std::uint64_t>(v);
    auto hi = static_cast<std::uint64_t>(v >> 64);
    return std::hash<std::uint64_t>{}(lo ^ (hi * 0x9e3779b97f4a7c15ULL) ^
                                      static_cast<std::uint64_t>(a.family()));
  }
};
