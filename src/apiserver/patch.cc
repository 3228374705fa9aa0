#include "apiserver/patch.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace pylon::apiserver {
namespace {

struct ListStrategy {
  enum class Kind { kReplace, kKeyed, kPrimitiveSet } kind = Kind::kReplace;
  std::vector<std::string> keys;
};

// Field paths (dotted, without indices) whose lists merge instead of being replaced, as declared
// by patchStrategy/patchMergeKey in k8s.io/api for the kinds this server stores.
ListStrategy StrategyFor(const std::string& path) {
  using K = ListStrategy::Kind;
  if (path == "metadata.finalizers") return {K::kPrimitiveSet, {}};
  if (path == "metadata.ownerReferences") return {K::kKeyed, {"uid"}};
  if (path == "spec.ports") return {K::kKeyed, {"port", "protocol"}};
  if (path == "status.conditions") return {K::kKeyed, {"type"}};
  if (path == "status.addresses") return {K::kKeyed, {"type"}};
  if (path == "spec.taints") return {K::kKeyed, {"key"}};
  if (path == "spec.podCIDRs") return {K::kPrimitiveSet, {}};
  // ServiceAccount.
  if (path == "secrets" || path == "imagePullSecrets") return {K::kKeyed, {"name"}};
  // Pod templates of Deployments and DaemonSets (PodSpec and Container tags).
  static const std::string kPod = "spec.template.spec.";
  if (path.rfind(kPod, 0) == 0) {
    std::string p = path.substr(kPod.size());
    for (const char* c : {"containers.", "initContainers.", "ephemeralContainers."})
      if (p.rfind(c, 0) == 0) {
        std::string f = p.substr(std::string(c).size());
        if (f == "ports") return {K::kKeyed, {"containerPort", "protocol"}};
        if (f == "env") return {K::kKeyed, {"name"}};
        if (f == "volumeMounts") return {K::kKeyed, {"mountPath"}};
        if (f == "volumeDevices") return {K::kKeyed, {"devicePath"}};
        if (f == "resizePolicy") return {K::kKeyed, {"resourceName"}};
        return {};
      }
    if (p == "containers" || p == "initContainers" || p == "ephemeralContainers" ||
        p == "volumes" || p == "imagePullSecrets" || p == "schedulingGates" ||
        p == "resourceClaims")
      return {K::kKeyed, {"name"}};
    if (p == "hostAliases") return {K::kKeyed, {"ip"}};
    if (p == "topologySpreadConstraints") return {K::kKeyed, {"topologyKey", "whenUnsatisfiable"}};
  }
  return {};
}

Json KeyValue(const Json& item, const std::string& key) {
  if (item.is_object()) {
    auto it = item.find(key);
    if (it != item.end()) return *it;
  }
  if (key == "protocol") return "TCP";  // the defaulted protocol of ports
  return nullptr;
}

bool SameKeys(const Json& a, const Json& b, const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (KeyValue(a, k) != KeyValue(b, k)) return false;
  return true;
}

bool IsDirective(const std::string& key) { return !key.empty() && key[0] == '$'; }

Json StripDirectives(const Json& v) {
  if (v.is_object()) {
    Json out = Json::object();
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!IsDirective(it.key()) && !it.value().is_null())
        out[it.key()] = StripDirectives(it.value());
    return out;
  }
  if (v.is_array()) {
    Json out = Json::array();
    for (const auto& e : v) {
      if (e.is_object() && e.contains("$patch")) continue;
      out.push_back(StripDirectives(e));
    }
    return out;
  }
  return v;
}

Json MergeMap(Json orig, const Json& patch, const std::string& path, bool* deleted);

Json MergeList(const Json& orig, const Json& patch, const ListStrategy& st,
               const std::string& path) {
  if (st.kind == ListStrategy::Kind::kPrimitiveSet) {
    Json out = orig.is_array() ? orig : Json::array();
    for (const auto& v : patch) {
      if (v.is_object()) continue;
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
    return out;
  }
  for (const auto& item : patch)
    if (item.is_object() && StrOr(item, "$patch") == "replace") return StripDirectives(patch);
  Json out = orig.is_array() ? orig : Json::array();
  for (const auto& item : patch) {
    if (!item.is_object()) {
      out.push_back(item);
      continue;
    }
    bool del = StrOr(item, "$patch") == "delete";
    auto found = std::find_if(out.begin(), out.end(),
                              [&](const Json& e) { return SameKeys(e, item, st.keys); });
    if (del) {
      if (found != out.end()) out.erase(found);
      continue;
    }
    if (found != out.end()) {
      bool d = false;
      Json merged = MergeMap(*found, item, path, &d);
      if (d)
        out.erase(found);
      else
        *found = std::move(merged);
    } else {
      out.push_back(StripDirectives(item));
    }
  }
  return out;
}

void ApplyElementOrder(Json& list, const Json& order, const ListStrategy& st) {
  if (!list.is_array() || !order.is_array()) return;
  Json sorted = Json::array();
  std::vector<bool> used(list.size(), false);
  for (const auto& o : order) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (used[i]) continue;
      bool match =
          st.kind == ListStrategy::Kind::kKeyed ? SameKeys(list[i], o, st.keys) : list[i] == o;
      if (match) {
        sorted.push_back(list[i]);
        used[i] = true;
        break;
      }
    }
  }
  for (std::size_t i = 0; i < list.size(); ++i)
    if (!used[i]) sorted.push_back(list[i]);
  list = std::move(sorted);
}

