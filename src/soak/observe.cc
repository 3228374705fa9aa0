// The soak's invariants checked against the API and the wire: continuously during faults, and
// once the faults stop (SettledCheck). The judging itself is pure (checks.h).
#include "common/json.h"
#include "lab/command.h"
#include "lab/neighbor_probe.h"
#include "lab/netns.h"
#include "lab/responder.h"
#include "lab/service_state.h"
#include "soak/runner.h"

namespace pylon::soak {

Result<ApiView> Soak::ReadApi() {
  ApiView v;
  auto svcs = lab::GetJson(*lab_, {"get", "services", "-n", "default"});
  if (!svcs) return Fail(svcs.error());
  v.services = ParseServices(*svcs);
  auto groups = lab::GetJson(*lab_, {"get", "servicegroups.purelb.io", "-n", "purelb-system"});
  if (!groups) return Fail(groups.error());
  v.configs = ParseConfigs(*groups, "ServiceGroup");
  auto classes = lab::GetJson(*lab_, {"get", "loadbalancerclasses.lace-cni.io"});
  if (!classes) return Fail(classes.error());
  auto cl = ParseConfigs(*classes, "LoadBalancerClass");
  v.configs.insert(v.configs.end(), cl.begin(), cl.end());
  auto l2 = lab::GetJson(*lab_, {"get", "l2advertisements.lace-cni.io"});
  if (!l2) return Fail(l2.error());
  v.l2_node = ParseL2Advertisements(*l2);
  return v;
}

void Soak::ContinuousCheck() {
  if (!ApiUsable()) return;
  auto svcs = lab::GetJson(*lab_, {"get", "services", "-n", "default"});
  if (!svcs) return;
  const auto services = ParseServices(*svcs);
  ++checks_["addresses unchanged unless asked"];
  for (const auto& m : book_.Observe(services)) Violate(m);
  ++checks_["no unshared duplicate (continuous)"];
  const auto dups = UnsharedDuplicates(services);
  for (auto it = duplicate_since_.begin(); it != duplicate_since_.end();) {
    it = dups.count(it->first) ? std::next(it) : duplicate_since_.erase(it);
  }
  for (const auto& [ip, holders] : dups) {
    auto [it, fresh] = duplicate_since_.emplace(ip, Elapsed());
    if (!fresh && Elapsed() - it->second > static_cast<double>(o_.grace.count())) {
      std::string h;
      for (const auto& x : holders) h += " " + x;
      Violate(ip + " held by" + h + " for more than " + std::to_string(o_.grace.count()) + " s");
      it->second = Elapsed();  // reported once per grace period
    }
  }
}

std::vector<std::string> Soak::SettledCheck() {
  std::vector<std::string> fail;
  auto view = ReadApi();
  if (!view) return {"API not readable: " + view.error().message()};
  ++checks_["addresses unchanged unless asked"];
  for (const auto& m : book_.Observe(view->services)) Violate(m);

  ++checks_["no unshared duplicate"];
  for (const auto& [ip, holders] : UnsharedDuplicates(view->services)) {
    std::string h;
    for (const auto& x : holders) h += " " + x;
    fail.push_back(ip + " held by" + h);
  }
  ++checks_["config status inUse"];
  for (const auto& m : StatusMismatches(*view)) fail.push_back(m);
  for (const auto& m : PendingRequests(*view)) fail.push_back(m);

  NodeAddresses on = ReadNodeAddresses(fail);
  ++checks_["no address on a node that no Service holds"];
  for (auto& m : StrayAddresses(on, view->services)) fail.push_back(std::move(m));
  const auto local = CheckServed(*view, on, fail);
  for (auto& m : CheckWire(local)) fail.push_back(std::move(m));
  return fail;
}

NodeAddresses Soak::ReadNodeAddresses(std::vector<std::string>& fail) {
  NodeAddresses on;
  for (const auto& n : lab_->topology().nodes()) {
    std::string out;
    auto rc = lab::RunCommand({"ip", "-j", "addr", "show"}, &out, n.netns, false);
    if (!rc || *rc != 0) {
      fail.push_back("ip addr in " + n.name + " failed");
      continue;
    }
    auto j = ParseJson(out, "ip -j addr");
    if (!j) continue;
    for (const auto& link : *j) {
      const std::string ifname = FindString(link, {"ifname"}).value_or("");
      if (!link.contains("addr_info")) continue;
      for (const auto& a : link["addr_info"]) {
        const std::string ip = FindString(a, {"local"}).value_or("");
        if (!InSoakPools(ip)) continue;
        (ifname == "kube-lb0" ? on.lb : on.eth0)[ip].insert(n.name);
      }
    }
  }
  return on;
}

std::vector<std::pair<std::string, std::string>> Soak::CheckServed(const ApiView& view,
                                                                   NodeAddresses& on,
                                                                   std::vector<std::string>& fail) {
  // Served or explained; for local addresses, the announcer alone holds and answers them.
  std::map<std::string, std::string> pod_node;
  for (const auto& p : lab_->pods()) pod_node[p.service] = p.node;
  std::vector<std::pair<std::string, std::string>> local;  // ip, expected node
  for (const auto& s : view.services) {
    ++checks_["served or explained"];
    if (s.ips.empty()) {
      if (s.allocated == false && !s.reason.empty()) continue;
      fail.push_back("Service " + s.name + " has no address and no AddressAllocated=False reason");
      continue;
    }
    for (const auto& ip : s.ips) {
      if (IsVirtual(ip)) {
        if (!on.lb.count(ip)) fail.push_back(s.name + " " + ip + " on no node's kube-lb0");
        continue;
      }
      std::string node;
      if (!s.class_name.empty()) {
        auto it = view.l2_node.find(ip);
        node = it == view.l2_node.end() ? "" : it->second;
      } else {
        node = IsV6(ip) ? s.announcer_v6 : s.announcer_v4;
      }
      if (node.empty()) {
        fail.push_back(s.name + " " + ip + " has no announcing node");
        continue;
      }
      if (s.etp == "Local" && pod_node.count(s.name) && pod_node[s.name] != node) {
        fail.push_back(s.name + " " + ip + " (ETP Local) announced by " + node +
                       ", its endpoint is on " + pod_node[s.name]);
      }
      const auto& holders = on.eth0[ip];
      if (holders.size() != 1 || !holders.count(node)) {
        std::string hs;
        for (const auto& h : holders) hs += " " + h;
        fail.push_back(s.name + " " + ip + " announced by " + node +
                       ", on eth0 of:" + (hs.empty() ? " none" : hs));
      }
      local.emplace_back(ip, node);
      ++checks_["HTTP through the address"];
      bool ok = false;
      std::string err;
      for (int attempt = 0; attempt < 3 && !ok; ++attempt) {
        auto r = lab::InNetns(lab_->topology().ClientNetns(),
                              [&] { return lab::ProbeOnce(ip, s.port, Ms(500)); });
        ok = r && r->ok;
        err = r ? r->error : r.error().message();
      }
      if (!ok)
        fail.push_back(s.name + " " + ip + ":" + std::to_string(s.port) + " no answer: " + err);
    }
  }
  return local;
}

std::vector<std::string> Soak::CheckWire(
    const std::vector<std::pair<std::string, std::string>>& local) {
  auto asked = lab::InNetns(lab_->topology().ClientNetns(), [&] {
    std::vector<std::string> out;
    auto v4 = lab::NeighborProber::Open("eth0", *net::IpAddress::Parse(lab::kObserverIpv4),
                                        lab::kObserverMac);
    auto v6 = lab::NeighborProber::Open("eth0", *net::IpAddress::Parse(lab::kObserverIpv6),
                                        lab::kObserverMac);
    if (!v4 || !v6) return std::vector<std::string>{"neighbor prober: cannot open"};
    for (const auto& [ip, node] : local) {
      ++checks_["one node answers ARP/NS, the announcer"];
      auto addr = net::IpAddress::Parse(ip);
      if (!addr) continue;
      auto& prober = IsV6(ip) ? *v6 : *v4;
      Result<std::vector<packet::MacAddress>> macs = std::vector<packet::MacAddress>{};
      for (int attempt = 0; attempt < 3; ++attempt) {
        macs = prober.Ask(*addr, Ms(60));
        if (macs && macs->size() == 1) break;
      }
      if (!macs) {
        out.push_back("ARP/NS for " + ip + ": " + macs.error().message());
        continue;
      }
      std::string who;
      for (const auto& m : *macs) {
        auto it = mac_node_.find(m.ToString());
        who += " " + (it == mac_node_.end() ? m.ToString() : it->second);
      }
      if (macs->size() != 1 || (*macs)[0] != node_mac_[node]) {
        out.push_back(ip + " announced by " + node +
                      ", answered by:" + (who.empty() ? " nobody" : who));
      }
    }
    return out;
  });
  if (!asked) return {"neighbor probe: " + asked.error().message()};
  return std::move(*asked);
}

}  // namespace pylon::soak
