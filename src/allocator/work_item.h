// The allocator controller's units of work (its work-queue keys), typed: one Service, the whole
// configuration (re-validate every config object), or one config object's status write. Ordered,
// as the queue keeps them in sets and maps. Pure.
#pragma once

#include <compare>
#include <cstdint>
#include <string_view>
#include <utility>

#include "common/object_key.h"
#include "config/object_meta.h"

namespace pylon::allocator {

struct WorkItem {
  enum class Kind : std::uint8_t { kService, kConfig, kConfigStatus };
  Kind kind = Kind::kConfig;
  ObjectKey service;         // kService
  config::ConfigKey config;  // kConfigStatus

  static WorkItem Service(ObjectKey key) { return {Kind::kService, std::move(key), {}}; }
  // From a Service's "namespace/name" (ObjectKey::String).
  static WorkItem ServiceNamed(std::string_view key) { return Service(ObjectKey::FromString(key)); }
  static WorkItem Config() { return {Kind::kConfig, {}, {}}; }
  static WorkItem ConfigStatus(config::ConfigKey key) {
    return {Kind::kConfigStatus, {}, std::move(key)};
  }
  friend auto operator<=>(const WorkItem&, const WorkItem&) = default;
  friend bool operator==(const WorkItem&, const WorkItem&) = default;
};

}  // namespace pylon::allocator
