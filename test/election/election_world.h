// Test harness shared by the elector tests: one FakeClock, one Membership, one Elector, and an
// independent reference ordering computed with one-shot digests (no caching, no incremental
// state) to state expectations without hard-coding hash outcomes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "election/elector.h"
#include "election/hash.h"
#include "election/membership.h"
#include "support/election.h"

namespace pylon::election::testing {

inline net::IpAddress Ip(const std::string& text) {
  auto a = net::IpAddress::Parse(text);
  EXPECT_TRUE(a) << text;
  return a ? *a : net::IpAddress();
}

// Nodes in election order for `address` (lowest SHA-256 of node#address first, then by name).
inline std::vector<std::string> Order(const std::string& address, std::vector<std::string> nodes) {
  const std::string canonical = Ip(address).ToString();
  std::sort(nodes.begin(), nodes.end(), [&](const std::string& x, const std::string& y) {
    const Digest dx = *ElectionDigest(x, canonical);
    const Digest dy = *ElectionDigest(y, canonical);
    return dx != dy ? dx < dy : x < y;
  });
  return nodes;
}

class World {
 public:
  explicit World(ElectorOptions options = {}, std::unique_ptr<ElectionHasher> hasher = nullptr)
      : local_(options.local_node), elector_(MakeElector(std::move(options), std::move(hasher))) {}

  FakeClock clock;
  Membership members;

  Elector& elector() { return elector_; }

  // Observes a renewal of `node`'s lease now (a new opaque renewTime each call).
  ObserveOutcome Renew(const std::string& node, const std::string& subnets) {
    subnets_[node] = subnets;
    return Observe(node, "t" + std::to_string(++renewals_[node]));
  }
  ObserveOutcome Renew(const std::string& node) { return Renew(node, subnets_[node]); }
  ObserveOutcome RenewWithTime(const std::string& node, const std::string& renew_time) {
    return Observe(node, renew_time);
  }
  void Delete(const std::string& node) {
    members.Observe(test_support::DeletedLease(node), clock.Now());
  }
  void Address(const std::string& address, AddressSpec spec = {}) {
    elector_.SetAddress(Ip(address), spec);
  }
  // The caller saw `node` announcing `address` (what stickiness keys on).
  void Announcer(const std::string& address, const std::string& node) {
    AddressSpec spec;
    spec.current_announcer = NodeName(node);
    elector_.SetAddress(Ip(address), spec);
  }
  const ElectionResult& Eval() {
    const ElectionResult& r = elector_.Evaluate(members, clock.Now());
    CheckConsistency(r);
    return r;
  }
  // "-" when there is no winner.
  std::string Winner(const std::string& address) const {
    const NodeName* w = elector_.WinnerOf(Ip(address));
    return w ? w->str() : "-";
  }

 private:
  static Elector MakeElector(ElectorOptions options, std::unique_ptr<ElectionHasher> hasher) {
    if (hasher) return Elector(std::move(options), std::move(hasher));
    auto e = Elector::Create(std::move(options));
    EXPECT_TRUE(e);
    return std::move(*e);
  }
  ObserveOutcome Observe(const std::string& node, const std::string& renew_time) {
    return members.Observe(test_support::HeldLease(node, renew_time, subnets_[node]), clock.Now());
  }
  // local / unserved / changes agree with the per-address winners.
  void CheckConsistency(const ElectionResult& r) {
    std::vector<net::IpAddress> local, unserved;
    std::map<net::IpAddress, std::string> now;
    elector_.ForEachWinner([&](const net::IpAddress& a, const NodeName* w) {
      now[a] = w ? w->str() : "-";
      if (!w) unserved.push_back(a);
      if (w && *w == local_name()) local.push_back(a);
    });
    EXPECT_EQ(r.local, local);
    EXPECT_EQ(r.unserved, unserved);
    std::map<net::IpAddress, std::string> changed;
    for (const auto& c : r.changes) {
      EXPECT_EQ(c.after ? c.after->str() : "-", now[c.address]);
      const auto prev = previous_.find(c.address);
      EXPECT_EQ(c.before ? c.before->str() : "-",
                prev == previous_.end() ? std::string("-") : prev->second);
      changed[c.address] = now[c.address];
    }
    for (const auto& [a, w] : now) {
      const auto prev = previous_.find(a);
      const std::string before = prev == previous_.end() ? "-" : prev->second;
      EXPECT_EQ(before != w, changed.count(a) == 1) << a.ToString();
    }
    previous_ = std::move(now);
  }
  const NodeName& local_name() const { return local_; }

  NodeName local_;
  Elector elector_;
  std::map<std::string, std::string> subnets_;
  std::map<std::string, int> renewals_;
  std::map<net::IpAddress, std::string> previous_;
};

}  // namespace pylon::election::testing
