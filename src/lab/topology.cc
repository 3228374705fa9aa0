#include "lab/topology.h"

#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "common/log.h"
#include "lab/process.h"

namespace pylon::lab {
namespace {

constexpr const char* kPrefix = "pylon-";

Status Ip(const std::vector<std::string>& args, const std::string& netns = "") {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunCommandChecked(argv, netns);
  if (!r) return Fail(r.error());
  return Ok();
}

Status Sysctl(const std::string& netns, const std::string& key, const std::string& value) {
  auto r = RunCommandChecked({"sysctl", "-q", "-w", key + "=" + value}, netns);
  if (!r) return Fail(r.error());
  return Ok();
}

std::vector<std::string> ListNetns() {
  std::vector<std::string> out;
  DIR* d = opendir("/run/netns");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

void KillNetnsPids(const std::string& netns) {
  std::string out;
  if (!RunCommand({"ip", "netns", "pids", netns}, &out)) return;
  std::istringstream in(out);
  pid_t pid;
  while (in >> pid) kill(pid, SIGKILL);
}

}  // namespace

Status ValidateLabName(const std::string& name) {
  if (name.empty() || name.size() > 12 || !std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      })) {
    return Fail(ErrorCode::kInvalidArgument,
                "lab name \"" + name + "\" must be 1-12 characters of [a-z0-9]");
  }
  return Ok();
}

Topology::Topology(std::string lab_name, int nodes)
    : name_(std::move(lab_name)), prefix_(std::string(kPrefix) + name_ + "-") {
  for (int i = 1; i <= nodes; ++i) {
    LabNode n;
    n.name = "node" + std::to_string(i);
    n.netns = prefix_ + "n" + std::to_string(i);
    n.ipv4 = "192.0.2." + std::to_string(10 + i);
    n.ipv4_b = "198.51.100." + std::to_string(10 + i);
    n.ipv6 = "2001:db8:1::" + std::to_string(10 + i);
    n.ipv6_b = "2001:db8:f00d::" + std::to_string(10 + i);
    nodes_.push_back(n);
  }
}

bool Topology::Exists() const { return !ExistingNetns(name_).empty(); }

std::vector<std::string> Topology::ExistingNetns(const std::string& lab_name) {
  std::string p = std::string(kPrefix) + lab_name + "-";
  std::vector<std::string> out;
  for (const auto& n : ListNetns()) {
    if (n.rfind(p, 0) == 0) out.push_back(n);
  }
  return out;
}

std::vector<std::string> Topology::ExistingLabs() {
  std::set<std::string> labs;
  for (const auto& n : ListNetns()) {
    if (n.rfind(kPrefix, 0) != 0) continue;
    auto rest = n.substr(std::string(kPrefix).size());
    auto dash = rest.rfind('-');
    if (dash != std::string::npos) labs.insert(rest.substr(0, dash));
  }
  return {labs.begin(), labs.end()};
}

Status Topology::Up() {
  if (auto s = ValidateLabName(name_); !s) return s;
  if (Exists()) {
    return Fail(ErrorCode::kAlreadyExists,
                "lab \"" + name_ + "\" already exists (pylon-dev lab down --name " + name_ + ")");
  }
  auto fail = [this](const Error& e) {
    (void)Down();
    return Fail(e.Wrap("lab up"));
  };
  const std::string lan = LanNetns();
  std::vector<std::string> all = {lan, ClientNetns()};
  for (const auto& n : nodes_) all.push_back(n.netns);
  for (const auto& ns : all) {
    if (auto s = Ip({"netns", "add", ns}); !s) return fail(s.error());
    if (auto s = Ip({"link", "set", "lo", "up"}, ns); !s) return fail(s.error());
    // Addresses the lab assigns are not duplicates; skip DAD so IPv6 is usable at once.
    if (auto s = Sysctl(ns, "net.ipv6.conf.all.accept_dad", "0"); !s) return fail(s.error());
    if (auto s = Sysctl(ns, "net.ipv6.conf.default.accept_dad", "0"); !s) return fail(s.error());
  }
  // The LAN switch and the gateway (a router for both subnets, IPv4 and IPv6).
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0",
            "mcast_snooping", "0"},
           {"link", "set", "br0", "up"},
           {"addr", "add", "192.0.2.1/24", "dev", "br0"},
           {"addr", "add", "198.51.100.1/24", "dev", "br0"},
           {"addr", "add", "2001:db8:1::1/64", "dev", "br0", "nodad"},
           {"addr", "add", "2001:db8:f00d::1/64", "dev", "br0", "nodad"},
       }) {
    if (auto s = Ip(args, lan); !s) return fail(s.error());
  }
  if (auto s = Sysctl(lan, "net.ipv4.ip_forward", "1"); !s) return fail(s.error());
  if (auto s = Sysctl(lan, "net.ipv6.conf.all.forwarding", "1"); !s) return fail(s.error());

  auto attach = [&](const std::string& ns, const std::string& port) -> Status {
    if (auto s = Ip({"link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port,
                     "netns", lan});
        !s) {
      return s;
    }
    if (auto s = Ip({"link", "set", port, "master", "br0", "up"}, lan); !s) return s;
    return Ip({"link", "set", "eth0", "up"}, ns);
  };
  // Client host.
  if (auto s = attach(ClientNetns(), "client"); !s) return fail(s.error());
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"addr", "add", std::string(kClientIpv4) + "/24", "dev", "eth0"},
           {"addr", "add", "198.51.100.2/24", "dev", "eth0"},
           {"addr", "add", std::string(kClientIpv6) + "/64", "dev", "eth0", "nodad"},
           {"addr", "add", "2001:db8:f00d::2/64", "dev", "eth0", "nodad"},
           {"route", "add", "default", "via", "192.0.2.1"},
           {"-6", "route", "add", "default", "via", "2001:db8:1::1"},
       }) {
    if (auto s = Ip(args, ClientNetns()); !s) return fail(s.error());
  }
  // Nodes.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const auto& n = nodes_[i];
    if (auto s = attach(n.netns, "n" + std::to_string(i + 1)); !s) return fail(s.error());
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"addr", "add", n.ipv4 + "/24", "dev", "eth0"},
             {"addr", "add", n.ipv4_b + "/24", "dev", "eth0"},
             {"addr", "add", n.ipv6 + "/128", "dev", "eth0", "nodad"},
             {"-6", "route", "add", "2001:db8:1::/64", "dev", "eth0", "proto", "ra"},
             {"addr", "add", n.ipv6_b + "/64", "dev", "eth0", "nodad"},
             {"route", "add", "default", "via", "192.0.2.1"},
             {"-6", "route", "add", "default", "via", "2001:db8:1::1"},
         }) {
      if (auto s = Ip(args, n.netns); !s) return fail(s.error());
    }
  }
  log::Info("lab network up", {{"lab", name_}, {"nodes", std::to_string(nodes_.size())}});
  return Ok();
}

