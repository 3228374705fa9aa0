#include "support/packet/fake_announcer.h"

#include <algorithm>

namespace pylon::packet {

std::optional<Error> FakeAnnouncer::TakeFailureLocked() {
  std::optional<Error> e = std::move(fail_next_);
  fail_next_.reset();
  return e;
}

Status FakeAnnouncer::Announce(const Interface& iface, const net::IpAddress& address) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto e = TakeFailureLocked()) return tl::unexpected(std::move(*e));
  sent_.push_back({iface, address});
  return Ok();
}

Result<std::optional<MacAddress>> FakeAnnouncer::Probe(const Interface& iface,
                                                       const net::IpAddress& address,
                                                       const ProbeOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto e = TakeFailureLocked()) return tl::unexpected(std::move(*e));
  probes_.push_back({iface, address});
  for (const auto& [a, mac] : owners_) {
    if (a != address || mac == iface.mac) continue;
    if (std::find(options.ignore.begin(), options.ignore.end(), mac) != options.ignore.end()) {
      continue;
    }
    return std::optional<MacAddress>(mac);
  }
  return std::optional<MacAddress>();
}

void FakeAnnouncer::SetOwner(const net::IpAddress& address, std::optional<MacAddress> owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(owners_, [&](const auto& p) { return p.first == address; });
  if (owner) owners_.emplace_back(address, *owner);
}

}  // namespace pylon::packet
