#include "net/ip.h"

#include <arpa/inet.h>

#include <algorithm>

#include "common/text.h"

namespace pylon::net {
namespace {

Uint128 HostMask(Family f, int length) {
  int host_bits = FamilyBits(f) - length;
  if (host_bits <= 0) return 0;
  if (host_bits >= 128) return ~Uint128{0};
  return (Uint128{1} << host_bits) - 1;
}

}  // namespace

std::string ToDecimal(Uint128 value) {
  if (value == 0) return "0";
  std::string out;
  while (value != 0) {
    out.push_back(static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

Result<Uint128> ParseDecimal(std::string_view text) {
  if (text.empty()) return Fail(ErrorCode::kInvalidArgument, "empty number");
  Uint128 v = 0;
  const Uint128 max = ~Uint128{0};
  for (char c : text) {
    if (c < '0' || c > '9') {
      return Fail(ErrorCode::kInvalidArgument, "\"" + std::string(text) + "\" is not a number");
    }
    auto d = static_cast<unsigned>(c - '0');
    if (v > (max - d) / 10) return Fail(ErrorCode::kOutOfRange, "number too large");
    v = v * 10 + d;
  }
  return v;
}

std::string_view FamilyName(Family f) { return f == Family::kV4 ? "IPv4" : "IPv6"; }

Result<Family> ParseFamilyName(std::string_view name) {
  if (name == "IPv4") return Family::kV4;
  if (name == "IPv6") return Family::kV6;
  return Fail(ErrorCode::kInvalidArgument,
              "unknown IP family \"" + std::string(name) + "\" (want IPv4 or IPv6)");
}

Result<IpAddress> IpAddress::Parse(std::string_view text) {
  std::string s(text);
  if (s.empty()) return Fail(ErrorCode::kInvalidArgument, "empty IP address");
  if (s.size() > INET6_ADDRSTRLEN) {
    return Fail(ErrorCode::kInvalidArgument, "\"" + s.substr(0, 64) + "...\" is not an IP address");
  }
  std::uint8_t buf[16];
  if (s.find(':') == std::string::npos) {
    if (inet_pton(AF_INET, s.c_str(), buf) == 1) return FromBytes(Family::kV4, buf);
  } else if (inet_pton(AF_INET6, s.c_str(), buf) == 1) {
    return FromBytes(Family::kV6, buf);
  }
  return Fail(ErrorCode::kInvalidArgument, "\"" + s + "\" is not an IP address");
}

IpAddress IpAddress::FromValue(Family family, Uint128 value) {
  return IpAddress(family, value & FamilyMax(family));
}

IpAddress IpAddress::FromBytes(Family family, const std::uint8_t* bytes) {
  int n = family == Family::kV4 ? 4 : 16;
  Uint128 v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | bytes[i];
  return IpAddress(family, v);
}

std::array<std::uint8_t, 16> IpAddress::bytes() const {
  std::array<std::uint8_t, 16> out{};
  int n = is_v4() ? 4 : 16;
  Uint128 v = value_;
  for (int i = n - 1; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v & 0xff);
    v >>= 8;
  }
  return out;
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN];
  auto b = bytes();
  const char* r = inet_ntop(is_v4() ? AF_INET : AF_INET6, b.data(), buf, sizeof buf);
  return r ? std::string(r) : std::string("?");
}

Result<Prefix> Prefix::Parse(std::string_view text) {
  text = Trim(text);
  auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return Fail(ErrorCode::kInvalidArgument,
                "\"" + std::string(text) + "\" is not a CIDR (missing /length)");
  }
  auto addr = IpAddress::Parse(text.substr(0, slash));
  if (!addr) {
    return Fail(ErrorCode::kInvalidArgument, "\"" + std::string(text) + "\" is not a CIDR");
  }
  auto len_text = text.substr(slash + 1);
  auto len = ParseInteger<int>(len_text);
  if (!len || (len_text.size() > 1 && len_text[0] == '0')) {
    return Fail(ErrorCode::kInvalidArgument,
                "\"" + std::string(text) + "\" has an invalid prefix length");
  }
  return Make(*addr, *len);
}

Result<Prefix> Prefix::Make(IpAddress address, int length) {
  if (length < 0 || length > FamilyBits(address.family())) {
    return Fail(ErrorCode::kInvalidArgument, "prefix length " + std::to_string(length) +
                                                 " is out of range for " +
                                                 std::string(FamilyName(address.family())));
  }
  return Prefix(address, length);
}

IpAddress Prefix::Network() const {
  return IpAddress::FromValue(family(), address_.value() & ~HostMask(family(), length_));
}

IpAddress Prefix::Broadcast() const {
  return IpAddress::FromValue(family(), address_.value() | HostMask(family(), length_));
}

bool Prefix::Contains(const IpAddress& a) const {
  return a.family() == family() && Network() <= a && a <= Broadcast();
}

bool Prefix::Contains(const Prefix& p) const {
  return p.family() == family() && p.length_ >= length_ && Contains(p.address_);
}

Uint128 Prefix::Size() const { return AddressRange::FromPrefix(*this).Size(); }

std::string Prefix::ToString() const { return address_.ToString() + "/" + std::to_string(length_); }

Result<AddressRange> AddressRange::Make(IpAddress first, IpAddress last) {
  if (first.family() != last.family()) {
    return Fail(ErrorCode::kInvalidArgument,
                "range " + first.ToString() + "-" + last.ToString() + " mixes IPv4 and IPv6");
  }
  if (last < first) {
    return Fail(ErrorCode::kInvalidArgument,
                "range " + first.ToString() + "-" + last.ToString() + " has start after end");
  }
  return AddressRange(first, last);
}

Result<AddressRange> AddressRange::Parse(std::string_view text) {
  text = Trim(text);
  // An IPv6 address never contains '-', so the first '-' splits the range.
  auto dash = text.find('-');
  if (dash == std::string_view::npos) {
    auto a = IpAddress::Parse(text);
    if (!a) return Fail(a.error());
    return AddressRange(*a, *a);
  }
  auto first = IpAddress::Parse(Trim(text.substr(0, dash)));
  if (!first) return Fail(first.error().Wrap("range \"" + std::string(text) + "\""));
  auto last = IpAddress::Parse(Trim(text.substr(dash + 1)));
  if (!last) return Fail(last.error().Wrap("range \"" + std::string(text) + "\""));
  return Make(*first, *last);
}

AddressRange AddressRange::FromPrefix(const Prefix& p) {
  return AddressRange(p.Network(), p.Broadcast());
}

Uint128 AddressRange::Size() const {
  Uint128 span = last_.value() - first_.value();
  return span == ~Uint128{0} ? span : span + 1;
}

std::string AddressRange::ToString() const {
  if (first_ == last_) return first_.ToString();
  return first_.ToString() + "-" + last_.ToString();
}

}  // namespace pylon::net
