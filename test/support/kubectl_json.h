// `kubectl ... -o json` against a lab's API server, parsed: the one way tests read objects back
// from a lab (link pylon_lab).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/lab.h"

namespace pylon::test_support {

// `kubectl <args> -o json` in `lab`; null when kubectl fails or prints no JSON.
inline nlohmann::json KubectlJson(const lab::Lab& lab, std::vector<std::string> args) {
  args.insert(args.end(), {"-o", "json"});
  auto out = lab.Kubectl(args);
  if (!out) return nullptr;
  nlohmann::json parsed = nlohmann::json::parse(*out, nullptr, false);
  return parsed.is_discarded() ? nlohmann::json() : parsed;
}

}  // namespace pylon::test_support
