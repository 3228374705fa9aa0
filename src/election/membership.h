// Membership: which nodes take part in the election, built from observed node leases, with
// liveness judged on the LOCAL steady clock only.
//
// A member is live at `now` while
//     last_change + lease_duration > now
// where last_change is the local steady time at which this agent last saw the lease spec
// (holderIdentity, leaseDurationSeconds, renewTime) change. The remote renewTime is compared for
// equality only, never with a local clock, so clock skew between nodes cannot split views
// (PureLB's bug). A lease seen for the first time counts as renewed at that moment: after an agent
// restart a dead node looks live for at most one lease duration.
//
// A deleted lease removes the member at once (graceful shutdown). A lease whose holderIdentity is
// empty has been released by its holder and is not live. An external failure detector (e.g. UDP
// heartbeats) may override liveness per node — dead sooner, or alive while the lease is stale —
// but never creates or removes members: the lease stays the source of membership.
//
// Pure and single-threaded: the caller feeds observations and times; nothing here reads a clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "election/node_name.h"
#include "net/ip.h"

namespace pylon::election {

// What the Kubernetes adapter saw of one node lease (an informer add/update/delete).
struct LeaseObservation {
  NodeName node;                                       // from the lease name, see NodeFromLeaseName
  std::string holder_identity;                         // opaque; empty = released
  std::optional<std::int64_t> lease_duration_seconds;  // absent or <= 0: the default applies
  std::string renew_time;  // opaque: compared for change, never parsed or compared with a clock
  std::string subnets_annotation;  // the `purelb.io/subnets` value, see subnets_annotation.h
  std::string macs_annotation;     // the `purelb.io/macs` value, see macs_annotation.h
  bool deleted = false;            // the lease is gone: the member leaves at once
};

struct MembershipOptions {
  // Used when leaseDurationSeconds is absent or not positive (PURELB_LEASE_DURATION default).
  Duration default_lease_duration = std::chrono::seconds(10);
  // Upper clamp: a buggy writer must not keep a dead node live for days.
  Duration max_lease_duration = std::chrono::minutes(5);
};

struct Member {
  NodeName name;
  std::string holder_identity;
  std::optional<std::int64_t> lease_duration_seconds;  // as observed
  std::string renew_time;
  Duration lease_duration{};               // effective (defaulted / clamped)
  SteadyTime last_change{};                // local time the spec was last seen to change
  std::string subnets_annotation;          // raw value, reparsed only when it changes
  std::vector<net::Prefix> subnets;        // masked, sorted, deduplicated
  std::vector<std::string> subnet_issues;  // from the last parse of subnets_annotation
  std::string macs_annotation;             // raw value, reparsed only when it changes
  // The node's announcing interfaces' MACs (lower case, sorted): answers from them to a
  // duplicate-address probe are the cluster's own, never a conflict. Not part of the election.
  std::vector<std::string> macs;
  // Changes whenever `subnets` changes or the member is (re)created; unique across members.
  std::uint64_t version = 0;

  SteadyTime lease_expiry() const { return last_change + lease_duration; }
  bool released() const { return holder_identity.empty(); }
};

enum class Liveness : std::uint8_t { kAlive, kDead };

// A failure detector's verdict on a node, optionally valid only until a local steady instant.
struct LivenessOverride {
  Liveness state = Liveness::kDead;
  std::optional<SteadyTime> until;  // nullopt: until cleared
  bool ActiveAt(SteadyTime now) const { return !until || now < *until; }
};

struct ObserveOutcome {
  bool joined = false;           // a new member
  bool left = false;             // a member removed (lease deleted)
  bool renewed = false;          // the lease spec changed (liveness restarted)
  bool subnets_changed = false;  // the member's parsed subnet list changed
  // Problems in this observation (bad subnet entries, bad duration). Reported only when the
  // offending value first appears or changes, so a renewal every 2 s does not repeat them.
  std::vector<std::string> issues;

  // Join, leave or subnet change: the elector has candidates to add or drop.
  bool membership_changed() const { return joined || left || subnets_changed; }
};

class Membership {
 public:
  explicit Membership(MembershipOptions options = {}) : options_(options) {}

  // Feeds one observation made at local steady time `observed_at`. Times must not go backwards
  // per member; an earlier time than already recorded is treated as the recorded one.
  ObserveOutcome Observe(const LeaseObservation& observation, SteadyTime observed_at);

  // Failure-detector hook. Overrides are kept per node name whether or not it is a member, and
  // take effect only while the node is a member; they never outlive ClearOverride or `until`.
  void SetOverride(const NodeName& node, LivenessOverride override_value);
  void ClearOverride(const NodeName& node);
  std::optional<LivenessOverride> OverrideFor(const NodeName& node, SteadyTime now) const;

  // Whether `node` is a member that is live at `now` (see the file comment for the rule).
  bool IsLive(const NodeName& node, SteadyTime now) const;
  bool IsLive(const Member& member, SteadyTime now) const;

  const Member* Find(const NodeName& node) const;
  // All members, live or not, ordered by name.
  const std::map<NodeName, Member>& members() const { return members_; }
  std::size_t size() const { return members_.size(); }
  std::size_t LiveCount(SteadyTime now) const;
  std::vector<NodeName> LiveMembers(SteadyTime now) const;

  // The earliest instant after `now` at which some member's liveness may change by the passage of
  // time alone (a lease expiring, an override lapsing), or nullopt if none can. Schedule the next
  // evaluation exactly then; no polling. O(members).
  std::optional<SteadyTime> NextExpiry(SteadyTime now) const;

  // Bumped on every join, leave or subnet change (not on renewals).
  std::uint64_t generation() const { return generation_; }

  // Approximate heap + inline bytes held.
  std::size_t MemoryBytes() const;

 private:
  Duration EffectiveDuration(const std::optional<std::int64_t>& seconds,
                             std::vector<std::string>& issues) const;

  MembershipOptions options_;
  std::map<NodeName, Member> members_;
  std::map<NodeName, LivenessOverride> overrides_;
  std::uint64_t generation_ = 0;
  std::uint64_t next_version_ = 1;
};

}  // namespace pylon::election
