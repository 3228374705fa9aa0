// The informer's local cache: objects of one resource keyed "namespace/name". Readers (controllers)
// and the informer thread may use it concurrently; reads return copies.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "k8s/object.h"

namespace pylon::k8s {

class Store {
 public:
  std::optional<Json> Get(const std::string& key) const;
  std::optional<Json> Get(std::string_view ns, std::string_view name) const;
  std::vector<Json> List() const;
  std::vector<std::string> Keys() const;
  size_t Size() const;

  // Writers (the informer). Upsert returns the previous object if any; Remove the removed one.
  std::optional<Json> Upsert(const Json& obj);
  std::optional<Json> Remove(const std::string& key);
  // Replaces the whole content; returns the previous content.
  std::map<std::string, Json> ReplaceAll(std::map<std::string, Json> next);

 private:
  mutable std::mutex mu_;
  std::map<std::string, Json> objects_;
};

}  // namespace pylon::k8s
