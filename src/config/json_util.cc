#include "config/json_util.h"

#include <limits>

namespace pylon::config::detail {

std::string Child(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string out(parent);
  out += '.';
  out += key;
  return out;
}

std::string Index(std::string_view parent, std::size_t i) {
  return std::string(parent) + "[" + std::to_string(i) + "]";
}

std::string_view TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::binary:
      return "binary data";
    case Json::value_t::discarded:
      return "invalid JSON";
  }
  return "an unknown JSON value";
}

tl::unexpected<Error> FieldError(std::string_view path, std::string_view reason) {
  std::string msg(path);
  if (!msg.empty()) msg += ": ";
  msg += reason;
  return Fail(ErrorCode::kInvalidArgument, std::move(msg));
}

namespace {

tl::unexpected<Error> WrongType(std::string_view path, std::string_view want, const Json& got) {
  return FieldError(path, "must be " + std::string(want) + ", got " + std::string(TypeName(got)));
}

}  // namespace

Status ForEachItem(
    const Json& object, std::string_view key, std::string_view path,
    const std::function<Status(const Json& item, const std::string& item_path)>& each) {
  auto list = OptionalArray(object, key, path);
  if (!list) return Fail(list.error());
  if (*list == nullptr) return Ok();
  std::size_t i = 0;
  for (const Json& item : **list) {
    if (Status s = each(item, Index(path, i++)); !s) return s;
  }
  return Ok();
}

Status ForEachString(
    const Json& object, std::string_view key, std::string_view path,
    const std::function<Status(const std::string& text, const std::string& item_path)>& each) {
  return ForEachItem(object, key, path,
                     [&](const Json& item, const std::string& item_path) -> Status {
                       if (!item.is_string()) return WrongType(item_path, "a string", item);
                       return each(item.get_ref<const std::string&>(), item_path);
                     });
}

Status ExpectObject(const Json& v, std::string_view path) {
  if (!v.is_object()) return WrongType(path, "an object", v);
  return Ok();
}

Result<const Json*> OptionalObject(const Json& object, std::string_view key,
                                   std::string_view path) {
  const Json* v = Find(object, {key});
  if (v == nullptr) return nullptr;
  if (!v->is_object()) return WrongType(path, "an object", *v);
  return v;
}

Result<const Json*> RequiredObject(const Json& object, std::string_view key,
                                   std::string_view path) {
  auto v = OptionalObject(object, key, path);
  if (!v) return v;
  if (*v == nullptr) return FieldError(path, "required");
  return v;
}

Result<const Json*> OptionalArray(const Json& object, std::string_view key, std::string_view path) {
  const Json* v = Find(object, {key});
  if (v == nullptr) return nullptr;
  if (!v->is_array()) return WrongType(path, "an array", *v);
  return v;
}

Result<std::optional<std::string>> OptionalString(const Json& object, std::string_view key,
                                                  std::string_view path) {
  const Json* v = Find(object, {key});
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return WrongType(path, "a string", *v);
  return std::optional<std::string>(v->get_ref<const std::string&>());
}

Result<std::string> RequiredString(const Json& object, std::string_view key,
                                   std::string_view path) {
  auto v = OptionalString(object, key, path);
  if (!v) return Fail(v.error());
  if (!v->has_value() || (*v)->empty()) return FieldError(path, "required");
  return std::move(**v);
}

Result<std::optional<bool>> OptionalBool(const Json& object, std::string_view key,
                                         std::string_view path) {
  const Json* v = Find(object, {key});
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_boolean()) return WrongType(path, "a boolean", *v);
  return std::optional<bool>(v->get_ref<const bool&>());
}

Result<std::optional<std::int64_t>> OptionalNonNegativeInt(const Json& object, std::string_view key,
                                                           std::string_view path) {
  const Json* v = Find(object, {key});
  if (v == nullptr) return std::optional<std::int64_t>();
  if (v->is_number_unsigned()) {
    auto u = v->get_ref<const Json::number_unsigned_t&>();
    if (u > static_cast<Json::number_unsigned_t>(std::numeric_limits<std::int64_t>::max())) {
      return FieldError(
          path, "must be at most " + std::to_string(std::numeric_limits<std::int64_t>::max()));
    }
    return std::optional<std::int64_t>(static_cast<std::int64_t>(u));
  }
  if (v->is_number_integer()) {
    auto i = v->get_ref<const Json::number_integer_t&>();
    if (i < 0) return FieldError(path, "must not be negative");
    return std::optional<std::int64_t>(static_cast<std::int64_t>(i));
  }
  return WrongType(path, "an integer", *v);
}

}  // namespace pylon::config::detail
