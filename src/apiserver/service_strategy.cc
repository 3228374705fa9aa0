// Service semantics of kube-apiserver (pkg/registry/core/service and pkg/apis/core/validation):
// defaulting, type-dependent field dropping on update, cluster IP / node port allocation,
// loadBalancerClass rules and status validation.
#include <algorithm>
#include <set>

#include "apiserver/strategies_internal.h"

namespace pylon::apiserver {
namespace {

std::string Type(const Json& spec) {
  std::string t = StrOr(spec, "type");
  return t.empty() ? "ClusterIP" : t;
}
bool IsLb(const Json& spec) { return Type(spec) == "LoadBalancer"; }
bool NeedsNodePortByType(const Json& spec) {
  std::string t = Type(spec);
  return t == "NodePort" || t == "LoadBalancer";
}
bool NeedsClusterIp(const Json& spec) { return Type(spec) != "ExternalName"; }
bool ExternallyAccessible(const Json& spec) {
  const Json* ext = Find(spec, {"externalIPs"});
  return NeedsNodePortByType(spec) ||
         (Type(spec) == "ClusterIP" && ext && ext->is_array() && !ext->empty());
}
bool NeedsHealthCheckPort(const Json& spec) {
  return IsLb(spec) && StrOr(spec, "externalTrafficPolicy") == "Local";
}

const Json& SpecOf(const Json& obj) {
  static const Json kEmpty = Json::object();
  const Json* s = Find(obj, {"spec"});
  return s && s->is_object() ? *s : kEmpty;
}

Json Member(const Json& j, const char* key) {
  const Json* v = Find(j, {key});
  return v ? *v : Json(nullptr);
}

std::vector<std::string> ClusterIps(const Json& spec) {
  std::vector<std::string> out;
  if (const Json* ips = Find(spec, {"clusterIPs"}); ips && ips->is_array())
    for (const auto& v : *ips)
      if (v.is_string()) out.push_back(v.get<std::string>());
  if (out.empty() && !StrOr(spec, "clusterIP").empty()) out.push_back(StrOr(spec, "clusterIP"));
  return out;
}

std::set<int> NodePorts(const Json& spec) {
  std::set<int> out;
  if (const Json* ports = Find(spec, {"ports"}); ports && ports->is_array())
    for (const auto& p : *ports)
      if (long long np = IntOr(p, "nodePort", 0); np > 0) out.insert(static_cast<int>(np));
  if (long long h = IntOr(spec, "healthCheckNodePort", 0); h > 0) out.insert(static_cast<int>(h));
  return out;
}

void Default(Json& spec) {
  if (!spec.contains("type") || StrOr(spec, "type").empty()) spec["type"] = "ClusterIP";
  if (!spec.contains("sessionAffinity")) spec["sessionAffinity"] = "None";
  if (Json* ports = spec.contains("ports") ? &spec["ports"] : nullptr; ports && ports->is_array()) {
    for (auto& p : *ports) {
      if (!p.is_object()) continue;
      if (!p.contains("protocol")) p["protocol"] = "TCP";
      if (!p.contains("targetPort") && p.contains("port")) p["targetPort"] = p["port"];
    }
  }
  if (NeedsNodePortByType(spec) && !spec.contains("externalTrafficPolicy"))
    spec["externalTrafficPolicy"] = "Cluster";
  if (Type(spec) != "ExternalName" && !spec.contains("internalTrafficPolicy"))
    spec["internalTrafficPolicy"] = "Cluster";
  if (IsLb(spec) && !spec.contains("allocateLoadBalancerNodePorts"))
    spec["allocateLoadBalancerNodePorts"] = true;
}

class ServiceStrategy final : public Strategy {
 public:
  ServiceStrategy(TypePtr type, ServiceAllocator* alloc)
      : Strategy(std::move(type)), alloc_(alloc) {}

  bool ReturnDeletedObject() const override { return true; }
  bool AllowUnconditionalUpdate() const override { return true; }
  std::string NameRule() const override { return "label1035"; }

