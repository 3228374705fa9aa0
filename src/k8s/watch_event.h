// One watch event frame {"type": ..., "object": {...}}. Pure.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "k8s/object.h"

namespace pylon::k8s {

enum class EventType { kAdded, kModified, kDeleted, kBookmark, kError };

const char* EventTypeName(EventType t);

struct WatchEvent {
  EventType type = EventType::kAdded;
  Json object;  // the object (kError: a Status)
  // metadata.resourceVersion of the object; "" only for kError.
  std::string resource_version;
};

// Parses an event frame. Fails on an unknown type, a missing/non-object `object`, or an ADDED /
// MODIFIED / DELETED / BOOKMARK whose object lacks a string metadata.resourceVersion, or an ADDED /
// MODIFIED / DELETED object without metadata.name.
Result<WatchEvent> ParseWatchEvent(const Json& frame);
Result<WatchEvent> ParseWatchEventText(std::string_view text);

}  // namespace pylon::k8s
