// The informer's local cache: objects of one resource keyed "namespace/name". Readers (controllers)
// and the informer thread may use it concurrently; reads return copies.
//
// Memory: a Json tree costs about ten times the bytes of its JSON text (a std::map node
// per member). A compact store keeps each object as CBOR bytes instead and decodes it on every
// read: reads cost a decode (microseconds for a Service) but 10^4 objects take a few MB instead of
// tens. Use it for large caches that are read one key at a time; keep the default (trees) for
// small caches listed often.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "k8s/object.h"

namespace pylon::k8s {

// One object encoded as CBOR. Pack/Unpack round-trip every JSON value exactly (numbers keep their
// integer/float kind).
class PackedJson {
 public:
  PackedJson() = default;
  static PackedJson Pack(const Json& value);
  // The decoded value; null for a default-constructed PackedJson.
  Json Unpack() const;
  size_t bytes() const { return bytes_.size(); }

 private:
  std::string bytes_;
};

struct StoreOptions {
  bool compact = false;  // keep objects as PackedJson
};

class Store {
 public:
  explicit Store(StoreOptions opts = {}) : opts_(opts) {}

  std::optional<Json> Get(const std::string& key) const;
  std::optional<Json> Get(std::string_view ns, std::string_view name) const;
  std::vector<Json> List() const;
  // Calls `fn` with every object, decoded one at a time (a compact store never holds more than
  // one decoded object for it). Runs on a snapshot taken under the lock; `fn` runs outside it and
  // may use the store.
  void ForEach(const std::function<void(const Json& obj)>& fn) const;
  std::vector<std::string> Keys() const;
  size_t Size() const;
  // Bytes held by object values (compact: the CBOR bytes; trees: 0, not tracked).
  size_t PackedBytes() const;

  // Writers (the informer). Upsert returns the previous object if any; Remove the removed one.
  std::optional<Json> Upsert(const Json& obj);
  std::optional<Json> Remove(const std::string& key);
  // Replaces the whole content with a copy of `next` (compact: encoded); returns the previous
  // content.
  std::map<std::string, Json> ReplaceAll(const std::map<std::string, Json>& next);

 private:
  // Exactly one of `tree` / `packed` is used, by opts_.compact.
  struct Entry {
    Json tree;
    PackedJson packed;
  };
  Entry Make(const Json& obj) const;
  Json Read(const Entry& e) const;
  Json Take(Entry&& e) const;

  const StoreOptions opts_;
  mutable Mutex mu_;
  std::map<std::string, Entry> objects_ PYLON_GUARDED_BY(mu_);
  size_t packed_bytes_ PYLON_GUARDED_BY(mu_) = 0;
};

}  // namespace pylon::k8s
