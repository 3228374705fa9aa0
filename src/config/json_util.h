// Exception-free, path-tracking access to Json (common/json.h) for the config parsers: typed
// accessors over common's Find that turn a wrong type into an error. Every accessor
// checks the JSON type before reading, so no nlohmann exception can be thrown; a wrong type, a
// null or a missing required field becomes an Error whose message is "<field path>: <reason>",
// e.g. "spec.local.v4pools[1].pool: must be a string, got number".
// Pure: no I/O. Internal to the config module (namespace detail).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/json.h"
#include "common/result.h"

namespace pylon::config::detail {

// "spec" + "local" -> "spec.local"; "" + "spec" -> "spec".
std::string Child(std::string_view parent, std::string_view key);
// "spec.v4pools" + 1 -> "spec.v4pools[1]".
std::string Index(std::string_view parent, std::size_t i);

// "a string", "a number", "null", ... for messages.
std::string_view TypeName(const Json& v);

tl::unexpected<Error> FieldError(std::string_view path, std::string_view reason);

// Typed accessors on member `key` of `object` (pylon::Find(object, {key})); `path` is the
// member's full path. A present null is a wrong type.
// Optional*: absent -> nullopt / nullptr. Required*: absent -> "<path>: required".
Result<const Json*> OptionalObject(const Json& object, std::string_view key, std::string_view path);
Result<const Json*> RequiredObject(const Json& object, std::string_view key, std::string_view path);
Result<const Json*> OptionalArray(const Json& object, std::string_view key, std::string_view path);
Result<std::optional<std::string>> OptionalString(const Json& object, std::string_view key,
                                                  std::string_view path);
// Absent or empty -> "<path>: required".
Result<std::string> RequiredString(const Json& object, std::string_view key, std::string_view path);
Result<std::optional<bool>> OptionalBool(const Json& object, std::string_view key,
                                         std::string_view path);
// A JSON integer in [0, INT64_MAX].
Result<std::optional<std::int64_t>> OptionalNonNegativeInt(const Json& object, std::string_view key,
                                                           std::string_view path);

// Member `key` of `object`, absent or an array: calls `each(item, item_path)` on every item in
// order, item_path being "<path>[i]", and returns its first error.
Status ForEachItem(
    const Json& object, std::string_view key, std::string_view path,
    const std::function<Status(const Json& item, const std::string& item_path)>& each);
// ForEachItem for an array of strings: a non-string item is
// "<path>[i]: must be a string, got <type>"; `each` gets the text.
Status ForEachString(
    const Json& object, std::string_view key, std::string_view path,
    const std::function<Status(const std::string& text, const std::string& item_path)>& each);

// Checks that `v` is a JSON object: "<path>: must be an object, got <type>".
Status ExpectObject(const Json& v, std::string_view path);

}  // namespace pylon::config::detail
