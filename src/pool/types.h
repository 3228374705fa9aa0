// Value types of the allocator: who holds an address (ServiceKey) and what it listens on
// (PortKey). Pure, no I/O.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/object_key.h"
#include "common/result.h"

namespace pylon::pool {

// A Service's identity: namespace and name. Both are non-empty for keys made by Parse/Make.
class ServiceKey {
 public:
  ServiceKey() = default;
  // "namespace/name"; exactly one '/', both parts non-empty.
  static Result<ServiceKey> Parse(std::string_view text);
  static Result<ServiceKey> Make(std::string_view ns, std::string_view name);

  const std::string& ns() const { return ns_; }
  const std::string& name() const { return name_; }
  std::string ToString() const { return ObjectKey{ns_, name_}.String(); }

  friend bool operator==(const ServiceKey&, const ServiceKey&) = default;
  friend std::strong_ordering operator<=>(const ServiceKey&, const ServiceKey&) = default;

 private:
  ServiceKey(std::string ns, std::string name) : ns_(std::move(ns)), name_(std::move(name)) {}
  std::string ns_;
  std::string name_;
};

enum class Protocol : std::uint8_t { kTCP, kUDP, kSCTP };

// "TCP" / "UDP" / "SCTP", as Kubernetes spells ServicePort.protocol.
std::string_view ProtocolName(Protocol p);
// Accepts the Kubernetes spelling; an empty string means TCP (the API default).
Result<Protocol> ParseProtocol(std::string_view text);

// One (protocol, port) a Service exposes on its load-balancer address.
struct PortKey {
  Protocol protocol = Protocol::kTCP;
  std::uint16_t port = 0;

  std::string ToString() const;  // "TCP/80"
  friend bool operator==(const PortKey&, const PortKey&) = default;
  friend std::strong_ordering operator<=>(const PortKey&, const PortKey&) = default;
};

// "TCP/80", "udp/53" (protocol case-insensitive), port 1..65535.
Result<PortKey> ParsePortKey(std::string_view text);

// Sorts and de-duplicates: the canonical form every port set inside the allocator is kept in.
std::vector<PortKey> NormalizePorts(std::vector<PortKey> ports);

// Both arguments sorted (NormalizePorts). Returns the first PortKey present in both, if any.
const PortKey* FirstCommonPort(std::span<const PortKey> a, std::span<const PortKey> b);

}  // namespace pylon::pool

template <>
struct std::hash<pylon::pool::ServiceKey> {
  std::size_t operator()(const pylon::pool::ServiceKey& k) const noexcept {
    std::size_t h = std::hash<std::string>{}(k.ns());
    return h ^ (std::hash<std::string>{}(k.name()) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  }
};