Status Topology::SetNodeLink(const LabNode& n, bool up) const {
  if (!up) return Ip({"link", "set", "eth0", "down"}, n.netns);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"link", "set", "eth0", "up"},
           // IPv6 addresses are flushed when a link goes down (keep_addr_on_down=0).
           {"addr", "replace", n.ipv6 + "/128", "dev", "eth0", "nodad"},
           {"addr", "replace", n.ipv6_b + "/64", "dev", "eth0", "nodad"},
           {"-6", "route", "replace", "2001:db8:1::/64", "dev", "eth0", "proto", "ra"},
           {"route", "replace", "default", "via", "192.0.2.1"},
           {"-6", "route", "replace", "default", "via", "2001:db8:1::1"},
       }) {
    if (auto s = Ip(args, n.netns); !s) return s;
  }
  return Ok();
}

Status Topology::AddWan() const {
  const std::string lan = LanNetns();
  const std::string wan = WanNetns();
  if (auto s = Ip({"netns", "add", wan}); !s) return s;
  if (auto s = Ip({"link", "set", "lo", "up"}, wan); !s) return s;
  if (auto s = Sysctl(wan, "net.ipv6.conf.all.accept_dad", "0"); !s) return s;
  if (auto s = Sysctl(wan, "net.ipv6.conf.default.accept_dad", "0"); !s) return s;
  if (auto s = Ip({"link", "add", "eth0", "netns", wan, "type", "veth", "peer", "name", "wan0",
                   "netns", lan});
      !s) {
    return s;
  }
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"link", "set", "wan0", "up"},
           {"addr", "add", "10.255.0.1/24", "dev", "wan0"},
           {"addr", "add", "2001:db8:ffff::1/64", "dev", "wan0", "nodad"},
       }) {
    if (auto s = Ip(args, lan); !s) return s;
  }
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"link", "set", "eth0", "up"},
           {"addr", "add", std::string(kWanClientIpv4) + "/24", "dev", "eth0"},
           {"addr", "add", std::string(kWanClientIpv6) + "/64", "dev", "eth0", "nodad"},
           {"route", "add", "default", "via", "10.255.0.1"},
           {"-6", "route", "add", "default", "via", "2001:db8:ffff::1"},
       }) {
    if (auto s = Ip(args, wan); !s) return s;
  }
  if (auto s = Sysctl(lan, "net.ipv4.fib_multipath_hash_policy", "1"); !s) return s;
  return Sysctl(lan, "net.ipv6.fib_multipath_hash_policy", "1");
}

Status Topology::SetNodePortForwarding(const LabNode& n, bool forwarding) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name != n.name) continue;
    auto r = RunCommandChecked({"bridge", "link", "set", "dev", "n" + std::to_string(i + 1),
                                "state", forwarding ? "3" : "0"},
                               LanNetns());
    if (!r) return Fail(r.error());
    return Ok();
  }
  return Fail(ErrorCode::kNotFound, "no node " + n.name);
}

Status Topology::Down() {
  auto existing = ExistingNetns(name_);
  for (const auto& ns : existing) KillNetnsPids(ns);
  std::string errors;
  for (const auto& ns : existing) {
    if (auto s = Ip({"netns", "del", ns}); !s) errors += s.error().message() + "; ";
  }
  if (!errors.empty()) return Fail(ErrorCode::kSystem, "lab down: " + errors);
  return Ok();
}

}  // namespace pylon::lab
