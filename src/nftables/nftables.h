// The agent's view of nftables: one table of its own, replaced whole (the text of nft(8)'s
// language, as `nft -f` reads it). Used for the drain of planned moves (agent/drain.h). Never
// touches a table it did not name: kube-proxy's rules stay as they are.
//
// Threading: an Nftables is used by one thread at a time.
#pragma once

#include <memory>
#include <string_view>

#include "common/result.h"

namespace pylon::nftables {

class Nftables {
 public:
  virtual ~Nftables() = default;
  // Runs `commands` as one transaction: all of it or nothing (nft -f semantics).
  virtual Status Run(std::string_view commands) = 0;
};

// Through libnftables, in the caller's network namespace. Needs CAP_NET_ADMIN.
Result<std::unique_ptr<Nftables>> OpenNftables();

}  // namespace pylon::nftables
