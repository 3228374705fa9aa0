// Which addresses this agent added: the record that lets a restarted agent sweep its own stale
// addresses without touching anybody else's. Two marks, either suffices:
//  - the IFA_PROTO tag netlink::kPylonAddressProto (Linux 6.1+), carried by the kernel itself;
//  - an entry "<interface> <address>/<len>" in a state file (default /run/pylon/agent-addresses),
//    written BEFORE the address is added and rewritten AFTER it is removed, so a crash between the
//    two steps leaves at worst a record of an address that does not exist (harmless).
// The file (ownership_file.h) is replaced atomically (write temp, fsync, rename). Pure here: the
// record's text form and the store interface.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "common/result.h"
#include "net/ip.h"

namespace pylon::agent {

struct OwnedAddress {
  std::string interface;
  net::Prefix address;  // with the prefix length it was added with
  friend bool operator==(const OwnedAddress&, const OwnedAddress&) = default;
  friend bool operator<(const OwnedAddress& a, const OwnedAddress& b) {
    if (a.interface != b.interface) return a.interface < b.interface;
    if (a.address.address() != b.address.address()) {
      return a.address.address() < b.address.address();
    }
    return a.address.length() < b.address.length();
  }
};

class OwnershipStore {
 public:
  virtual ~OwnershipStore() = default;
  virtual Result<std::set<OwnedAddress>> Load() = 0;
  virtual Status Save(const std::set<OwnedAddress>& owned) = 0;
};

// In memory (tests; or when no state directory is wanted and IFA_PROTO is relied upon).
class MemoryOwnershipStore final : public OwnershipStore {
 public:
  Result<std::set<OwnedAddress>> Load() override { return owned_; }
  Status Save(const std::set<OwnedAddress>& owned) override {
    owned_ = owned;
    ++saves_;
    return Ok();
  }
  int saves() const { return saves_; }

 private:
  std::set<OwnedAddress> owned_;
  int saves_ = 0;
};

// The text form, one entry per line; exposed for tests.
std::string FormatOwned(const std::set<OwnedAddress>& owned);
std::set<OwnedAddress> ParseOwned(const std::string& text, std::vector<std::string>* issues);

}  // namespace pylon::agent
