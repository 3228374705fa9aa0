#include "heartbeat/wire.h"

#include <algorithm>
#include <string>

namespace pylon::heartbeat {

namespace {

class Writer {
 public:
  explicit Writer(std::size_t reserve) { out_.reserve(reserve); }
  // An unsigned integer, most significant byte first.
  template <typename T>
  void Uint(T v) {
    for (std::size_t i = sizeof(T); i-- > 0;)
      out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void U8(std::uint8_t v) { Uint(v); }
  void U16(std::uint16_t v) { Uint(v); }
  void U32(std::uint32_t v) { Uint(v); }
  void U64(std::uint64_t v) { Uint(v); }
  void Bytes(const std::uint8_t* p, std::size_t n) { out_.insert(out_.end(), p, p + n); }
  std::vector<std::uint8_t>& out() { return out_; }

 private:
  std::vector<std::uint8_t> out_;
};

// Bounds-checked big-endian reader; every read fails softly past the end.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> in) : in_(in) {}
  bool Has(std::size_t n) const { return in_.size() - pos_ >= n; }
  std::size_t remaining() const { return in_.size() - pos_; }
  // An unsigned integer, most significant byte first.
  template <typename T>
  bool Uint(T& v) {
    if (!Has(sizeof(T))) return false;
    std::uint64_t x = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) x = (x << 8) | in_[pos_++];
    v = static_cast<T>(x);
    return true;
  }
  bool U8(std::uint8_t& v) { return Uint(v); }
  bool U16(std::uint16_t& v) { return Uint(v); }
  bool U32(std::uint32_t& v) { return Uint(v); }
  bool U64(std::uint64_t& v) { return Uint(v); }
  bool Span(std::size_t n, std::span<const std::uint8_t>& out) {
    if (!Has(n)) return false;
    out = in_.subspan(pos_, n);
    pos_ += n;
    return true;
  }

 private:
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
};

tl::unexpected<DecodeError> Drop(DropReason r, std::string detail) {
  return tl::unexpected<DecodeError>(DecodeError{r, std::move(detail)});
}

// What sets one kind of datagram apart before its fields: size bounds, magic, version.
struct Envelope {
  std::size_t min_bytes;
  std::size_t max_bytes;
  std::span<const std::uint8_t> magic;
  std::uint8_t version;
  std::string_view kind;  // for the drop's detail
};

// The checks every datagram passes before its fields are read, in this order: size, magic,
// version, MAC. Returns the authenticated body after the magic and the version.
tl::expected<std::span<const std::uint8_t>, DecodeError> Open(
    std::span<const std::uint8_t> datagram, const KeyRing& keys, const Envelope& e) {
  if (datagram.size() < e.min_bytes) {
    return Drop(DropReason::kTooShort, std::to_string(datagram.size()) + " bytes");
  }
  if (datagram.size() > e.max_bytes) {
    return Drop(DropReason::kTooLong, std::to_string(datagram.size()) + " bytes");
  }
  if (!std::equal(e.magic.begin(), e.magic.end(), datagram.begin())) {
    return Drop(DropReason::kBadMagic, "not a " + std::string(e.kind));
  }
  if (datagram[4] != e.version) {
    return Drop(DropReason::kBadVersion,
                std::string(e.kind) + " version " + std::to_string(datagram[4]));
  }
  const auto body = datagram.first(datagram.size() - kMacBytes);
  if (!keys.Verify(body, datagram.last(kMacBytes))) {
    return Drop(DropReason::kBadMac, "authentication failed (wrong key or altered datagram)");
  }
  return body.subspan(5);
}

}  // namespace

const char* DropReasonName(DropReason r) {
  switch (r) {
    case DropReason::kTooShort:
      return "too_short";
    case DropReason::kTooLong:
      return "too_long";
    case DropReason::kBadMagic:
      return "bad_magic";
    case DropReason::kBadVersion:
      return "bad_version";
    case DropReason::kBadMac:
      return "bad_mac";
    case DropReason::kMalformed:
      return "malformed";
    case DropReason::kReplay:
      return "replay";
    case DropReason::kDuplicate:
      return "duplicate";
    case DropReason::kUnknownSender:
      return "unknown_sender";
    case DropReason::kSelf:
      return "self";
  }
  return "unknown";
}

bool ValidWireNodeName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNodeNameBytes) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
  });
}

