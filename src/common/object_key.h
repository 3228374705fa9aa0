// The identity of a Kubernetes object within one resource, and its one text form. Every
// "namespace/name" in the project (informer store keys, work-queue keys, Service keys in the
// allocator and the agent, config object names) is spelled by ObjectKey::String. Pure.
#pragma once

#include <compare>
#include <string>
#include <string_view>

namespace pylon {

struct ObjectKey {
  std::string ns;  // "" for a cluster-scoped object
  std::string name;

  // "namespace/name", or "name" when cluster-scoped.
  std::string String() const { return ns.empty() ? name : ns + "/" + name; }
  // The inverse of String(): split at the first '/'; none means cluster-scoped.
  static ObjectKey FromString(std::string_view key) {
    auto slash = key.find('/');
    if (slash == std::string_view::npos) return ObjectKey{"", std::string(key)};
    return ObjectKey{std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
  }
  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
  friend auto operator<=>(const ObjectKey&, const ObjectKey&) = default;
};

}  // namespace pylon
