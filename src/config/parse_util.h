// Helpers the config parsers share (parse.cc, service_group.cc, lb_class.cc, node_agent.cc).
// Internal to the config module (namespace detail). Pure.
#pragma once

#include <exception>
#include <string>

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

// spec.writtenAs ("v1" | "v2"), else the object's apiVersion.
Result<PurelbVersion> ReadVersion(const Json& object, const Json* spec);

// Builds the pool entry of `spec` and appends it to the group's list of its family (warnings to
// the group's).
Status AddEntry(Group* g, const PoolSpec& spec);

}  // namespace pylon::config::detail
