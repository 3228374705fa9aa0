// The heartbeat datagram: what one agent tells its peers every interval, authenticated with a
// shared key. Pure encode/decode (libcrypto HMAC only): no sockets, no clock.
//
// Layout, all integers big-endian (network order):
//
//   offset  size        field
//   0       4           magic "PYHB" (0x50 0x59 0x48 0x42)
//   4       1           version (1)
//   5       1           flags: bit 0 link-up, bit 1 leaving, bit 2 deaf (hears no peer),
//                       bit 3 not eligible; bits 4-7 are reserved: sent as 0, ignored on receipt
//   6       1           node name length N (1..253)
//   7       N           node name ([a-z0-9.-], the Kubernetes node name)
//   7+N     8           boot id (random, fixed for one agent process)
//   15+N    8           sequence number (1, 2, ... within one boot id)
//   23+N    4           sender's heartbeat interval in milliseconds (1..60000)
//   27+N    1           window index W (0..K-1)
//   28+N    1           window count K (1..255): the sender's address list is split in K windows
//                       that fit in one datagram each; this datagram carries window W
//   29+N    2           number of IPv4 addresses C4, then C4 x 4 bytes
//   ...     2           number of IPv6 addresses C6, then C6 x 16 bytes
//   end-16  16          HMAC-SHA256(key, every byte before it), truncated to 16 bytes
//
// Size: 47 + N + 4*C4 + 16*C6 bytes, at most kMaxDatagramBytes. The length is exact: trailing
// bytes are a format error. Decoding checks, in order: size bounds, magic, version, the MAC
// (constant-time compare), then the fields. Anything that fails is an error with a DropReason and
// never throws or reads out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "election/node_name.h"
#include "heartbeat/keyring.h"
#include "net/ip.h"

namespace pylon::heartbeat {

inline constexpr std::uint8_t kMagic[4] = {'P', 'Y', 'H', 'B'};
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kMacBytes = 16;
inline constexpr std::size_t kMaxNodeNameBytes = 253;
// Fixed part: magic 4 + version 1 + flags 1 + name length 1 + boot id 8 + sequence 8 +
// interval 4 + window index 1 + window count 1 + two counts 2 + 2 + MAC 16 (the name and
// addresses come on top).
inline constexpr std::size_t kFixedBytes = 4 + 1 + 1 + 1 + 8 + 8 + 4 + 1 + 1 + 2 + 2 + kMacBytes;
inline constexpr std::size_t kMinDatagramBytes = kFixedBytes + 1;  // a one-character name
// The largest UDP payload over IPv4; receivers never accept more.
inline constexpr std::size_t kMaxDatagramBytes = 65507;
inline constexpr std::uint32_t kMaxIntervalMs = 60000;

namespace flags {
inline constexpr std::uint8_t kLinkUp = 0x01;   // the sender's announcing link is operational
inline constexpr std::uint8_t kLeaving = 0x02;  // graceful shutdown: treat the sender dead now
// The sender hears no peer: it cannot see a split, so receivers yield conflicting addresses to it
// (see split_brain.h).
inline constexpr std::uint8_t kDeaf = 0x04;
// The sender judged itself unfit to announce (see policy.h JudgeSelf): receivers treat it as dead
// for elections while they keep hearing it.
inline constexpr std::uint8_t kNotEligible = 0x08;
// The sender's agent has just started and has not judged itself yet (no renewal of its lease and
// synced informers since it started): receivers take no verdict from it, its lease decides (see
// detector.h kStarting). Sent with kNotEligible, so that an agent that does not know this flag
// (which Decode drops) reads what it read before this flag existed.
inline constexpr std::uint8_t kStarting = 0x10;
inline constexpr std::uint8_t kKnown = kLinkUp | kLeaving | kDeaf | kNotEligible | kStarting;
}  // namespace flags

struct Heartbeat {
  election::NodeName node;
  std::uint64_t boot_id = 0;
  std::uint64_t sequence = 0;
  std::uint32_t interval_ms = 100;
  std::uint8_t flags = flags::kLinkUp;  // unknown bits are dropped by Decode
  // The sender's announced list is split in `windows` windows; this is window `window`. With one
  // window, `addresses` is the whole list.
  std::uint8_t window = 0;
  std::uint8_t windows = 1;
  // Addresses the sender announces now (local addresses it won), or this window of them. Encode
  // writes IPv4 ones first, then IPv6, each in the given order; Decode returns them so.
  std::vector<net::IpAddress> addresses;