std::size_t EncodedSize(const Heartbeat& hb) {
  std::size_t n = kFixedBytes + hb.node.str().size();
  for (const auto& a : hb.addresses) n += a.is_v4() ? 4 : 16;
  return n;
}

Result<std::vector<std::uint8_t>> Encode(const Heartbeat& hb, const KeyRing& keys) {
  const std::string& name = hb.node.str();
  if (!ValidWireNodeName(name)) {
    return Fail(ErrorCode::kInvalidArgument,
                "heartbeat node name \"" + name + "\" is not 1..253 characters of [a-z0-9.-]");
  }
  if (hb.interval_ms == 0 || hb.interval_ms > kMaxIntervalMs) {
    return Fail(ErrorCode::kInvalidArgument,
                "heartbeat interval " + std::to_string(hb.interval_ms) + " ms out of 1..60000");
  }
  if (hb.windows == 0 || hb.window >= hb.windows) {
    return Fail(ErrorCode::kInvalidArgument, "heartbeat window " + std::to_string(hb.window) +
                                                 " of " + std::to_string(hb.windows));
  }
  std::size_t v4 = 0, v6 = 0;
  for (const auto& a : hb.addresses) (a.is_v4() ? v4 : v6)++;
  if (v4 > 0xffff || v6 > 0xffff) {
    return Fail(ErrorCode::kInvalidArgument, "more than 65535 addresses of one family");
  }
  const std::size_t size = EncodedSize(hb);
  if (size > kMaxDatagramBytes) {
    return Fail(ErrorCode::kInvalidArgument, "heartbeat of " + std::to_string(size) +
                                                 " bytes exceeds " +
                                                 std::to_string(kMaxDatagramBytes));
  }
  Writer w(size);
  w.Bytes(kMagic, sizeof(kMagic));
  w.U8(kVersion);
  w.U8(hb.flags & flags::kKnown);
  w.U8(static_cast<std::uint8_t>(name.size()));
  w.Bytes(reinterpret_cast<const std::uint8_t*>(name.data()), name.size());
  w.U64(hb.boot_id);
  w.U64(hb.sequence);
  w.U32(hb.interval_ms);
  w.U8(hb.window);
  w.U8(hb.windows);
  w.U16(static_cast<std::uint16_t>(v4));
  for (const auto& a : hb.addresses) {
    if (a.is_v4()) w.Bytes(a.bytes().data(), 4);
  }
  w.U16(static_cast<std::uint16_t>(v6));
  for (const auto& a : hb.addresses) {
    if (a.is_v6()) w.Bytes(a.bytes().data(), 16);
  }
  const Mac mac = keys.Compute(w.out());
  w.Bytes(mac.data(), mac.size());
  return std::move(w.out());
}

tl::expected<Heartbeat, DecodeError> Decode(std::span<const std::uint8_t> datagram,
                                            const KeyRing& keys) {
  auto body =
      Open(datagram, keys, {kMinDatagramBytes, kMaxDatagramBytes, kMagic, kVersion, "heartbeat"});
  if (!body) return tl::unexpected(body.error());

  Reader r(*body);
  Heartbeat hb;
  std::uint8_t name_len = 0;
  std::span<const std::uint8_t> name;
  std::uint16_t n4 = 0, n6 = 0;
  r.U8(hb.flags);  // cannot fail: the size check above covers the fixed part
  hb.flags &= flags::kKnown;
  if (!r.U8(name_len) || name_len == 0 || !r.Span(name_len, name)) {
    return Drop(DropReason::kMalformed, "node name length");
  }
  std::string name_text(name.begin(), name.end());
  if (!ValidWireNodeName(name_text)) return Drop(DropReason::kMalformed, "node name characters");
  hb.node = election::NodeName(std::move(name_text));
  if (!r.U64(hb.boot_id) || !r.U64(hb.sequence) || !r.U32(hb.interval_ms)) {
    return Drop(DropReason::kMalformed, "truncated header");
  }
  if (hb.interval_ms == 0 || hb.interval_ms > kMaxIntervalMs) {
    return Drop(DropReason::kMalformed, "interval " + std::to_string(hb.interval_ms) + " ms");
  }
  if (!r.U8(hb.window) || !r.U8(hb.windows) || hb.windows == 0 || hb.window >= hb.windows) {
    return Drop(DropReason::kMalformed,
                "window " + std::to_string(hb.window) + " of " + std::to_string(hb.windows));
  }
  if (!r.U16(n4) || !r.Has(std::size_t{n4} * 4)) {
    return Drop(DropReason::kMalformed, "IPv4 address count");
  }
  hb.addresses.reserve(n4);
  for (std::uint16_t i = 0; i < n4; ++i) {
    std::span<const std::uint8_t> b;
    r.Span(4, b);
    hb.addresses.push_back(net::IpAddress::FromBytes(net::Family::kV4, b.data()));
  }
  if (!r.U16(n6) || r.remaining() != std::size_t{n6} * 16) {
    return Drop(DropReason::kMalformed, "IPv6 address count does not match the length");
  }
  hb.addresses.reserve(std::size_t{n4} + n6);
  for (std::uint16_t i = 0; i < n6; ++i) {
    std::span<const std::uint8_t> b;
    r.Span(16, b);
    hb.addresses.push_back(net::IpAddress::FromBytes(net::Family::kV6, b.data()));
  }
  return hb;
}

