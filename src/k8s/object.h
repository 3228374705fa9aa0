// Objects are Json values (common/json.h) as the server sent them; controllers extract typed views
// themselves. This header gives the typed metadata view, object keys and metadata shortcuts.
// Everything here is pure and never throws.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/object_key.h"
#include "common/result.h"

namespace pylon::k8s {

// Typed copy of metadata. Absent fields are empty; wrongly typed ones make ParseMeta fail.
struct ObjectMeta {
  std::string name;
  std::string ns;
  std::string uid;
  std::string resource_version;
  std::string creation_timestamp;
  std::optional<std::string> deletion_timestamp;
  int64_t generation = 0;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> finalizers;
};

// Parses `metadata` of an object. Fails if the object is not a JSON object or a present field has
// the wrong type.
Result<ObjectMeta> ParseMeta(const Json& object);

// Shortcuts on metadata; "" when absent or not a string.
std::string Name(const Json& object);
std::string Namespace(const Json& object);
std::string Uid(const Json& object);
std::string ResourceVersion(const Json& object);
std::string Label(const Json& object, std::string_view key);
std::string Annotation(const Json& object, std::string_view key);
bool IsBeingDeleted(const Json& object);
ObjectKey KeyOf(const Json& object);

}  // namespace pylon::k8s
