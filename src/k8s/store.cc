#include "k8s/store.h"

namespace pylon::k8s {

std::optional<Json> Store::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::optional<Json> Store::Get(std::string_view ns, std::string_view name) const {
  return Get(ObjectKey{std::string(ns), std::string(name)}.String());
}

std::vector<Json> Store::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Json> out;
  out.reserve(objects_.size());
  for (const auto& [k, v] : objects_) out.push_back(v);
  return out;
}

std::vector<std::string> Store::Keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.reserve(objects_.size());
  for (const auto& [k, v] : objects_) out.push_back(k);
  return out;
}

size_t Store::Size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return objects_.size();
}

std::optional<Json> Store::Upsert(const Json& obj) {
  std::string key = KeyOf(obj).String();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) {
    objects_.emplace(key, obj);
    return std::nullopt;
  }
  std::optional<Json> old = std::move(it->second);
  it->second = obj;
  return old;
}

std::optional<Json> Store::Remove(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  std::optional<Json> old = std::move(it->second);
  objects_.erase(it);
  return old;
}

std::map<std::string, Json> Store::ReplaceAll(std::map<std::string, Json> next) {
  std::lock_guard<std::mutex> lock(mu_);
  std::swap(objects_, next);
  return next;
}

}  // namespace pylon::k8s