const char* ReportKindName(ReportKind k) {
  switch (k) {
    case ReportKind::kAlive:
      return "alive";
    case ReportKind::kDead:
      return "dead";
    case ReportKind::kUnhealthy:
      return "unhealthy";
    case ReportKind::kLeaving:
      return "leaving";
  }
  return "unknown";
}

bool LooksLikeReport(std::span<const std::uint8_t> datagram) {
  return datagram.size() >= sizeof(kReportMagic) &&
         std::equal(std::begin(kReportMagic), std::end(kReportMagic), datagram.begin());
}

namespace {

void WriteName(Writer& w, const std::string& name) {
  w.U8(static_cast<std::uint8_t>(name.size()));
  w.Bytes(reinterpret_cast<const std::uint8_t*>(name.data()), name.size());
}

bool ReadName(Reader& r, election::NodeName& out) {
  std::uint8_t len = 0;
  std::span<const std::uint8_t> bytes;
  if (!r.U8(len) || len == 0 || !r.Span(len, bytes)) return false;
  std::string text(bytes.begin(), bytes.end());
  if (!ValidWireNodeName(text)) return false;
  out = election::NodeName(std::move(text));
  return true;
}

}  // namespace

Result<std::vector<std::uint8_t>> EncodeReport(const Report& report, const KeyRing& keys) {
  for (const auto* name : {&report.reporter.str(), &report.subject.str()}) {
    if (!ValidWireNodeName(*name)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "report node name \"" + *name + "\" is not 1..253 characters of [a-z0-9.-]");
    }
  }
  Writer w(kReportFixedBytes + report.reporter.str().size() + report.subject.str().size());
  w.Bytes(kReportMagic, sizeof(kReportMagic));
  w.U8(kReportVersion);
  w.U8(static_cast<std::uint8_t>(report.kind));
  WriteName(w, report.reporter.str());
  w.U64(report.reporter_boot);
  w.U64(report.id);
  WriteName(w, report.subject.str());
  w.U64(report.subject_boot);
  w.U64(report.subject_sequence);
  const Mac mac = keys.Compute(w.out());
  w.Bytes(mac.data(), mac.size());
  return std::move(w.out());
}

tl::expected<Report, DecodeError> DecodeReport(std::span<const std::uint8_t> datagram,
                                               const KeyRing& keys) {
  auto body = Open(datagram, keys,
                   {kReportFixedBytes + 2, kReportFixedBytes + 2 * kMaxNodeNameBytes, kReportMagic,
                    kReportVersion, "report"});
  if (!body) return tl::unexpected(body.error());
  Reader r(*body);
  Report rep;
  std::uint8_t kind = 0;
  r.U8(kind);  // cannot fail: the size check above covers the fixed part
  if (kind < 1 || kind > 4) return Drop(DropReason::kMalformed, "report kind");
  rep.kind = static_cast<ReportKind>(kind);
  if (!ReadName(r, rep.reporter)) return Drop(DropReason::kMalformed, "reporter name");
  if (!r.U64(rep.reporter_boot) || !r.U64(rep.id)) {
    return Drop(DropReason::kMalformed, "truncated report");
  }
  if (!ReadName(r, rep.subject)) return Drop(DropReason::kMalformed, "subject name");
  if (!r.U64(rep.subject_boot) || !r.U64(rep.subject_sequence) || r.remaining() != 0) {
    return Drop(DropReason::kMalformed, "report length");
  }
  return rep;
}

}  // namespace pylon::heartbeat
