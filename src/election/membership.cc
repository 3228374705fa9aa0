#include "election/membership.h"

#include <algorithm>

#include "election/macs_annotation.h"
#include "election/subnets_annotation.h"

namespace pylon::election {
namespace {

std::string Seconds(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + "s";
}

std::size_t StringHeap(const std::string& s) {
  // Short strings live inline (SSO); only longer ones own heap memory.
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

}  // namespace

Duration Membership::EffectiveDuration(const std::optional<std::int64_t>& seconds,
                                       std::vector<std::string>& issues) const {
  if (!seconds || *seconds <= 0) {
    issues.push_back("leaseDurationSeconds " +
                     (seconds ? std::to_string(*seconds) : std::string("absent")) +
                     ": using the default " + Seconds(options_.default_lease_duration));
    return options_.default_lease_duration;
  }
  const auto max_s =
      std::chrono::duration_cast<std::chrono::seconds>(options_.max_lease_duration).count();
  if (*seconds > max_s) {
    issues.push_back("leaseDurationSeconds " + std::to_string(*seconds) + " clamped to " +
                     Seconds(options_.max_lease_duration));
    return options_.max_lease_duration;
  }
  return std::chrono::seconds(*seconds);
}

ObserveOutcome Membership::Observe(const LeaseObservation& obs, SteadyTime observed_at) {
  ObserveOutcome out;
  auto it = members_.find(obs.node);
  if (obs.deleted) {
    if (it != members_.end()) {
      members_.erase(it);
      out.left = true;
      ++generation_;
    }
    return out;
  }

  if (it == members_.end()) {
    Member m;
    m.name = obs.node;
    m.holder_identity = obs.holder_identity;
    m.lease_duration_seconds = obs.lease_duration_seconds;
    m.renew_time = obs.renew_time;
    m.lease_duration = EffectiveDuration(obs.lease_duration_seconds, out.issues);
    m.last_change = observed_at;
    m.subnets_annotation = obs.subnets_annotation;
    auto parsed = ParseSubnetsAnnotation(obs.subnets_annotation);
    m.subnets = std::move(parsed.subnets);
    m.subnet_issues = parsed.issues;
    out.issues.insert(out.issues.end(), parsed.issues.begin(), parsed.issues.end());
    m.macs_annotation = obs.macs_annotation;
    auto macs = ParseMacsAnnotation(obs.macs_annotation);
    m.macs = std::move(macs.macs);
    out.issues.insert(out.issues.end(), macs.issues.begin(), macs.issues.end());
    m.version = next_version_++;
    members_.emplace(obs.node, std::move(m));
    out.joined = true;
    ++generation_;
    return out;
  }

  Member& m = it->second;
  const bool spec_changed = m.holder_identity != obs.holder_identity ||
                            m.lease_duration_seconds != obs.lease_duration_seconds ||
                            m.renew_time != obs.renew_time;
  if (spec_changed) {
    if (m.lease_duration_seconds != obs.lease_duration_seconds) {
      m.lease_duration = EffectiveDuration(obs.lease_duration_seconds, out.issues);
      m.lease_duration_seconds = obs.lease_duration_seconds;
    }
    m.holder_identity = obs.holder_identity;
    m.renew_time = obs.renew_time;
    m.last_change = std::max(m.last_change, observed_at);
    out.renewed = true;
  }
  if (m.macs_annotation != obs.macs_annotation) {
    m.macs_annotation = obs.macs_annotation;
    auto macs = ParseMacsAnnotation(obs.macs_annotation);
    m.macs = std::move(macs.macs);
    out.issues.insert(out.issues.end(), macs.issues.begin(), macs.issues.end());
  }
  if (m.subnets_annotation != obs.subnets_annotation) {
    m.subnets_annotation = obs.subnets_annotation;
    auto parsed = ParseSubnetsAnnotation(obs.subnets_annotation);
    out.issues.insert(out.issues.end(), parsed.issues.begin(), parsed.issues.end());
    m.subnet_issues = std::move(parsed.issues);
    if (parsed.subnets != m.subnets) {
      m.subnets = std::move(parsed.subnets);
      m.version = next_version_++;
      out.subnets_changed = true;
      ++generation_;
    }
  }
  return out;
}

void Membership::SetOverride(const NodeName& node, LivenessOverride override_value) {
  overrides_[node] = override_value;
}

void Membership::ClearOverride(const NodeName& node) { overrides_.erase(node); }

std::optional<LivenessOverride> Membership::OverrideFor(const NodeName& node,
                                                        SteadyTime now) const {
  auto it = overrides_.find(node);
  if (it == overrides_.end() || !it->second.ActiveAt(now)) return std::nullopt;
  return it->second;
}

bool Membership::IsLive(const Member& member, SteadyTime now) const {
  if (member.released()) return false;
  if (!overrides_.empty()) {
    if (auto o = OverrideFor(member.name, now)) return o->state == Liveness::kAlive;
  }
  return now < member.lease_expiry();
}

bool Membership::IsLive(const NodeName& node, SteadyTime now) const {
  const Member* m = Find(node);
  return m != nullptr && IsLive(*m, now);
}

const Member* Membership::Find(const NodeName& node) const {
  auto it = members_.find(node);
  return it == members_.end() ? nullptr : &it->second;
}

std::size_t Membership::LiveCount(SteadyTime now) const {
  std::size_t n = 0;
  for (const auto& [name, m] : members_) n += IsLive(m, now) ? 1 : 0;
  return n;
}

std::vector<NodeName> Membership::LiveMembers(SteadyTime now) const {
  std::vector<NodeName> out;
  for (const auto& [name, m] : members_) {
    if (IsLive(m, now)) out.push_back(name);
  }
  return out;
}

std::optional<SteadyTime> Membership::NextExpiry(SteadyTime now) const {
  std::optional<SteadyTime> next;
  auto consider = [&](SteadyTime t) {
    if (t > now && (!next || t < *next)) next = t;
  };
  for (const auto& [name, m] : members_) {
    if (m.released()) continue;  // stays dead until its spec changes
    auto o = overrides_.empty() ? std::nullopt : OverrideFor(name, now);
    if (o) {
      // The override decides until it lapses; after that the lease does (and may expire later).
      if (o->until) consider(*o->until);
    } else {
      consider(m.lease_expiry());
    }
  }
  return next;
}

std::size_t Membership::MemoryBytes() const {
  // A std::map node carries three pointers and a colour word besides the value.
  constexpr std::size_t kMapNode = 32;
  std::size_t bytes = sizeof(*this);
  for (const auto& [name, m] : members_) {
    bytes += kMapNode + sizeof(NodeName) + sizeof(Member);
    bytes += StringHeap(name.str()) + StringHeap(m.name.str()) + StringHeap(m.holder_identity) +
             StringHeap(m.renew_time) + StringHeap(m.subnets_annotation) +
             StringHeap(m.macs_annotation);
    for (const auto& mac : m.macs) bytes += sizeof(std::string) + StringHeap(mac);
    bytes += m.subnets.capacity() * sizeof(net::Prefix);
    for (const auto& issue : m.subnet_issues) bytes += sizeof(std::string) + StringHeap(issue);
  }
  bytes += overrides_.size() * (kMapNode + sizeof(NodeName) + sizeof(LivenessOverride));
  return bytes;
}

}  // namespace pylon::election
