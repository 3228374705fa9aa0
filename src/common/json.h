// The project's one JSON type and its non-throwing accessors. Kubernetes objects, config
// resources and annotations are all read through these: nothing here throws, whatever the
// document holds (nlohmann's own at()/value()/get() throw on a type mismatch; use these instead).
// Pure.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace pylon {

using Json = nlohmann::json;

// Parses JSON text without throwing; `what` names the document in the error.
Result<Json> ParseJson(std::string_view text, std::string_view what = "JSON");

// Walks object keys; returns nullptr if any step is missing or not an object. A present null is
// returned as a null value. Find(root, {}) is &root.
const Json* Find(const Json& root, std::initializer_list<std::string_view> path);
// The value at `path` if it has the type asked for, else nullopt.
std::optional<std::string> FindString(const Json& root,
                                      std::initializer_list<std::string_view> path);
std::optional<int64_t> FindInt(const Json& root, std::initializer_list<std::string_view> path);
std::optional<bool> FindBool(const Json& root, std::initializer_list<std::string_view> path);

}  // namespace pylon
