#include "model/service.h"

#include "common/json.h"

namespace pylon::model {
namespace {

// Reads an optional string field; a present field of another type is an error.
Status OptString(const Json& obj, const char* key, const std::string& path, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Ok();
  if (!it->is_string()) {
    return Fail(ErrorCode::kInvalidArgument, path + key + ": expected a string");
  }
  *out = it->get<std::string>();
  return Ok();
}

const Json* OptObject(const Json& obj, const char* key) {
  const Json* v = Find(obj, {key});
  return v != nullptr && v->is_object() ? v : nullptr;
}

}  // namespace

Result<Service> ParseService(const Json& obj) {
  if (!obj.is_object()) return Fail(ErrorCode::kInvalidArgument, "Service: not a JSON object");
  Service s;
  const Json* meta = OptObject(obj, "metadata");
  if (!meta) return Fail(ErrorCode::kInvalidArgument, "Service: metadata missing");
  for (auto [key, out] :
       {std::pair{"name", &s.name}, std::pair{"namespace", &s.ns}, std::pair{"uid", &s.uid},
        std::pair{"resourceVersion", &s.resource_version},
        std::pair{"creationTimestamp", &s.creation_timestamp}}) {
    if (auto st = OptString(*meta, key, "Service: metadata.", out); !st) return Fail(st.error());
  }
  if (s.name.empty()) return Fail(ErrorCode::kInvalidArgument, "Service: metadata.name missing");
  const std::string where = "Service " + s.Key() + ": ";
  if (auto it = meta->find("deletionTimestamp"); it != meta->end() && !it->is_null()) {
    s.deleting = true;
  }
  if (auto it = meta->find("annotations"); it != meta->end() && !it->is_null()) {
    if (!it->is_object()) {
      return Fail(ErrorCode::kInvalidArgument, where + "metadata.annotations: expected an object");
    }
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) {
        return Fail(ErrorCode::kInvalidArgument,
                    where + "metadata.annotations." + k + ": expected a string");
      }
      s.annotations[k] = v.get<std::string>();
    }
  }
  const Json empty = Json::object();
  const Json* spec = OptObject(obj, "spec");
  if (!spec) spec = &empty;
  std::string lbc;
  for (auto [key, out] :
       {std::pair{"type", &s.type}, std::pair{"loadBalancerIP", &s.load_balancer_ip},
        std::pair{"ipFamilyPolicy", &s.ip_family_policy},
        std::pair{"externalTrafficPolicy", &s.external_traffic_policy},
        std::pair{"loadBalancerClass", &lbc}}) {
    if (auto st = OptString(*spec, key, where + "spec.", out); !st) return Fail(st.error());
  }
  if (s.type.empty()) s.type = "ClusterIP";
  if (!lbc.empty()) s.load_balancer_class = lbc;
  if (auto it = spec->find("ipFamilies"); it != spec->end() && !it->is_null()) {
    if (!it->is_array()) {
      return Fail(ErrorCode::kInvalidArgument, where + "spec.ipFamilies: expected a list");
    }
    for (const auto& f : *it) {
      if (!f.is_string()) {
        return Fail(ErrorCode::kInvalidArgument, where + "spec.ipFamilies: expected strings");
      }
      auto fam = net::ParseFamilyName(f.get<std::string>());
      if (!fam) return Fail(fam.error().Wrap(where + "spec.ipFamilies"));
      s.ip_families.push_back(*fam);
    }
  }
  if (auto it = spec->find("ports"); it != spec->end() && !it->is_null()) {
    if (!it->is_array())
      return Fail(ErrorCode::kInvalidArgument, where + "spec.ports: expected a list");
    for (size_t i = 0; i < it->size(); ++i) {
      const auto& p = (*it)[i];
      std::string path = where + "spec.ports[" + std::to_string(i) + "]";
      if (!p.is_object()) return Fail(ErrorCode::kInvalidArgument, path + ": expected an object");
      ServicePort sp;
      sp.protocol = "TCP";
      if (auto st = OptString(p, "protocol", path + ".", &sp.protocol); !st)
        return Fail(st.error());
      auto port = p.find("port");
      if (port == p.end() || !port->is_number_integer()) {
        return Fail(ErrorCode::kInvalidArgument, path + ".port: expected an integer");
      }
      sp.port = port->get<int>();
      s.ports.push_back(sp);
    }
  }
  if (const Json* status = OptObject(obj, "status")) {
    if (const Json* lb = OptObject(*status, "loadBalancer")) {
      if (auto it = lb->find("ingress"); it != lb->end() && it->is_array()) {
        for (const auto& ing : *it) {
          if (!ing.is_object()) continue;
          auto ip = ing.find("ip");
          if (ip == ing.end() || !ip->is_string()) {
            s.ingress_problems.push_back(ing.dump());
            continue;
          }
          auto addr = net::IpAddress::Parse(ip->get<std::string>());
          if (!addr) {
            s.ingress_problems.push_back(ip->get<std::string>());
            continue;
          }
          s.ingress.push_back(*addr);
        }
      }
    }
  }
  return s;
}

Selection SelectOwner(const Service& svc) {
  if (svc.type != "LoadBalancer") return {};
  if (!svc.load_balancer_class || *svc.load_balancer_class == kClassPureLB ||
      *svc.load_balancer_class == kClassPureLBv2) {
    const std::string* g = svc.Annotation(kAnnServiceGroup);
    return {Owner::kServiceGroup, g && !g->empty() ? *g : std::string(kDefaultServiceGroup)};
  }
  const std::string& cls = *svc.load_balancer_class;
  const std::string prefix = kLacePrefix;
  if (cls.rfind(prefix, 0) == 0) return {Owner::kLaceClass, cls.substr(prefix.size())};
  return {};
}

}  // namespace pylon::model
