#include "k8s/store.h"

namespace pylon::k8s {

PackedJson PackedJson::Pack(const Json& value) {
  PackedJson p;
  Json::to_cbor(value, p.bytes_);
  p.bytes_.shrink_to_fit();
  return p;
}

Json PackedJson::Unpack() const {
  if (bytes_.empty()) return Json();
  // Bytes we encoded ourselves: decoding cannot fail; without exceptions a failure would give a
  // discarded value rather than throw.
  return Json::from_cbor(bytes_.begin(), bytes_.end(), /*strict=*/true,
                         /*allow_exceptions=*/false);
}

Store::Entry Store::Make(const Json& obj) const {
  Entry e;
  if (opts_.compact) {
    e.packed = PackedJson::Pack(obj);
  } else {
    e.tree = obj;
  }
  return e;
}

Json Store::Read(const Entry& e) const { return opts_.compact ? e.packed.Unpack() : e.tree; }

Json Store::Take(Entry&& e) const { return opts_.compact ? e.packed.Unpack() : std::move(e.tree); }

std::optional<Json> Store::Get(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return Read(it->second);
}

std::optional<Json> Store::Get(std::string_view ns, std::string_view name) const {
  return Get(ObjectKey{std::string(ns), std::string(name)}.String());
}

std::vector<Json> Store::List() const {
  MutexLock lock(mu_);
  std::vector<Json> out;
  out.reserve(objects_.size());
  for (const auto& [k, v] : objects_) out.push_back(Read(v));
  return out;
}

void Store::ForEach(const std::function<void(const Json& obj)>& fn) const {
  std::vector<Entry> snapshot;
  {
    MutexLock lock(mu_);
    snapshot.reserve(objects_.size());
    for (const auto& [k, v] : objects_) snapshot.push_back(v);
  }
  for (auto& e : snapshot) {
    if (opts_.compact) {
      fn(e.packed.Unpack());
      e.packed = PackedJson();  // frees the bytes as we go
    } else {
      fn(e.tree);
    }
  }
}

std::vector<std::string> Store::Keys() const {
  MutexLock lock(mu_);
  std::vector<std::string> out;
  out.reserve(objects_.size());
  for (const auto& [k, v] : objects_) out.push_back(k);
  return out;
}

size_t Store::Size() const {
  MutexLock lock(mu_);
  return objects_.size();
}

size_t Store::PackedBytes() const {
  MutexLock lock(mu_);
  return packed_bytes_;
}

std::optional<Json> Store::Upsert(const Json& obj) {
  std::string key = KeyOf(obj).String();
  Entry fresh = Make(obj);  // encode outside the lock
  MutexLock lock(mu_);
  packed_bytes_ += fresh.packed.bytes();
  auto it = objects_.find(key);
  if (it == objects_.end()) {
    objects_.emplace(std::move(key), std::move(fresh));
    return std::nullopt;
  }
  Entry old = std::move(it->second);
  it->second = std::move(fresh);
  packed_bytes_ -= old.packed.bytes();
  return Take(std::move(old));
}

std::optional<Json> Store::Remove(const std::string& key) {
  MutexLock lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  Entry old = std::move(it->second);
  objects_.erase(it);
  packed_bytes_ -= old.packed.bytes();
  return Take(std::move(old));
}

std::map<std::string, Json> Store::ReplaceAll(const std::map<std::string, Json>& next) {
  std::map<std::string, Entry> fresh;
  size_t bytes = 0;
  for (const auto& [k, v] : next) {
    Entry e = Make(v);
    bytes += e.packed.bytes();
    fresh.emplace(k, std::move(e));
  }
  std::map<std::string, Entry> prev;
  {
    MutexLock lock(mu_);
    std::swap(objects_, fresh);
    prev = std::move(fresh);
    packed_bytes_ = bytes;
  }
  std::map<std::string, Json> out;
  for (auto& [k, e] : prev) out.emplace(k, Take(std::move(e)));
  return out;
}

}  // namespace pylon::k8s
