// The agent's record of the addresses it added (ownership.h) in a file under its state
// directory (hostPath), so that a restarted agent knows what its predecessor held. The I/O
// adapter of OwnershipStore: written to a temporary file, fsynced, renamed over the old one.
#pragma once

#include <filesystem>
#include <set>

#include "agent/ownership.h"

namespace pylon::agent {

class FileOwnershipStore final : public OwnershipStore {
 public:
  explicit FileOwnershipStore(std::filesystem::path path) : path_(std::move(path)) {}
  // A missing file is an empty record. Malformed lines are skipped (and logged).
  Result<std::set<OwnedAddress>> Load() override;
  // Creates the parent directory if needed.
  Status Save(const std::set<OwnedAddress>& owned) override;

 private:
  std::filesystem::path path_;
};

}  // namespace pylon::agent
