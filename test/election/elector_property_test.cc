// Random walks of membership, liveness, overrides, exclusions and address specs, checked after
// every Evaluate against a from-scratch reference election (no caches, one-shot digests). This is
// what guards the incremental caches of the Elector.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "election/elector.h"
#include "election/subnets_annotation.h"
#include "election_world.h"

namespace pylon::election {
namespace {

using testing::Ip;
using testing::World;

const std::vector<std::string> kNodes = {"n0", "n1", "n2", "n3", "n4", "n5"};
const std::vector<std::string> kAddresses = {"192.0.2.1",      "192.0.2.100",      "192.0.2.200",
                                             "198.51.100.1",   "198.51.100.9",     "2001:db8::1",
                                             "2001:db8::ffff", "2001:db8:0:1::1",  "2001:db8:1::5",
                                             "203.0.113.1",    "2001:db8:ffff::1", "192.0.2.127"};
const std::vector<std::string> kAnnotations = {"192.0.2.0/24",
                                               "192.0.2.0/25",
                                               "192.0.2.128/25,2001:db8::/64",
                                               "2001:db8::/64",
                                               "198.51.100.0/24,2001:db8:1::/64",
                                               "192.0.2.0/24,2001:db8::/48",
                                               "bogus,198.51.100.0/24",
                                               "",
                                               "192.0.2.0/23,192.0.2.0/24"};

struct Spec {
  std::optional<std::string> announcer;
  std::optional<std::set<std::string>> allowed;
};

std::string Reference(const World& w, const std::string& address, const Spec& spec,
                      const std::set<std::string>& excluded, Stickiness stickiness) {
  const net::IpAddress ip = Ip(address);
  const auto now = w.clock.Now();
  std::vector<std::string> candidates;
  for (const auto& [name, m] : w.members.members()) {
    if (!w.members.IsLive(m, now) || excluded.count(name.str())) continue;
    if (spec.allowed && !spec.allowed->count(name.str())) continue;
    bool on_subnet = false;
    for (const auto& p : m.subnets) on_subnet = on_subnet || p.Contains(ip);
    if (on_subnet) candidates.push_back(name.str());
  }
  if (candidates.empty()) return "-";
  if (stickiness == Stickiness::kSticky && spec.announcer &&
      std::find(candidates.begin(), candidates.end(), *spec.announcer) != candidates.end()) {
    return *spec.announcer;
  }
  return testing::Order(address, candidates)[0];
}

RC_GTEST_PROP(ElectorProperty, IncrementalMatchesFromScratch, ()) {
  const auto depth = *rc::gen::inRange<std::size_t>(1, 4);
  Stickiness stickiness = *rc::gen::element(Stickiness::kSticky, Stickiness::kPreemptive);
  World w(ElectorOptions{NodeName("n0"), stickiness, depth});
  std::map<std::string, Spec> specs;
  std::set<std::string> excluded;
  const int steps = *rc::gen::inRange(10, 60);
  for (int step = 0; step < steps; ++step) {
    const int op = *rc::gen::inRange(0, 11);
    const std::string node = *rc::gen::elementOf(kNodes);
    const std::string address = *rc::gen::elementOf(kAddresses);
    switch (op) {
      case 0:
        w.Renew(node, *rc::gen::elementOf(kAnnotations));
        break;
      case 1:
      case 2:
        w.Renew(node);
        break;
      case 3:
        w.Delete(node);
        break;
      case 4: {
        const int secs = *rc::gen::element(0, 1, 4, 9, 10, 11);
        w.clock.Advance(std::chrono::seconds(secs));
        if (*rc::gen::arbitrary<bool>()) {
          if (auto next = w.members.NextExpiry(w.clock.Now())) {
            w.clock.Advance(*next - w.clock.Now());
          }
        }
        break;
      }
      case 5:
        if (*rc::gen::arbitrary<bool>()) {
          w.members.ClearOverride(NodeName(node));
        } else {
          LivenessOverride o;
          o.state = *rc::gen::element(Liveness::kAlive, Liveness::kDead);
          if (*rc::gen::arbitrary<bool>()) {
            o.until = w.clock.Now() + std::chrono::seconds(*rc::gen::inRange(1, 20));
          }
          w.members.SetOverride(NodeName(node), o);
        }
        break;
      case 6:
      case 7: {
        Spec s;
        AddressSpec as;
        if (*rc::gen::arbitrary<bool>()) {
          s.announcer = node;
          as.current_announcer = NodeName(node);
        }
        if (*rc::gen::inRange(0, 4) == 0) {
          s.allowed.emplace();
          as.allowed_nodes.emplace();
          for (const auto& n : kNodes) {
            if (*rc::gen::arbitrary<bool>()) {
              s.allowed->insert(n);
              as.allowed_nodes->push_back(NodeName(n));
            }
          }
        }
        specs[address] = s;
        w.elector().SetAddress(Ip(address), as);
        break;
      }
      case 8:
        specs.erase(address);
        w.elector().RemoveAddress(Ip(address));
        break;
      case 9: {
        excluded.clear();
        std::vector<NodeName> names;
        for (const auto& n : kNodes) {
          if (*rc::gen::inRange(0, 4) == 0) {
            excluded.insert(n);
            names.push_back(NodeName(n));
          }
        }
        w.elector().SetExcludedNodes(names);
        break;
      }
      case 10:
        stickiness =
            stickiness == Stickiness::kSticky ? Stickiness::kPreemptive : Stickiness::kSticky;
        w.elector().SetStickiness(stickiness);
        break;
    }
    if (*rc::gen::inRange(0, 3) == 0) continue;  // batch some changes into one Evaluate
    w.Eval();
    for (const auto& [a, spec] : specs) {
      RC_ASSERT(w.Winner(a) == Reference(w, a, spec, excluded, stickiness));
    }
  }
}

}  // namespace
}  // namespace pylon::election
