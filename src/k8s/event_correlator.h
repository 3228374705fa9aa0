// Decides, for each core/v1 Event a component wants to record, whether to create it, PATCH an
// earlier identical one (count + lastTimestamp), or drop it — client-go's EventCorrelator
// (tools/record/events_cache.go):
//  - aggregation: more than `aggregate_max_events - 1` distinct messages with the same source,
//    object, type and reason within `aggregate_interval` are combined into one event whose message
//    is "(combined from similar events): <msg>";
//  - dedup: an event identical to one recorded before (same source, object, type, reason, message)
//    within `dedup_window` becomes a PATCH of that event's count and lastTimestamp;
//  - spam filter: per source+object a token bucket of `spam_burst` refilled one per `spam_refill`.
// Not thread-safe (the recorder's worker owns it); clock injected; caches are LRU-bounded.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "k8s/object.h"

namespace pylon::k8s {

struct CorrelatorOptions {
  int spam_burst = 25;
  Duration spam_refill = std::chrono::minutes(5);  // one token per this period
  size_t aggregate_max_events = 10;
  Duration aggregate_interval = std::chrono::minutes(10);
  Duration dedup_window = std::chrono::minutes(10);
  size_t cache_size = 4096;
};

// Size-bounded map that evicts the least recently used entry.
template <typename V>
class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity) {}
  V* Get(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }
  void Put(const std::string& key, V value) {
    if (V* v = Get(key)) {
      *v = std::move(value);
      return;
    }
    order_.emplace_front(key, std::move(value));
    index_[key] = order_.begin();
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }
  size_t size() const { return order_.size(); }

 private:
  size_t capacity_;
  std::list<std::pair<std::string, V>> order_;
  std::unordered_map<std::string, typename std::list<std::pair<std::string, V>>::iterator> index_;
};

class EventCorrelator {
 public:
  enum class Action { kCreate, kPatch, kSkip };
  struct Decision {
    Action action = Action::kCreate;
    Json event;  // the event to create (kCreate), or the full updated event (kPatch)
    Json patch;  // kPatch: {"count", "lastTimestamp", "message"}
  };

  EventCorrelator(CorrelatorOptions opts, const Clock& clock);
  // `event` is a complete new core/v1 Event (count 1, first = last timestamp = now).
  Decision Correlate(Json event);
  // Records what the server returned for a create/patch (its name, RV and count).
  void UpdateState(const Json& server_event);

  static std::string EventKey(const Json& event);
  static std::string SpamKey(const Json& event);
  static std::string AggregateKey(const Json& event);

 private:
  struct Observation {
    int64_t count = 0;
    std::string first_timestamp;
    std::string name;
    std::string resource_version;
    SteadyTime last_seen{};
  };
  struct Aggregate {
    std::set<std::string> messages;
    SteadyTime last{};
  };
  struct Bucket {
    double tokens = 0;
    SteadyTime last{};
  };

  CorrelatorOptions opts_;
  const Clock& clock_;
  LruCache<Observation> observed_;
  LruCache<Aggregate> aggregates_;
  LruCache<Bucket> buckets_;
};

}  // namespace pylon::k8s