  void Canonicalize(Json& obj) const override {
    if (!obj.contains("spec") || !obj["spec"].is_object()) return;
    Json& spec = obj["spec"];
    OrderKeys(spec, {"ports",
                     "selector",
                     "clusterIP",
                     "clusterIPs",
                     "type",
                     "externalIPs",
                     "sessionAffinity",
                     "loadBalancerIP",
                     "loadBalancerSourceRanges",
                     "externalName",
                     "externalTrafficPolicy",
                     "healthCheckNodePort",
                     "publishNotReadyAddresses",
                     "sessionAffinityConfig",
                     "ipFamilies",
                     "ipFamilyPolicy",
                     "allocateLoadBalancerNodePorts",
                     "loadBalancerClass",
                     "internalTrafficPolicy",
                     "trafficDistribution"});
    if (spec.contains("ports") && spec["ports"].is_array())
      for (auto& p : spec["ports"])
        OrderKeys(p, {"name", "protocol", "appProtocol", "port", "targetPort", "nodePort"});
  }

  std::optional<std::string> Field(const Json& obj, std::string_view f) const override {
    if (f == "spec.clusterIP") return GetString(obj, {"spec", "clusterIP"});
    if (f == "spec.type") return GetString(obj, {"spec", "type"});
    return std::nullopt;
  }

  void PrepareForCreate(Json& obj) const override {
    obj["status"] = Json{{"loadBalancer", Json::object()}};
    Default(ObjectAt(obj, "spec"));
  }

  void PrepareForUpdate(Json& obj, const Json& old) const override {
    const Json* old_status = Find(old, {"status"});
    obj["status"] = old_status ? *old_status : Json{{"loadBalancer", Json::object()}};
    Json& spec = ObjectAt(obj, "spec");
    const Json& ospec = SpecOf(old);
    if (!spec.contains("type") || StrOr(spec, "type").empty()) spec["type"] = "ClusterIP";
    PatchAllocatedValues(spec, ospec);
    DropTypeDependentFields(spec, ospec);
    Default(spec);
    if (IsLb(ospec) && !IsLb(spec)) obj["status"]["loadBalancer"] = Json::object();
  }

  void PrepareForStatusUpdate(Json& obj, const Json& old) const override {
    Strategy::PrepareForStatusUpdate(obj, old);
    Json* ingress = nullptr;
    if (obj.contains("status") && obj["status"].is_object() &&
        obj["status"].contains("loadBalancer") && obj["status"]["loadBalancer"].is_object() &&
        obj["status"]["loadBalancer"].contains("ingress"))
      ingress = &obj["status"]["loadBalancer"]["ingress"];
    if (ingress && ingress->is_array())
      for (auto& in : *ingress)
        if (in.is_object() && !StrOr(in, "ip").empty() && !in.contains("ipMode"))
          in["ipMode"] = "VIP";
  }

