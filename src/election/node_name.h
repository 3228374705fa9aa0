// NodeName: a Kubernetes node name as a strong type, and the node-lease naming convention.
// Pure value types; no validation beyond "non-empty" is imposed here (the API server validated the
// name when the Node or Lease was created).
#pragma once

#include <compare>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace pylon::election {

class NodeName {
 public:
  NodeName() = default;
  explicit NodeName(std::string name) : name_(std::move(name)) {}

  const std::string& str() const { return name_; }
  bool empty() const { return name_.empty(); }

  friend bool operator==(const NodeName&, const NodeName&) = default;
  friend auto operator<=>(const NodeName&, const NodeName&) =
      default;  // NOLINT(modernize-use-nullptr): clang-tidy 14 misreads defaulted <=>

 private:
  std::string name_;
};

// Every agent keeps one Lease named "purelb-node-<node>" in the install namespace.
inline constexpr std::string_view kNodeLeasePrefix = "purelb-node-";
// The Lease annotation listing the node's subnets (format: see subnets_annotation.h).
inline constexpr std::string_view kSubnetsAnnotation = "purelb.io/subnets";

inline std::string LeaseNameFor(const NodeName& node) {
  return std::string(kNodeLeasePrefix) + node.str();
}

// The node a lease name belongs to, or nullopt for a lease that is not a node lease (other
// leases live in the same namespace, e.g. the allocator's leader-election lease).
inline std::optional<NodeName> NodeFromLeaseName(std::string_view lease_name) {
  if (lease_name.size() <= kNodeLeasePrefix.size() || !lease_name.starts_with(kNodeLeasePrefix)) {
    return std::nullopt;
  }
  return NodeName(std::string(lease_name.substr(kNodeLeasePrefix.size())));
}

}  // namespace pylon::election

template <>
struct std::hash<pylon::election::NodeName> {
  std::size_t operator()(const pylon::election::NodeName& n) const noexcept {
    return std::hash<std::string>{}(n.str());
  }
};