  bool link_up() const { return (flags & flags::kLinkUp) != 0; }
  bool leaving() const { return (flags & flags::kLeaving) != 0; }
  bool partial() const { return windows > 1; }
  bool deaf() const { return (flags & flags::kDeaf) != 0; }
  bool eligible() const { return link_up() && (flags & flags::kNotEligible) == 0; }
  bool starting() const { return (flags & flags::kStarting) != 0; }
  friend bool operator==(const Heartbeat&, const Heartbeat&) = default;
};

// Why a datagram was dropped; one counter each (see Stats in service.h).
enum class DropReason : std::uint8_t {
  kTooShort,       // fewer than kMinDatagramBytes
  kTooLong,        // more than kMaxDatagramBytes
  kBadMagic,       // not a Pylon heartbeat at all
  kBadVersion,     // a version this build does not speak
  kBadMac,         // wrong key, or corrupted / forged
  kMalformed,      // authenticated but inconsistent (lengths, name, interval): a buggy sender
  kReplay,         // sequence below the last one accepted for this (sender, boot id), or a
                   // retired boot id
  kDuplicate,      // the sequence just accepted again: the copy sent to another endpoint
  kUnknownSender,  // valid, but the sender is not a listed peer (no lease with the annotation)
  kSelf,           // our own node name (a loop, or two agents with one name)
};
inline constexpr std::size_t kDropReasonCount = 10;
const char* DropReasonName(DropReason r);

struct DecodeError {
  DropReason reason;
  std::string detail;
};

// The encoded size of `hb` (no checks).
std::size_t EncodedSize(const Heartbeat& hb);

// Signs with the ring's first key. Fails (kInvalidArgument) on an empty / too long / badly
// spelled node name, interval 0 or above kMaxIntervalMs, windows 0 or window >= windows, more
// than 65535 addresses of one family, or a result above kMaxDatagramBytes. Unknown flag bits are
// cleared.
Result<std::vector<std::uint8_t>> Encode(const Heartbeat& hb, const KeyRing& keys);

// Authenticates (against every key of the ring, the signing key first) and parses one datagram.
// Never throws; any input is safe.
tl::expected<Heartbeat, DecodeError> Decode(std::span<const std::uint8_t> datagram,
                                            const KeyRing& keys);

// Whether `name` is acceptable as a node name on the wire: 1..253 bytes of [a-z0-9.-].
bool ValidWireNodeName(std::string_view name);

// ---- Reports (ring.h): what a node's monitors tell the rest of the segment -------------------
//
//   offset  size  field
//   0       4     magic "PYRP" (0x50 0x59 0x52 0x50)
//   4       1     version (1)
//   5       1     kind: 1 alive, 2 dead, 3 unhealthy, 4 leaving
//   6       1     reporter name length R, then R bytes
//   7+R     8     reporter boot id
//   15+R    8     report id (the reporter's sequence, shared with its heartbeats)
//   23+R    1     subject name length S, then S bytes
//   24+R+S  8     subject boot id
//   32+R+S  8     subject sequence: the last one the reporter heard from the subject
//   end-16  16    HMAC-SHA256(key, every byte before it), truncated to 16 bytes
// A report is forwarded verbatim, so the reporter's MAC and identity travel with it.
inline constexpr std::uint8_t kReportMagic[4] = {'P', 'Y', 'R', 'P'};
inline constexpr std::uint8_t kReportVersion = 1;
inline constexpr std::size_t kReportFixedBytes = 4 + 1 + 1 + 1 + 8 + 8 + 1 + 8 + 8 + kMacBytes;

enum class ReportKind : std::uint8_t {
  kAlive = 1,      // the subject is heard again (or refutes a report about itself)
  kDead = 2,       // the subject's monitor stopped hearing it (Detector kDead, not leaving)
  kUnhealthy = 3,  // the subject says it is not eligible or its link is down
  kLeaving = 4,    // the subject said it is shutting down
};
const char* ReportKindName(ReportKind k);

struct Report {
  election::NodeName reporter;
  std::uint64_t reporter_boot = 0;
  std::uint64_t id = 0;
  election::NodeName subject;
  std::uint64_t subject_boot = 0;
  std::uint64_t subject_sequence = 0;
  ReportKind kind = ReportKind::kAlive;
  friend bool operator==(const Report&, const Report&) = default;
};

// Whether the datagram starts with kReportMagic (then DecodeReport, else Decode).
bool LooksLikeReport(std::span<const std::uint8_t> datagram);
Result<std::vector<std::uint8_t>> EncodeReport(const Report& report, const KeyRing& keys);
tl::expected<Report, DecodeError> DecodeReport(std::span<const std::uint8_t> datagram,
                                               const KeyRing& keys);

}  // namespace pylon::heartbeat
