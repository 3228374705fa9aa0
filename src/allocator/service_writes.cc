#include "allocator/service_writes.h"

namespace pylon::allocator {

namespace {

Json IngressJson(const std::vector<net::IpAddress>& ips) {
  Json out = Json::array();
  for (const auto& ip : ips) out.push_back({{"ip", ip.ToString()}, {"ipMode", "VIP"}});
  return out;
}

// Replaces (or removes, when `desired` is nullopt) Pylon's entry in a conditions list, keeping
// every other entry and the lastTransitionTime when the status value did not change.
Json WithCondition(const Json& conditions, const std::optional<Condition>& desired,
                   const std::string& now) {
  Json out = Json::array();
  std::string previous_status, previous_time;
  bool inserted = false;
  if (conditions.is_array()) {
    for (const auto& c : conditions) {
      const Json* type = Find(c, {"type"});
      if (type && type->is_string() && type->get<std::string>() == kConditionType) {
        if (const Json* s = Find(c, {"status"}); s && s->is_string()) previous_status = *s;
        if (const Json* t = Find(c, {"lastTransitionTime"}); t && t->is_string()) {
          previous_time = *t;
        }
        if (desired && !inserted) {
          out.push_back(Json());  // placeholder, filled below to keep the position
          inserted = true;
        }
        continue;
      }
      out.push_back(c);
    }
  }
  if (!desired) return out;
  const std::string status = desired->status ? "True" : "False";
  Json cond = {{"type", kConditionType},
               {"status", status},
               {"reason", desired->reason},
               {"message", desired->message},
               {"lastTransitionTime",
                previous_status == status && !previous_time.empty() ? previous_time : now}};
  if (inserted) {
    for (auto& c : out) {
      if (c.is_null()) c = std::move(cond);
    }
  } else {
    out.push_back(std::move(cond));
  }
  return out;
}

}  // namespace

std::optional<Condition> CurrentCondition(const Json& service) {
  const Json* status = Find(service, {"status"});
  const Json* conditions = status ? Find(*status, {"conditions"}) : nullptr;
  if (!conditions || !conditions->is_array()) return std::nullopt;
  for (const auto& c : *conditions) {
    const Json* type = Find(c, {"type"});
    if (!type || !type->is_string() || type->get<std::string>() != kConditionType) continue;
    Condition out;
    const Json* s = Find(c, {"status"});
    const Json* r = Find(c, {"reason"});
    const Json* m = Find(c, {"message"});
    if (!s || !s->is_string()) return std::nullopt;
    out.status = s->get<std::string>() == "True";
    if (r && r->is_string()) out.reason = *r;
    if (m && m->is_string()) out.message = *m;
    return out;
  }
  return std::nullopt;
}

ServiceWrites PlanServiceWrites(const Json& current, const Decision& d, const std::string& now) {
  ServiceWrites w;
  const bool allocating = d.outcome == Outcome::kAllocated || d.outcome == Outcome::kRefused;
  const bool cleaning = d.outcome == Outcome::kReleased && d.cleanup;
  // A kept Service: only the condition is written; its addresses and annotations stay as they are.
  const bool keeping = d.outcome == Outcome::kKept;
  if (!allocating && !cleaning && !keeping) return w;
  if (!current.is_object()) return w;

  // Status.
  const Json empty = Json::object();
  const Json* status_ptr = Find(current, {"status"});
  const Json& status = status_ptr && status_ptr->is_object() ? *status_ptr : empty;
  Json new_status = status;
  if (allocating) {
    Json lb = Json::object();
    if (!d.ingress.empty()) lb["ingress"] = IngressJson(d.ingress);
    new_status["loadBalancer"] = lb;
  }
  const Json* conds = Find(status, {"conditions"});
  Json new_conds = WithCondition(conds ? *conds : Json(), d.condition, now);
  if (new_conds.empty()) {
    new_status.erase("conditions");
  } else {
    new_status["conditions"] = std::move(new_conds);
  }
  // Compare ignoring an empty loadBalancer / ingress / conditions written as {} versus absent.
  auto normalized = [](Json s) {
    if (s.contains("loadBalancer")) {
      Json& lb = s["loadBalancer"];
      if (lb.is_object() && lb.contains("ingress")) {
        const Json& ing = lb["ingress"];
        if (ing.is_null() || (ing.is_array() && ing.empty())) lb.erase("ingress");
      }
      if (lb.is_null() || (lb.is_object() && lb.empty())) s.erase("loadBalancer");
    }
    if (s.contains("conditions")) {
      const Json& c = s["conditions"];
      if (c.is_null() || (c.is_array() && c.empty())) s.erase("conditions");
    }
    return s;
  };
  if (normalized(new_status) != normalized(status)) {
    Json obj = current;
    obj["status"] = std::move(new_status);
    w.status = std::move(obj);
  }

  if (keeping) return w;

  // Annotations.
  const Json* meta = Find(current, {"metadata"});
  const Json* anns = meta ? Find(*meta, {"annotations"}) : nullptr;
  auto current_ann = [&](const char* k) -> std::optional<std::string> {
    if (!anns || !anns->is_object()) return std::nullopt;
    auto it = anns->find(k);
    if (it == anns->end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  Json patch = Json::object();
  auto want = [&](const char* k, const std::optional<std::string>& v) {
    if (current_ann(k) == v) return;
    patch[k] = v ? Json(*v) : Json(nullptr);
  };
  if (d.outcome == Outcome::kAllocated) {
    want(model::kAnnAllocatedBy, d.allocated_by);
    want(model::kAnnAllocatedFrom, d.allocated_from);
    want(model::kAnnPoolType, d.pool_type);
    want(model::kAnnSkipIPv6DAD,
         d.skip_ipv6_dad ? std::optional<std::string>("true") : std::nullopt);
  } else {
    want(model::kAnnAllocatedBy, std::nullopt);
    want(model::kAnnAllocatedFrom, std::nullopt);
    want(model::kAnnPoolType, std::nullopt);
    want(model::kAnnSkipIPv6DAD, std::nullopt);
  }
  if (d.clear_re_evaluate) want(model::kAnnReEvaluate, std::nullopt);
  if (!patch.empty()) w.annotations = Json{{"metadata", {{"annotations", std::move(patch)}}}};
  return w;
}

}  // namespace pylon::allocator
