// PATCH bodies: RFC 6902 JSON patch, RFC 7386 merge patch, and Kubernetes strategic merge patch
// for the built-in kinds served here (list merge keys from the Go struct tags; the directives
// $patch, $retainKeys, $setElementOrder/<list>, $deleteFromPrimitiveList/<list>). Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "apiserver/api_error.h"
#include "apiserver/json_util.h"

namespace pylon::apiserver {

enum class PatchType { kJsonPatch, kMergePatch, kStrategicMerge, kApply };

// Maps a Content-Type (parameters ignored) to a patch type; nullopt for anything else.
std::optional<PatchType> PatchTypeFromContentType(std::string_view content_type);

// Applies a patch to `original`. Errors: 400 for an undecodable body, 422 for a JSON patch that
// does not apply. kApply is not handled here.
ApiResult<Json> ApplyPatch(PatchType type, const Json& original, std::string_view body);

// Strategic merge of an already-parsed patch onto an object (exposed for tests).
Json StrategicMerge(const Json& original, const Json& patch);

}  // namespace pylon::apiserver
