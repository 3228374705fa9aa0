#include "k8s/event_correlator.h"

#include "common/time.h"

namespace pylon::k8s {
namespace {

std::string S(const Json& e, std::initializer_list<std::string_view> path) {
  return FindString(e, path).value_or("");
}

// Joins with a separator that cannot occur in Kubernetes names, unlike client-go's plain concat.
std::string Join(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) {
    out += p;
    out += '\x1f';
  }
  return out;
}

std::string ObjectPart(const Json& e) {
  return Join({S(e, {"source", "component"}), S(e, {"source", "host"}),
               S(e, {"involvedObject", "kind"}), S(e, {"involvedObject", "namespace"}),
               S(e, {"involvedObject", "name"}), S(e, {"involvedObject", "uid"}),
               S(e, {"involvedObject", "apiVersion"})});
}

}  // namespace

std::string EventCorrelator::EventKey(const Json& e) {
  return ObjectPart(e) + Join({S(e, {"involvedObject", "fieldPath"}), S(e, {"type"}),
                               S(e, {"reason"}), S(e, {"message"})});
}

std::string EventCorrelator::SpamKey(const Json& e) { return ObjectPart(e); }

std::string EventCorrelator::AggregateKey(const Json& e) {
  return ObjectPart(e) + Join({S(e, {"type"}), S(e, {"reason"}), S(e, {"reportingComponent"}),
                               S(e, {"reportingInstance"})});
}

EventCorrelator::EventCorrelator(CorrelatorOptions opts, const Clock& clock)
    : opts_(opts),
      clock_(clock),
      observed_(opts.cache_size),
      aggregates_(opts.cache_size),
      buckets_(opts.cache_size) {}

EventCorrelator::Decision EventCorrelator::Correlate(Json event) {
  SteadyTime now = clock_.Now();
  std::string now_text = FormatTime(clock_.WallNow());

  // 1. Aggregation by reason.
  std::string key = EventKey(event);
  std::string agg_key = AggregateKey(event);
  Aggregate agg;
  if (Aggregate* a = aggregates_.Get(agg_key); a && now - a->last <= opts_.aggregate_interval) {
    agg = *a;
  }
  agg.messages.insert(S(event, {"message"}));
  agg.last = now;
  if (agg.messages.size() >= opts_.aggregate_max_events) {
    agg.messages.erase(agg.messages.begin());  // keep the set from growing past the threshold
    event["message"] = "(combined from similar events): " + S(event, {"message"});
    key = agg_key;
  }
  aggregates_.Put(agg_key, std::move(agg));

  // 2. Dedup against an earlier identical event.
  Decision d;
  Observation* prev = observed_.Get(key);
  if (prev != nullptr && prev->count > 0 && now - prev->last_seen <= opts_.dedup_window) {
    event["metadata"]["name"] = prev->name;
    if (!prev->resource_version.empty()) {
      event["metadata"]["resourceVersion"] = prev->resource_version;
    }
    event["firstTimestamp"] = prev->first_timestamp;
    event["count"] = prev->count + 1;
    event["lastTimestamp"] = now_text;
    d.action = Action::kPatch;
    d.patch = {{"count", prev->count + 1},
               {"lastTimestamp", now_text},
               {"message", S(event, {"message"})}};
  }
  Observation obs;
  obs.count = FindInt(event, {"count"}).value_or(1);
  obs.first_timestamp = S(event, {"firstTimestamp"});
  obs.name = S(event, {"metadata", "name"});
  obs.resource_version = S(event, {"metadata", "resourceVersion"});
  obs.last_seen = now;
  observed_.Put(key, std::move(obs));

  // 3. Spam filter per source + object.
  std::string spam_key = SpamKey(event);
  Bucket b;
  if (Bucket* existing = buckets_.Get(spam_key)) {
    b = *existing;
    double refill = std::chrono::duration<double>(now - b.last) /
                    std::chrono::duration<double>(opts_.spam_refill);
    b.tokens = std::min<double>(opts_.spam_burst, b.tokens + refill);
  } else {
    b.tokens = opts_.spam_burst;
  }
  b.last = now;
  bool allowed = b.tokens >= 1.0;
  if (allowed) b.tokens -= 1.0;
  buckets_.Put(spam_key, b);
  if (!allowed) {
    d.action = Action::kSkip;
    return d;
  }
  d.event = std::move(event);
  return d;
}

void EventCorrelator::UpdateState(const Json& server_event) {
  Observation obs;
  obs.count = FindInt(server_event, {"count"}).value_or(1);
  obs.first_timestamp = S(server_event, {"firstTimestamp"});
  obs.name = S(server_event, {"metadata", "name"});
  obs.resource_version = S(server_event, {"metadata", "resourceVersion"});
  obs.last_seen = clock_.Now();
  observed_.Put(EventKey(server_event), std::move(obs));
}

}  // namespace pylon::k8s
