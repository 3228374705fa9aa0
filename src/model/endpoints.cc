#include "model/endpoints.h"

#include "common/json.h"
#include "common/object_key.h"

namespace pylon::model {
namespace {

// A condition is tri-state in the API; nil takes the given default.
Result<bool> Condition(const Json& conds, const char* key, bool dflt, const std::string& path) {
  auto it = conds.find(key);
  if (it == conds.end() || it->is_null()) return dflt;
  if (!it->is_boolean()) {
    return Fail(ErrorCode::kInvalidArgument, path + ".conditions." + key + ": expected a bool");
  }
  return it->get<bool>();
}

}  // namespace

Result<EndpointSlice> ParseEndpointSlice(const Json& obj) {
  if (!obj.is_object()) return Fail(ErrorCode::kInvalidArgument, "EndpointSlice: not an object");
  EndpointSlice es;
  auto meta = obj.find("metadata");
  if (meta == obj.end() || !meta->is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "EndpointSlice: metadata missing");
  }
  if (auto n = meta->find("name"); n != meta->end() && n->is_string()) es.name = *n;
  if (auto n = meta->find("namespace"); n != meta->end() && n->is_string()) es.ns = *n;
  if (auto l = meta->find("labels"); l != meta->end() && l->is_object()) {
    if (auto s = l->find(kLabelServiceName); s != l->end() && s->is_string()) es.service_name = *s;
  }
  if (auto t = obj.find("addressType"); t != obj.end() && t->is_string()) es.address_type = *t;
  const std::string where = "EndpointSlice " + ObjectKey{es.ns, es.name}.String() + ": endpoints";
  auto eps = obj.find("endpoints");
  if (eps == obj.end() || eps->is_null()) return es;
  if (!eps->is_array()) return Fail(ErrorCode::kInvalidArgument, where + ": expected a list");
  for (size_t i = 0; i < eps->size(); ++i) {
    const auto& e = (*eps)[i];
    std::string path = where + "[" + std::to_string(i) + "]";
    if (!e.is_object()) return Fail(ErrorCode::kInvalidArgument, path + ": expected an object");
    Endpoint ep;
    if (auto n = e.find("nodeName"); n != e.end() && n->is_string()) ep.node_name = *n;
    if (auto c = e.find("conditions"); c != e.end() && c->is_object()) {
      auto ready = Condition(*c, "ready", true, path);
      auto serving = Condition(*c, "serving", true, path);
      auto terminating = Condition(*c, "terminating", false, path);
      if (!ready) return Fail(ready.error());
      if (!serving) return Fail(serving.error());
      if (!terminating) return Fail(terminating.error());
      ep.ready = *ready;
      ep.serving = *serving;
      ep.terminating = *terminating;
    }
    es.endpoints.push_back(ep);
  }
  return es;
}

bool HasLocalEndpoint(const std::vector<const EndpointSlice*>& slices, const std::string& node) {
  bool fallback = false;
  for (const auto* s : slices) {
    for (const auto& e : s->endpoints) {
      if (e.node_name != node) continue;
      if (e.ready) return true;
      if (e.serving && e.terminating) fallback = true;
    }
  }
  return fallback;
}

}  // namespace pylon::model
