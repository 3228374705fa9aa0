// Netlink messages as values: named factories build the bytes of one rtnetlink request, pure
// parsers turn the kernel's replies back into the value types of types.h. Nothing here does I/O,
// so every layout is tested byte for byte without root.
//
// Built messages carry nlmsg_seq = 0 and nlmsg_pid = 0; the socket's round trip stamps the
// sequence number (see socket.h). Requests that change state carry NLM_F_ACK.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "net/ip.h"
#include "netlink/types.h"

namespace pylon::netlink {

using Message = std::vector<std::uint8_t>;

// Strongly typed knobs of RTM_NEWADDR.
enum class Dad { kPerform, kSkip };                 // kSkip = IFA_F_NODAD (IPv6 only)
enum class PrefixRoute { kInstall, kSuppress };     // kSuppress = IFA_F_NOPREFIXROUTE
enum class AddMode { kCreateExclusive, kReplace };  // NLM_F_EXCL, or NLM_F_REPLACE (renewal)

// Everything needed to add (or renew) one address.
struct AddressSpec {
  int ifindex = 0;
  net::Prefix address;  // the address with its prefix length, e.g. 192.0.2.10/24
  Dad dad = Dad::kPerform;
  PrefixRoute prefix_route = PrefixRoute::kInstall;
  Lifetimes lifetimes;                // kForever for both = a permanent address
  std::optional<std::uint8_t> proto;  // IFA_PROTO tag; only sent when set
  AddMode mode = AddMode::kCreateExclusive;
  friend bool operator==(const AddressSpec&, const AddressSpec&) = default;
};

// The IFA_PROTO value Pylon tags its own addresses with (values 0-3 are the kernel's IFAPROT_*).
inline constexpr std::uint8_t kPylonAddressProto = 0x50;

// The policy for an address the agent announces (a VIP):
//  - IPv6: NODAD (a stale owner must not leave it dadfailed) and preferred_lft 0, so the kernel
//    never picks it as a source address (and kubelet never mistakes it for the node IP);
//  - IPv4: preferred = valid;
//  - a finite valid lifetime that the agent renews (AddMode::kReplace) while it owns the address:
//    if the agent dies the kernel removes the address by itself (dead-man switch, PureLB: 300 s).
// `proto` is set only when the kernel supports IFA_PROTO.
AddressSpec VipAddressSpec(int ifindex, const net::Prefix& address, Seconds valid_lifetime,
                           std::optional<std::uint8_t> proto,
                           PrefixRoute prefix_route = PrefixRoute::kInstall);

// Rejects what the kernel would reject or silently misapply: ifindex <= 0, NODAD on IPv4,
// preferred > valid, zero valid lifetime, prefix length beyond the family.
Status ValidateAddressSpec(const AddressSpec& spec);

// --- Builders -----------------------------------------------------------------------------
Result<Message> BuildNewAddress(const AddressSpec& spec);
// RTM_DELADDR for exactly this address on exactly this interface.
Message BuildDeleteAddress(int ifindex, const net::Prefix& address);
// RTM_GETADDR dump of one family, or of all when nullopt.
Message BuildGetAddresses(std::optional<net::Family> family);
// RTM_GETROUTE dump of one family (all tables; callers filter).
Message BuildGetRoutes(net::Family family);
// RTM_GETLINK dump.
Message BuildGetLinks();
// RTM_GETLINK for one link by name (IFLA_IFNAME); the kernel answers ENODEV if absent.
Result<Message> BuildGetLinkByName(std::string_view name);
// RTM_NEWLINK with NLM_F_CREATE|NLM_F_EXCL, IFLA_IFNAME and IFLA_LINKINFO{IFLA_INFO_KIND}.
Result<Message> BuildNewLink(std::string_view name, std::string_view kind);
// RTM_NEWLINK on an existing link setting or clearing IFF_UP (ifi_change = IFF_UP).
Message BuildSetLinkUp(int ifindex, bool up);
Message BuildDeleteLink(int ifindex);

// --- Parsers ------------------------------------------------------------------------------
// One message inside a receive buffer. `bytes` covers the whole message (header included) and
// points into the buffer given to SplitMessages.
struct MessageView {
  std::uint16_t type = 0;
  std::uint16_t flags = 0;
  std::uint32_t seq = 0;
  std::uint32_t pid = 0;
  std::span<const std::uint8_t> bytes;
  std::span<const std::uint8_t> payload() const { return bytes.subspan(16); }
};

// Splits a datagram into messages; fails on a truncated or inconsistent nlmsg_len.
Result<std::vector<MessageView>> SplitMessages(std::span<const std::uint8_t> buffer);

// NLMSG_ERROR: Ok for an ACK (error 0); otherwise an Error carrying the errno, `context`, and the
// kernel's extended-ACK message (NLMSGERR_ATTR_MSG, e.g. "Unknown device type") when present.
Status ParseAck(const MessageView& msg, std::string_view context);
// NLMSG_DONE of a dump: Ok, or the dump's error (the kernel appends an int error code).
Status ParseDone(const MessageView& msg, std::string_view context);

Result<AddressInfo> ParseAddress(const MessageView& msg);  // RTM_NEWADDR / RTM_DELADDR
Result<RouteInfo> ParseRoute(const MessageView& msg);      // RTM_NEWROUTE / RTM_DELROUTE
Result<LinkInfo> ParseLink(const MessageView& msg);        // RTM_NEWLINK / RTM_DELLINK
// A notification from the link / address groups; nullopt for message types it does not model.
Result<std::optional<Event>> ParseEvent(const MessageView& msg);

}  // namespace pylon::netlink
