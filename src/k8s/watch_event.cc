#include "k8s/watch_event.h"

namespace pylon::k8s {

const char* EventTypeName(EventType t) {
  switch (t) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
    case EventType::kBookmark:
      return "BOOKMARK";
    case EventType::kError:
      return "ERROR";
  }
  return "?";
}

Result<WatchEvent> ParseWatchEvent(const Json& frame) {
  if (!frame.is_object()) return Fail(ErrorCode::kInvalidArgument, "watch event: not an object");
  auto type = FindString(frame, {"type"});
  if (!type) return Fail(ErrorCode::kInvalidArgument, "watch event: missing string \"type\"");
  WatchEvent ev;
  if (*type == "ADDED") {
    ev.type = EventType::kAdded;
  } else if (*type == "MODIFIED") {
    ev.type = EventType::kModified;
  } else if (*type == "DELETED") {
    ev.type = EventType::kDeleted;
  } else if (*type == "BOOKMARK") {
    ev.type = EventType::kBookmark;
  } else if (*type == "ERROR") {
    ev.type = EventType::kError;
  } else {
    return Fail(ErrorCode::kInvalidArgument, "watch event: unknown type \"" + *type + "\"");
  }
  auto obj = frame.find("object");
  if (obj == frame.end() || !obj->is_object()) {
    return Fail(ErrorCode::kInvalidArgument,
                std::string("watch event ") + *type + ": missing \"object\"");
  }
  ev.object = *obj;
  if (ev.type == EventType::kError) return ev;
  auto rv = FindString(ev.object, {"metadata", "resourceVersion"});
  if (!rv || rv->empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                std::string("watch event ") + *type + ": object has no metadata.resourceVersion");
  }
  ev.resource_version = *rv;
  if (ev.type != EventType::kBookmark && Name(ev.object).empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                std::string("watch event ") + *type + ": object has no metadata.name");
  }
  return ev;
}

Result<WatchEvent> ParseWatchEventText(std::string_view text) {
  auto j = ParseJson(text, "watch event");
  if (!j) return Fail(j.error());
  return ParseWatchEvent(*j);
}

}  // namespace pylon::k8s