Json MergeMap(Json orig, const Json& patch, const std::string& path, bool* deleted) {
  *deleted = false;
  if (!patch.is_object()) return patch;
  if (!orig.is_object()) orig = Json::object();
  std::string directive = StrOr(patch, "$patch");
  if (directive == "delete") {
    *deleted = true;
    return Json::object();
  }
  if (directive == "replace") return StripDirectives(patch);
  std::string prefix = path.empty() ? "" : path + ".";
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (IsDirective(k)) continue;
    if (v.is_null()) {
      orig.erase(k);
    } else if (v.is_object()) {
      bool d = false;
      Json merged = MergeMap(orig.contains(k) ? orig[k] : Json::object(), v, prefix + k, &d);
      if (d)
        orig.erase(k);
      else
        orig[k] = std::move(merged);
    } else if (v.is_array()) {
      ListStrategy st = StrategyFor(prefix + k);
      if (st.kind == ListStrategy::Kind::kReplace)
        orig[k] = StripDirectives(v);
      else
        orig[k] = MergeList(orig.contains(k) ? orig[k] : Json::array(), v, st, prefix + k);
    } else {
      orig[k] = v;
    }
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    static const std::string kOrder = "$setElementOrder/";
    static const std::string kDelPrim = "$deleteFromPrimitiveList/";
    if (k.rfind(kDelPrim, 0) == 0 && it.value().is_array()) {
      std::string list = k.substr(kDelPrim.size());
      if (orig.contains(list) && orig[list].is_array()) {
        Json kept = Json::array();
        for (const auto& e : orig[list])
          if (std::find(it.value().begin(), it.value().end(), e) == it.value().end())
            kept.push_back(e);
        orig[list] = std::move(kept);
      }
    } else if (k.rfind(kOrder, 0) == 0) {
      std::string list = k.substr(kOrder.size());
      if (orig.contains(list))
        ApplyElementOrder(orig[list], it.value(), StrategyFor(prefix + list));
    }
  }
  if (auto rk = patch.find("$retainKeys"); rk != patch.end() && rk->is_array()) {
    for (auto it = orig.begin(); it != orig.end();) {
      if (std::find(rk->begin(), rk->end(), Json(it.key())) == rk->end())
        it = orig.erase(it);
      else
        ++it;
    }
  }
  return orig;
}

std::string BaseType(std::string_view ct) {
  std::string s(ct.substr(0, ct.find(';')));
  while (!s.empty() && s.back() == ' ') s.pop_back();
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::optional<PatchType> PatchTypeFromContentType(std::string_view content_type) {
  std::string t = BaseType(content_type);
  if (t == "application/json-patch+json") return PatchType::kJsonPatch;
  if (t == "application/merge-patch+json") return PatchType::kMergePatch;
  if (t == "application/strategic-merge-patch+json") return PatchType::kStrategicMerge;
  if (t == "application/apply-patch+yaml") return PatchType::kApply;
  return std::nullopt;
}

Json StrategicMerge(const Json& original, const Json& patch) {
  bool deleted = false;
  return MergeMap(original, patch, "", &deleted);
}

ApiResult<Json> ApplyPatch(PatchType type, const Json& original, std::string_view body) {
  std::string err;
  auto patch = ParseJson(body, &err);
  if (!patch) return Reject(BadRequestError("error decoding patch: " + err));
  switch (type) {
    case PatchType::kJsonPatch: {
      if (!patch->is_array())
        return Reject(
            BadRequestError("json: cannot unmarshal object into Go value of type jsonpatch.Patch"));
      try {
        return original.patch(*patch);
      } catch (const std::exception& e) {
        ApiError ae;
        ae.code = 422;
        ae.reason = "Invalid";
        ae.message =
            std::string("the server rejected our request due to an error in our request: ") +
            e.what();
        return Reject(ae);
      }
    }
    case PatchType::kMergePatch: {
      if (!patch->is_object()) return Reject(BadRequestError("merge patch must be a JSON object"));
      Json out = original;
      out.merge_patch(*patch);
      return out;
    }
    case PatchType::kStrategicMerge:
      if (!patch->is_object())
        return Reject(BadRequestError("strategic merge patch must be a JSON object"));
      return StrategicMerge(original, *patch);
    case PatchType::kApply:
      break;
  }
  return Reject(
      UnsupportedMediaTypeError({"application/json-patch+json", "application/merge-patch+json",
                                 "application/strategic-merge-patch+json"}));
}

}  // namespace pylon::apiserver
