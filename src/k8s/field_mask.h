// Keeps only chosen fields of an object: an informer transform that drops what a controller never
// reads, so its cache holds less. Pure; never throws.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "k8s/object.h"

namespace pylon::k8s {

// A set of dot-separated field paths, e.g. {"metadata", "spec.type", "spec.ports.port"}. A path
// keeps the whole value at its end; a path through a list applies to every item of the list
// ("spec.ports.port" keeps `port` of each port). Values that are neither objects nor lists where a
// path continues are kept as they are (a malformed field stays visible to the parser).
class FieldMask {
 public:
  FieldMask() = default;
  static FieldMask Of(std::initializer_list<std::string_view> paths);

  // Removes from `value` every object member that no path keeps.
  void Apply(Json& value) const;

 private:
  void Add(std::string_view path);

  bool whole_ = false;  // a path ends here: keep everything below
  std::map<std::string, FieldMask, std::less<>> children_;
};

}  // namespace pylon::k8s
