// Helpers the config parsers share (parse.cc, service_group.cc, lb_class.cc, node_agent.cc).
// Internal to the config module (namespace detail). Pure.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "common/json.h"
#include "common/result.h"
#include "config/group.h"
#include "config/object_meta.h"

namespace pylon::config::detail {

// Runs `body`; anything thrown (a bug, or bad_alloc) becomes an Error instead of escaping.
template <typename T, typename F>
Result<T> Guard(ObjectKind kind, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Fail(ErrorCode::kInternal,
                std::string(KindName(kind)) + ": internal error while parsing: " + e.what());
  } catch (...) {
    return Fail(ErrorCode::kInternal, std::string(KindName(kind)) + ": internal error");
  }
}

// The skeleton of every kind's parser: metadata first (ParseObjectMeta), then
// `body(object, out)` on a T that holds it (T has a `meta`), an error of the body prefixed with the
// object's key (InObject), and nothing thrown escaping (Guard).
template <typename T, typename F>
Result<T> ParseKind(const Json& object, ObjectKind kind, F&& body) {
  return Guard<T>(kind, [&]() -> Result<T> {
    auto meta = ParseObjectMeta(object, kind);
    if (!meta) return Fail(meta.error());
    T out;
    out.meta = std::move(*meta);
    if (Status s = body(object, out); !s) return Fail(InObject(out.meta.key, s.error()));
    return out;
  });
}

// ParseKind for the kinds that are a pool group (ServiceGroup, LoadBalancerClass): once `spec`
// has filled the group, its pools must not overlap each other (CheckNoInternalOverlap).
Result<Group> ParsePoolGroup(const Json& object, ObjectKind kind,
                             Status (*spec)(const Json& object, Group& g));

// An object's spec and the PureLB API version it is written in: spec.writtenAs ("v1" | "v2"),
// else the object's apiVersion. `spec` is null only where it may be absent and is.
struct VersionedSpec {
  const Json* spec = nullptr;
  PurelbVersion version = PurelbVersion::kV1;
};
enum class SpecPresence { kRequired, kOptional };
Result<VersionedSpec> ReadVersionedSpec(const Json& object, SpecPresence presence);

// Builds the pool entry of `spec` and appends it to the group's list of its family (warnings to
// the group's).
Status AddEntry(Group* g, const PoolSpec& spec);

}  // namespace pylon::config::detail
