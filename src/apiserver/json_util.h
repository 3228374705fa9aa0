// JSON helpers for the API server. Objects are nlohmann::ordered_json so that key order is kept
// as the real server writes it (kind, apiVersion, metadata, spec, status; metadata in ObjectMeta
// field order). nlohmann throws: every helper here is non-throwing.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/clock.h"

namespace pylon::apiserver {

using Json = nlohmann::ordered_json;

// Parses JSON text; nullopt (and *error set) on malformed input.
std::optional<Json> ParseJson(std::string_view text, std::string* error);
// Compact serialization; invalid UTF-8 is replaced rather than throwing.
std::string Dump(const Json& j);

// Walks object keys; returns nullptr if any step is missing or not an object.
const Json* Find(const Json& j, std::initializer_list<std::string_view> path);
// The string at path, or "" when missing or not a string.
std::string GetString(const Json& j, std::initializer_list<std::string_view> path);
// Typed member reads that never throw: the default when missing or of another type.
bool BoolOr(const Json& j, std::string_view key, bool def);
long long IntOr(const Json& j, std::string_view key, long long def);
std::string StrOr(const Json& j, std::string_view key, std::string def = "");

// Ensures j[key] is an object (replacing a non-object) and returns it.
Json& ObjectAt(Json& j, std::string_view key);

// RFC 3339 with whole seconds in UTC: "2025-01-02T03:04:05Z".
std::string FormatTime(WallTime t);
// MicroTime: "2025-01-02T03:04:05.123456Z".
std::string FormatMicroTime(WallTime t);
// Parses RFC 3339 ("Z" or "+hh:mm", optional fraction). When micro_exact, requires exactly six
// fractional digits (Kubernetes MicroTime).
std::optional<WallTime> ParseTime(std::string_view text, bool micro_exact = false);

// Puts kind/apiVersion/metadata first (custom resources: apiVersion, kind) then the remaining keys
// in their order with "status" last, and orders metadata in ObjectMeta field order.
Json CanonicalOrder(const Json& obj, bool custom);

std::string Base64Encode(std::string_view data);
// Standard alphabet, padding optional; nullopt on invalid input.
std::optional<std::string> Base64Decode(std::string_view text);

// Equality that ignores object key order (ordered_json's operator== does not).
bool SemanticEqual(const Json& a, const Json& b);

// Reorders the keys of an object: those in `order` first (in that order), then the rest as they
// were. No-op for non-objects.
void OrderKeys(Json& obj, std::initializer_list<std::string_view> order);

// kubectl-style age ("5s", "3m2s", "4h", "12d"), as apimachinery's HumanDuration.
std::string HumanDuration(std::chrono::seconds d);

}  // namespace pylon::apiserver
