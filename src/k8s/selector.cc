#include "k8s/selector.h"

#include <string>
#include <vector>

namespace pylon::k8s {
namespace {

std::string Strip(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && s[b] == ' ') ++b;
  while (e > b && s[e - 1] == ' ') --e;
  return std::string(s.substr(b, e - b));
}

// Splits on commas that are not inside parentheses.
std::vector<std::string> Terms(std::string_view sel) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= sel.size(); ++i) {
    if (i == sel.size() || (sel[i] == ',' && depth == 0)) {
      std::string t = Strip(sel.substr(start, i - start));
      if (!t.empty()) out.push_back(t);
      start = i + 1;
    } else if (sel[i] == '(') {
      ++depth;
    } else if (sel[i] == ')') {
      --depth;
    }
  }
  return out;
}

std::vector<std::string> SetValues(std::string_view inner) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= inner.size(); ++i) {
    if (i == inner.size() || inner[i] == ',') {
      out.push_back(Strip(inner.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

std::optional<std::string> FieldValue(const Json& obj, std::string_view path) {
  const Json* cur = &obj;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string key(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (!cur->is_object()) return std::nullopt;
    auto it = cur->find(key);
    if (it == cur->end()) return std::nullopt;
    cur = &*it;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return std::string();
  return cur->dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

Result<bool> MatchesLabelSelector(const Json& object, std::string_view selector) {
  const Json* labels = Find(object, {"metadata", "labels"});
  auto label = [&](const std::string& k) -> std::optional<std::string> {
    if (labels == nullptr || !labels->is_object()) return std::nullopt;
    auto it = labels->find(k);
    if (it == labels->end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  bool match = true;
  for (const std::string& t : Terms(selector)) {
    size_t paren = t.find('(');
    if (paren != std::string::npos) {
      if (t.back() != ')') return Fail(ErrorCode::kInvalidArgument, "bad selector term " + t);
      std::string head = Strip(std::string_view(t).substr(0, paren));
      bool notin = false;
      std::string key;
      if (head.size() > 6 && head.compare(head.size() - 6, 6, " notin") == 0) {
        notin = true;
        key = Strip(std::string_view(head).substr(0, head.size() - 6));
      } else if (head.size() > 3 && head.compare(head.size() - 3, 3, " in") == 0) {
        key = Strip(std::string_view(head).substr(0, head.size() - 3));
      } else {
        return Fail(ErrorCode::kInvalidArgument, "bad selector term " + t);
      }
      auto values = SetValues(std::string_view(t).substr(paren + 1, t.size() - paren - 2));
      auto v = label(key);
      bool in = false;
      for (const auto& x : values) in = in || (v && *v == x);
      match = match && (notin ? !in : in);
      continue;
    }
    size_t ne = t.find("!=");
    size_t eq = t.find('=');
    if (ne != std::string::npos) {
      auto v = label(Strip(std::string_view(t).substr(0, ne)));
      match = match && (!v || *v != Strip(std::string_view(t).substr(ne + 2)));
    } else if (eq != std::string::npos) {
      size_t vstart = (eq + 1 < t.size() && t[eq + 1] == '=') ? eq + 2 : eq + 1;
      auto v = label(Strip(std::string_view(t).substr(0, eq)));
      match = match && v && *v == Strip(std::string_view(t).substr(vstart));
    } else if (t[0] == '!') {
      match = match && !label(Strip(std::string_view(t).substr(1)));
    } else {
      match = match && label(t).has_value();
    }
  }
  return match;
}

Result<bool> MatchesFieldSelector(const Json& object, std::string_view selector) {
  bool match = true;
  for (const std::string& t : Terms(selector)) {
    size_t ne = t.find("!=");
    size_t eq = t.find('=');
    if (eq == std::string::npos) {
      return Fail(ErrorCode::kInvalidArgument, "bad field selector term \"" + t + "\"");
    }
    if (ne != std::string::npos) {
      auto v = FieldValue(object, Strip(std::string_view(t).substr(0, ne)));
      match = match && v.value_or("") != Strip(std::string_view(t).substr(ne + 2));
    } else {
      size_t vstart = (eq + 1 < t.size() && t[eq + 1] == '=') ? eq + 2 : eq + 1;
      auto v = FieldValue(object, Strip(std::string_view(t).substr(0, eq)));
      match = match && v.value_or("") == Strip(std::string_view(t).substr(vstart));
    }
  }
  return match;
}

}  // namespace pylon::k8s
