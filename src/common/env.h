// The process environment behind an injectable lookup: code that reads environment variables
// takes an EnvLookup, tests hand it a map, commands hand it ProcessEnv.
#pragma once

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

namespace pylon {

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// getenv: the variable's value, nullopt when it is unset.
inline std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace pylon
