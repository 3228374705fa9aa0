// Legacy (non-aggregated) discovery documents, as plain application/json: APIVersions,
// APIGroupList, APIGroup and APIResourceList, including groups defined by CRDs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "apiserver/json_util.h"
#include "apiserver/resource.h"

namespace pylon::apiserver {

Json VersionDocument();
Json ApiVersionsDocument(const std::string& server_address);
Json GroupListDocument(const std::vector<TypePtr>& types);
// nullopt when no type of the group exists.
std::optional<Json> GroupDocument(const std::vector<TypePtr>& types, const std::string& group);
// nullopt when the group/version serves nothing. group "" is the core "v1".
std::optional<Json> ResourceListDocument(const std::vector<TypePtr>& types,
                                         const std::string& group, const std::string& version);

}  // namespace pylon::apiserver
