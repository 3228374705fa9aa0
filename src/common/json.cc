#include "common/json.h"

namespace pylon {

Result<Json> ParseJson(std::string_view text, std::string_view what) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::string head(text.substr(0, 120));
    return Fail(ErrorCode::kInvalidArgument, std::string(what) + ": malformed JSON (" +
                                                 std::to_string(text.size()) +
                                                 " bytes, starts with \"" + head + "\")");
  }
  return j;
}

const Json* Find(const Json& root, std::initializer_list<std::string_view> path) {
  const Json* cur = &root;
  for (std::string_view key : path) {
    if (!cur->is_object()) return nullptr;
    // Json::find with a string_view key does not throw.
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::optional<std::string> FindString(const Json& root,
                                      std::initializer_list<std::string_view> path) {
  const Json* v = Find(root, path);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::optional<int64_t> FindInt(const Json& root, std::initializer_list<std::string_view> path) {
  const Json* v = Find(root, path);
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  return v->get<int64_t>();
}

std::optional<bool> FindBool(const Json& root, std::initializer_list<std::string_view> path) {
  const Json* v = Find(root, path);
  if (v == nullptr || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

}  // namespace pylon