  FieldErrors Validate(const Json& obj, const Json* old) const override {
    FieldErrors errs;
    const Json* specp = Find(obj, {"spec"});
    if (!specp || !specp->is_object()) {
      errs.push_back(FieldError::Required("spec"));
      return errs;
    }
    const Json& spec = *specp;
    std::string type = Type(spec);
    static const std::vector<std::string> kTypes = {"ClusterIP", "ExternalName", "LoadBalancer",
                                                    "NodePort"};
    if (std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end())
      errs.push_back(FieldError::NotSupported("spec.type", type, kTypes));
    std::string cip = StrOr(spec, "clusterIP");
    bool headless = cip == "None";
    const Json* ports = Find(spec, {"ports"});
    std::size_t nports = ports && ports->is_array() ? ports->size() : 0;
    if (nports == 0 && type != "ExternalName" && !headless)
      errs.push_back(FieldError::Required("spec.ports"));
    std::set<std::string> names;
    std::set<std::pair<long long, std::string>> keys;
    for (std::size_t i = 0; i < nports; ++i) {
      const Json& p = (*ports)[i];
      std::string path = "spec.ports[" + std::to_string(i) + "]";
      if (!p.is_object()) {
        errs.push_back(FieldError::Invalid(path, p, "must be an object"));
        continue;
      }
      std::string name = StrOr(p, "name");
      if (nports > 1 && name.empty()) errs.push_back(FieldError::Required(path + ".name"));
      if (!name.empty() && !names.insert(name).second)
        errs.push_back(FieldError::Duplicate(path + ".name", name));
      const Json* port = Find(p, {"port"});
      if (!port || !port->is_number_integer()) {
        errs.push_back(FieldError::Required(path + ".port"));
      } else if (port->get<long long>() < 1 || port->get<long long>() > 65535) {
        errs.push_back(
            FieldError::Invalid(path + ".port", *port, "must be between 1 and 65535, inclusive"));
      }
      std::string proto = StrOr(p, "protocol", "TCP");
      if (proto != "TCP" && proto != "UDP" && proto != "SCTP")
        errs.push_back(FieldError::NotSupported(path + ".protocol", proto, {"SCTP", "TCP", "UDP"}));
      if (port && port->is_number_integer() && !keys.insert({port->get<long long>(), proto}).second)
        errs.push_back(FieldError::Duplicate(path, Json{{"port", *port}, {"protocol", proto}}));
      if (IntOr(p, "nodePort", 0) != 0 && type == "ClusterIP")
        errs.push_back(FieldError::Forbidden(path + ".nodePort",
                                             "may not be used when `type` is 'ClusterIP'"));
    }
    if (type == "ExternalName" && StrOr(spec, "externalName").empty())
      errs.push_back(FieldError::Required("spec.externalName"));
    if (!cip.empty() && !headless && !net::IpAddress::Parse(cip))
      errs.push_back(FieldError::Invalid("spec.clusterIPs[0]", cip,
                                         "must be empty, 'None', or a valid IP address"));
    auto check_enum = [&](const char* field, std::vector<std::string> valid) {
      const Json* v = Find(spec, {field});
      if (!v || v->is_null()) return;
      if (!v->is_string() ||
          std::find(valid.begin(), valid.end(), v->get<std::string>()) == valid.end())
        errs.push_back(FieldError::NotSupported(std::string("spec.") + field, *v, valid));
    };
    check_enum("sessionAffinity", {"ClientIP", "None"});
    check_enum("externalTrafficPolicy", {"Cluster", "Local"});
    check_enum("internalTrafficPolicy", {"Cluster", "Local"});
    check_enum("ipFamilyPolicy", {"PreferDualStack", "RequireDualStack", "SingleStack"});
    if (const Json* fams = Find(spec, {"ipFamilies"}); fams && fams->is_array()) {
      for (std::size_t i = 0; i < fams->size(); ++i)
        if ((*fams)[i] != "IPv4" && (*fams)[i] != "IPv6")
          errs.push_back(FieldError::NotSupported("spec.ipFamilies[" + std::to_string(i) + "]",
                                                  (*fams)[i], {"IPv4", "IPv6"}));
      if (fams->size() > 2)
        errs.push_back(FieldError::Invalid("spec.ipFamilies", *fams,
                                           "may specify no more than one IP for each IP family"));
      if (fams->size() == 2 && (*fams)[0] == (*fams)[1])
        errs.push_back(FieldError::Duplicate("spec.ipFamilies[1]", (*fams)[1]));
    }
    if (!StrOr(spec, "externalTrafficPolicy").empty() && !ExternallyAccessible(spec))
      errs.push_back(FieldError::Invalid("spec.externalTrafficPolicy",
                                         spec["externalTrafficPolicy"],
                                         "may only be set for externally-accessible services"));
    if (spec.contains("allocateLoadBalancerNodePorts") &&
        !spec["allocateLoadBalancerNodePorts"].is_null() && type != "LoadBalancer")
      errs.push_back(FieldError::Forbidden("spec.allocateLoadBalancerNodePorts",
                                           "may only be used when `type` is 'LoadBalancer'"));
    // loadBalancerClass: only on LoadBalancer, immutable while LoadBalancer.
    const Json* lbc = Find(spec, {"loadBalancerClass"});
    bool has_lbc = lbc && !lbc->is_null();
    if (old) {
      const Json& ospec = SpecOf(*old);
      if (IsLb(ospec) && IsLb(spec) &&
          Member(ospec, "loadBalancerClass") != Member(spec, "loadBalancerClass"))
        errs.push_back(FieldError::Invalid("spec.loadBalancerClass",
                                           Member(spec, "loadBalancerClass"),
                                           "may not change once set"));
      std::vector<std::string> oips = ClusterIps(ospec), nips = ClusterIps(spec);
      if (NeedsClusterIp(ospec) && NeedsClusterIp(spec) && !oips.empty() && !nips.empty() &&
          oips[0] != nips[0])
        errs.push_back(
            FieldError::Invalid("spec.clusterIPs[0]", nips[0], "may not change once set"));
    }
    if (has_lbc) {
      if (type == "LoadBalancer") {
        if (!lbc->is_string() || !IsQualifiedName(lbc->get<std::string>()))
          errs.push_back(
              FieldError::Invalid("spec.loadBalancerClass", *lbc,
                                  "name part must consist of alphanumeric characters, '-', '_' or "
                                  "'.', and must start and end with an alphanumeric character"));
      } else {
        errs.push_back(FieldError::Forbidden("spec.loadBalancerClass",
                                             "may only be used when `type` is 'LoadBalancer'"));
      }
    }
    return errs;
  }

