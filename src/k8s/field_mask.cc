#include "k8s/field_mask.h"

namespace pylon::k8s {

FieldMask FieldMask::Of(std::initializer_list<std::string_view> paths) {
  FieldMask m;
  for (std::string_view p : paths) m.Add(p);
  return m;
}

void FieldMask::Add(std::string_view path) {
  FieldMask* node = this;
  while (!path.empty()) {
    const auto dot = path.find('.');
    const std::string_view head = path.substr(0, dot);
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    auto it = node->children_.find(head);
    if (it == node->children_.end())
      it = node->children_.emplace(std::string(head), FieldMask()).first;
    node = &it->second;
  }
  node->whole_ = true;
}

void FieldMask::Apply(Json& value) const {
  if (whole_) return;
  if (value.is_array()) {
    for (auto& item : value) Apply(item);
    return;
  }
  if (!value.is_object()) return;
  for (auto it = value.begin(); it != value.end();) {
    auto child = children_.find(it.key());
    if (child == children_.end()) {
      it = value.erase(it);
    } else {
      child->second.Apply(it.value());
      ++it;
    }
  }
}

}  // namespace pylon::k8s