  FieldErrors ValidateStatus(const Json& obj, const Json&) const override {
    FieldErrors errs;
    const Json* ingress = Find(obj, {"status", "loadBalancer", "ingress"});
    if (!ingress || ingress->is_null()) return errs;
    if (!ingress->is_array()) {
      errs.push_back(
          FieldError::Invalid("status.loadBalancer.ingress", *ingress, "must be a list"));
      return errs;
    }
    for (std::size_t i = 0; i < ingress->size(); ++i) {
      const Json& in = (*ingress)[i];
      std::string path = "status.loadBalancer.ingress[" + std::to_string(i) + "]";
      std::string ip = StrOr(in, "ip");
      if (!ip.empty() && !net::IpAddress::Parse(ip))
        errs.push_back(FieldError::Invalid(
            path + ".ip", ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"));
      const Json* mode = Find(in, {"ipMode"});
      if (mode && !mode->is_null()) {
        if (ip.empty())
          errs.push_back(
              FieldError::Forbidden(path + ".ipMode", "may not be specified when `ip` is not set"));
        else if (*mode != "VIP" && *mode != "Proxy")
          errs.push_back(FieldError::NotSupported(path + ".ipMode", *mode, {"Proxy", "VIP"}));
      } else if (!ip.empty()) {
        errs.push_back(
            FieldError::Required(path + ".ipMode", "must be specified when `ip` is set"));
      }
      std::string host = StrOr(in, "hostname");
      if (!host.empty() && net::IpAddress::Parse(host))
        errs.push_back(
            FieldError::Invalid(path + ".hostname", host, "must be a DNS name, not an IP address"));
    }
    if (!ingress->empty() && !IsLb(SpecOf(obj)))
      errs.push_back(FieldError::Forbidden("status.loadBalancer.ingress",
                                           "may only be used when `spec.type` is 'LoadBalancer'"));
    return errs;
  }

  FieldErrors Allocate(Json& obj, const Json* old) override {
    FieldErrors errs;
    Json& spec = ObjectAt(obj, "spec");
    const Json& ospec = old ? SpecOf(*old) : Json::object();
    std::vector<net::IpAddress> claimed_ips;
    std::vector<int> claimed_ports;
    auto rollback = [&] {
      for (const auto& ip : claimed_ips) alloc_->ReleaseIp(ip);
      for (int p : claimed_ports) alloc_->ReleasePort(p);
    };
    std::vector<std::string> old_ips = old ? ClusterIps(ospec) : std::vector<std::string>{};
    std::set<int> old_ports = old ? NodePorts(ospec) : std::set<int>{};

    if (NeedsClusterIp(spec)) {
      std::vector<std::string> ips = ClusterIps(spec);
      bool headless = !ips.empty() && ips[0] == "None";
      std::vector<net::Family> fams;
      const Json* given_fams = Find(spec, {"ipFamilies"});
      bool fams_given = given_fams && given_fams->is_array() && !given_fams->empty();
      if (fams_given) {
        for (const auto& f : *given_fams)
          if (auto pf = net::ParseFamilyName(f.is_string() ? f.get<std::string>() : ""); pf)
            fams.push_back(*pf);
      } else if (!headless) {
        for (const auto& s : ips)
          if (auto ip = net::IpAddress::Parse(s)) fams.push_back(ip->family());
      }
      std::string policy = StrOr(spec, "ipFamilyPolicy");
      if (policy.empty())
        policy = (fams.size() == 2 || (!headless && ips.size() == 2)) ? "RequireDualStack"
                                                                      : "SingleStack";
      if (fams.empty()) fams.push_back(alloc_->network().primary);
      if (policy != "SingleStack" && fams.size() == 1)
        fams.push_back(fams[0] == net::Family::kV4 ? net::Family::kV6 : net::Family::kV4);
      if (policy == "SingleStack" && fams.size() > 1) {
        errs.push_back(FieldError::Invalid(
            "spec.ipFamilyPolicy", policy,
            "must be RequireDualStack or PreferDualStack when multiple IP families are specified"));
        return errs;
      }
      for (std::size_t i = 0; i < ips.size() && i < fams.size() && !headless; ++i) {
        auto ip = net::IpAddress::Parse(ips[i]);
        if (ip && ip->family() != fams[i]) {
          errs.push_back(FieldError::Invalid(
              "spec.clusterIPs[" + std::to_string(i) + "]", ips[i],
              "expected an " + std::string(net::FamilyName(fams[i])) +
                  " value as indicated by `ipFamilies[" + std::to_string(i) + "]`"));
          return errs;
        }
      }
      Json fam_json = Json::array();
      for (auto f : fams) fam_json.push_back(std::string(net::FamilyName(f)));
      spec["ipFamilies"] = fam_json;
      spec["ipFamilyPolicy"] = policy;
      Json out_ips = Json::array();
      if (headless) {
        out_ips.push_back("None");
      } else {
        for (std::size_t i = 0; i < fams.size(); ++i) {
          if (i < ips.size() && !ips[i].empty()) {
            if (std::find(old_ips.begin(), old_ips.end(), ips[i]) == old_ips.end()) {
              auto ip = net::IpAddress::Parse(ips[i]);
              Status st = ip ? alloc_->ClaimIp(*ip)
                             : Status(Fail(ErrorCode::kInvalidArgument, "not an IP"));
              if (!st) {
                rollback();
                Json arr = Json::array();
                for (const auto& s : ips) arr.push_back(s);
                errs.push_back(FieldError::Invalid(
                    "spec.clusterIPs", arr,
                    "failed to allocate IP " + ips[i] + ": " + st.error().message()));
                return errs;
              }
              claimed_ips.push_back(*ip);
            }
            out_ips.push_back(ips[i]);
          } else {
            auto ip = alloc_->AllocateIp(fams[i]);
            if (!ip) {
              rollback();
              errs.push_back(
                  FieldError::Invalid("spec.clusterIPs", nullptr,
                                      "failed to allocate a serviceIP: " + ip.error().message()));
              return errs;
            }
            claimed_ips.push_back(*ip);
            out_ips.push_back(ip->ToString());
          }
        }
      }
      spec["clusterIP"] = out_ips[0];
      spec["clusterIPs"] = out_ips;
    }

    bool needs_ports = Type(spec) == "NodePort" ||
                       (IsLb(spec) && BoolOr(spec, "allocateLoadBalancerNodePorts", true));
    if (spec.contains("ports") && spec["ports"].is_array() && Type(spec) != "ClusterIP") {
      auto& ports = spec["ports"];
      for (std::size_t i = 0; i < ports.size(); ++i) {
        if (!ports[i].is_object()) continue;
        long long np = IntOr(ports[i], "nodePort", 0);
        if (np != 0) {
          if (!old_ports.count(static_cast<int>(np))) {
            Status st = alloc_->ClaimPort(static_cast<int>(np));
            if (!st) {
              rollback();
              errs.push_back(FieldError::Invalid("spec.ports[" + std::to_string(i) + "].nodePort",
                                                 np, st.error().message()));
              return errs;
            }
            claimed_ports.push_back(static_cast<int>(np));
          }
        } else if (needs_ports) {
          auto p = alloc_->AllocatePort();
          if (!p) {
            rollback();
            errs.push_back(
                FieldError::Invalid("spec.ports[" + std::to_string(i) + "].nodePort", 0,
                                    "failed to allocate a nodePort: " + p.error().message()));
            return errs;
          }
          claimed_ports.push_back(*p);
          ports[i]["nodePort"] = *p;
        }
      }
    }
    if (NeedsHealthCheckPort(spec)) {
      long long h = IntOr(spec, "healthCheckNodePort", 0);
      if (h != 0) {
        if (!old_ports.count(static_cast<int>(h))) {
          Status st = alloc_->ClaimPort(static_cast<int>(h));
          if (!st) {
            rollback();
            errs.push_back(
                FieldError::Invalid("spec.healthCheckNodePort", h, st.error().message()));
            return errs;
          }
          claimed_ports.push_back(static_cast<int>(h));
        }
      } else {
        auto p = alloc_->AllocatePort();
        if (!p) {
          rollback();
          errs.push_back(
              FieldError::Invalid("spec.healthCheckNodePort", 0,
                                  "failed to allocate a nodePort: " + p.error().message()));
          return errs;
        }
        claimed_ports.push_back(*p);
        spec["healthCheckNodePort"] = *p;
      }
    } else if (IntOr(spec, "healthCheckNodePort", 0) != 0) {
      errs.push_back(FieldError::Invalid(
          "spec.healthCheckNodePort", spec["healthCheckNodePort"],
          "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"));
      rollback();
      return errs;
    }
    return errs;
  }

  void Release(const Json& obj, const Json* keep) override {
    const Json& spec = SpecOf(obj);
    std::vector<std::string> keep_ips =
        keep ? ClusterIps(SpecOf(*keep)) : std::vector<std::string>{};
    std::set<int> keep_ports = keep ? NodePorts(SpecOf(*keep)) : std::set<int>{};
    for (const auto& s : ClusterIps(spec))
      if (std::find(keep_ips.begin(), keep_ips.end(), s) == keep_ips.end())
        if (auto ip = net::IpAddress::Parse(s)) alloc_->ReleaseIp(*ip);
    for (int p : NodePorts(spec))
      if (!keep_ports.count(p)) alloc_->ReleasePort(p);
  }

 private:
  static void PatchAllocatedValues(Json& spec, const Json& ospec) {
    if (NeedsClusterIp(ospec) && NeedsClusterIp(spec)) {
      bool no_ip = StrOr(spec, "clusterIP").empty();
      bool no_ips = !spec.contains("clusterIPs") || !spec["clusterIPs"].is_array() ||
                    spec["clusterIPs"].empty();
      if (no_ip && no_ips) {
        if (ospec.contains("clusterIP")) spec["clusterIP"] = ospec["clusterIP"];
        if (ospec.contains("clusterIPs")) spec["clusterIPs"] = ospec["clusterIPs"];
      } else if (no_ips && ospec.contains("clusterIPs") &&
                 StrOr(spec, "clusterIP") == StrOr(ospec, "clusterIP")) {
        spec["clusterIPs"] = ospec["clusterIPs"];
      } else if (no_ip && !no_ips) {
        spec["clusterIP"] = spec["clusterIPs"][0];
      }
      if (!spec.contains("ipFamilies") && ospec.contains("ipFamilies"))
        spec["ipFamilies"] = ospec["ipFamilies"];
      if (!spec.contains("ipFamilyPolicy") && ospec.contains("ipFamilyPolicy"))
        spec["ipFamilyPolicy"] = ospec["ipFamilyPolicy"];
    }
    if (NeedsNodePortByType(ospec) && NeedsNodePortByType(spec) && spec.contains("ports") &&
        spec["ports"].is_array()) {
      std::set<long long> used;
      for (const auto& p : spec["ports"])
        if (long long np = IntOr(p, "nodePort", 0); np) used.insert(np);
      std::map<std::string, long long> by_name;
      if (const Json* op = Find(ospec, {"ports"}); op && op->is_array())
        for (const auto& p : *op) by_name[StrOr(p, "name")] = IntOr(p, "nodePort", 0);
      for (auto& p : spec["ports"]) {
        if (!p.is_object() || IntOr(p, "nodePort", 0) != 0) continue;
        auto it = by_name.find(StrOr(p, "name"));
        if (it != by_name.end() && it->second != 0 && !used.count(it->second)) {
          p["nodePort"] = it->second;
          used.insert(it->second);
        }
      }
    }
    if (NeedsHealthCheckPort(ospec) && NeedsHealthCheckPort(spec) &&
        IntOr(spec, "healthCheckNodePort", 0) == 0 && IntOr(ospec, "healthCheckNodePort", 0) != 0)
      spec["healthCheckNodePort"] = ospec["healthCheckNodePort"];
  }

  static void DropTypeDependentFields(Json& spec, const Json& ospec) {
    if (NeedsClusterIp(ospec) && !NeedsClusterIp(spec)) {
      if (Member(spec, "clusterIPs") == Member(ospec, "clusterIPs") ||
          ClusterIps(spec) == ClusterIps(ospec)) {
        spec.erase("clusterIP");
        spec.erase("clusterIPs");
      }
      if (Member(spec, "ipFamilies") == Member(ospec, "ipFamilies")) spec.erase("ipFamilies");
      if (Member(spec, "ipFamilyPolicy") == Member(ospec, "ipFamilyPolicy"))
        spec.erase("ipFamilyPolicy");
    }
    if (NeedsNodePortByType(ospec) && !NeedsNodePortByType(spec)) {
      std::vector<long long> a, b;
      if (const Json* p = Find(spec, {"ports"}); p && p->is_array())
        for (const auto& e : *p) a.push_back(IntOr(e, "nodePort", 0));
      if (const Json* p = Find(ospec, {"ports"}); p && p->is_array())
        for (const auto& e : *p) b.push_back(IntOr(e, "nodePort", 0));
      if (a == b && spec.contains("ports") && spec["ports"].is_array())
        for (auto& e : spec["ports"])
          if (e.is_object()) e.erase("nodePort");
    }
    if (NeedsHealthCheckPort(ospec) && !NeedsHealthCheckPort(spec) &&
        IntOr(spec, "healthCheckNodePort", 0) == IntOr(ospec, "healthCheckNodePort", 0))
      spec.erase("healthCheckNodePort");
    if (IsLb(ospec) && !IsLb(spec)) {
      if (Member(spec, "allocateLoadBalancerNodePorts") ==
          Member(ospec, "allocateLoadBalancerNodePorts"))
        spec.erase("allocateLoadBalancerNodePorts");
      if (Member(spec, "loadBalancerClass") == Member(ospec, "loadBalancerClass"))
        spec.erase("loadBalancerClass");
    }
    if (ExternallyAccessible(ospec) && !ExternallyAccessible(spec) &&
        Member(spec, "externalTrafficPolicy") == Member(ospec, "externalTrafficPolicy"))
      spec.erase("externalTrafficPolicy");
  }

  ServiceAllocator* alloc_;
};

}  // namespace

std::unique_ptr<Strategy> MakeServiceStrategy(TypePtr type, ServiceAllocator* alloc) {
  return std::make_unique<ServiceStrategy>(std::move(type), alloc);
}

}  // namespace pylon::apiserver
