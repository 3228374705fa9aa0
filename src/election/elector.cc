#include "election/elector.h"

#include <algorithm>
#include <utility>

namespace pylon::election {
namespace {

std::size_t StringHeap(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

bool AnyContains(const std::vector<net::Prefix>& subnets, const net::IpAddress& a) {
  for (const auto& p : subnets) {
    if (p.Contains(a)) return true;
  }
  return false;
}

}  // namespace

bool Elector::PrefixOrder::operator()(const net::Prefix& a, const net::Prefix& b) const {
  if (a.address() != b.address()) return a.address() < b.address();
  return a.length() < b.length();
}

Result<Elector> Elector::Create(ElectorOptions options) {
  auto hasher = Sha256Hasher::Create();
  if (!hasher) return Fail(hasher.error());
  return Elector(std::move(options), std::move(*hasher));
}

Elector::Elector(ElectorOptions options, std::unique_ptr<ElectionHasher> hasher)
    : options_(std::move(options)), hasher_(std::move(hasher)) {
  options_.cache_depth = std::max<std::size_t>(options_.cache_depth, 1);
}
Elector::Elector(Elector&&) noexcept = default;
Elector& Elector::operator=(Elector&&) noexcept = default;
Elector::~Elector() = default;

Elector::NodeId Elector::Intern(const NodeName& name) {
  auto [it, inserted] = node_ids_.try_emplace(name, static_cast<NodeId>(nodes_.size()));
  if (inserted) {
    nodes_.emplace_back();
    nodes_.back().name = name;
  }
  return it->second;
}

const NodeName* Elector::NameOf(NodeId id) const {
  return id == kNoNode ? nullptr : &nodes_[id].name;
}

void Elector::SetAddress(const net::IpAddress& address, const AddressSpec& spec) {
  auto [it, inserted] = addresses_.try_emplace(address);
  AddressState& a = it->second;
  if (inserted) {
    a.address = address;
    a.text = address.ToString();
    if (auto r = removed_winners_.find(address); r != removed_winners_.end()) {
      a.winner = r->second;
      removed_winners_.erase(r);
    }
  }
  const NodeId announcer = spec.current_announcer ? Intern(*spec.current_announcer) : kNoNode;
  if (inserted || announcer != a.announcer) inputs_changed_ = true;
  a.announcer = announcer;
  std::vector<NodeId> allowed;
  if (spec.allowed_nodes) {
    allowed.reserve(spec.allowed_nodes->size());
    for (const auto& n : *spec.allowed_nodes) allowed.push_back(Intern(n));
    std::sort(allowed.begin(), allowed.end());
    allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  }
  const bool restricted = spec.allowed_nodes.has_value();
  if (restricted != a.restricted || allowed != a.allowed) {
    a.restricted = restricted;
    a.allowed = std::move(allowed);
    a.dirty = true;  // U(a) changed wholesale
    inputs_changed_ = true;
  }
}

bool Elector::RemoveAddress(const net::IpAddress& address) {
  auto it = addresses_.find(address);
  if (it == addresses_.end()) return false;
  if (it->second.winner != kNoNode) removed_winners_[address] = it->second.winner;
  addresses_.erase(it);
  inputs_changed_ = true;
  return true;
}

void Elector::SetExcludedNodes(std::span<const NodeName> nodes) {
  for (auto& n : nodes_) n.excluded = false;
  for (const auto& name : nodes) nodes_[Intern(name)].excluded = true;
}

void Elector::SetStickiness(Stickiness stickiness) {
  inputs_changed_ = inputs_changed_ || stickiness != options_.stickiness;
  options_.stickiness = stickiness;
}

bool Elector::Allowed(NodeId id, const AddressState& a) const {
  return !a.restricted || std::binary_search(a.allowed.begin(), a.allowed.end(), id);
}

bool Elector::InUniverse(NodeId id, const AddressState& a) const {
  const NodeState& n = nodes_[id];
  return n.member && Allowed(id, a) && AnyContains(n.subnets, a.address);
}

bool Elector::FreshTouches(const AddressState& a) const {
  for (NodeId id : fresh_) {
    if (InUniverse(id, a)) return true;
  }
  return false;
}

Elector::CacheEntry Elector::MakeEntry(NodeId id, const AddressState& a) {
  ++hash_count_;
  return CacheEntry{DigestRank(hasher_->Hash(nodes_[id].name.str(), a.text)), id};
}

// Election order: digest (its first 64 bits decide almost always; the rest on a tie), then name.
bool Elector::Less(const CacheEntry& x, const CacheEntry& y, const AddressState& a) {
  if (x.rank != y.rank) return x.rank < y.rank;
  if (x.node == y.node) return false;
  const NodeName& nx = nodes_[x.node].name;
  const NodeName& ny = nodes_[y.node].name;
  const Digest dx = hasher_->Hash(nx.str(), a.text);
  const Digest dy = hasher_->Hash(ny.str(), a.text);
  if (dx != dy) return dx < dy;
  return nx < ny;
}

void Elector::CacheInsert(AddressState& a, NodeId id) {
  if (a.dirty) return;                         // rebuilt from scratch on Evaluate
  if (!a.complete && a.cache.empty()) return;  // nothing known to compare with; refill decides
  const CacheEntry e = MakeEntry(id, a);
  if (!a.complete && !Less(e, a.cache.back(), a)) return;  // ranks beyond the known prefix
  const std::size_t cap = std::max(options_.cache_depth, a.cache.size());
  auto pos =
      std::lower_bound(a.cache.begin(), a.cache.end(), e,
                       [&](const CacheEntry& x, const CacheEntry& y) { return Less(x, y, a); });
  a.cache.insert(pos, e);
  if (a.cache.size() > cap) {
    a.cache.pop_back();
    a.complete = false;
  }
}

bool Elector::ApplySubnets(NodeId id, std::vector<net::Prefix> subnets) {
  NodeState& n = nodes_[id];
  if (subnets == n.subnets) return false;
  std::vector<net::Prefix> old = std::move(n.subnets);
  n.subnets = std::move(subnets);
  n.subnets_changed = true;

  for (const auto& p : old) {
    if (std::find(n.subnets.begin(), n.subnets.end(), p) != n.subnets.end()) continue;
    auto it = subnet_nodes_.find(p);
    if (it == subnet_nodes_.end()) continue;
    auto& ids = it->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) subnet_nodes_.erase(it);
  }
  for (const auto& p : n.subnets) {
    if (std::find(old.begin(), old.end(), p) != old.end()) continue;
    auto& ids = subnet_nodes_[p];
    ids.insert(std::lower_bound(ids.begin(), ids.end(), id), id);
  }

  // Every address whose membership in U(a) may change lies in one of the old or new subnets;
  // addresses are ordered, so each subnet is one contiguous run of the address map.
  ++stamp_;
  auto visit = [&](const net::Prefix& p) {
    auto it = addresses_.lower_bound(p.Network());
    const net::IpAddress last = p.Broadcast();
    for (; it != addresses_.end() && it->first <= last; ++it) {
      AddressState& a = it->second;
      if (a.stamp == stamp_) continue;
      a.stamp = stamp_;
      if (!Allowed(id, a)) continue;
      const bool was_in = AnyContains(old, a.address);
      const bool is_in = AnyContains(n.subnets, a.address);
      // A node leaving U(a) stays in the cache as a tombstone (skipped by Elect): its rank is
      // still right if it returns, so a restart or flap neither shrinks the cache nor rehashes.
      if (!was_in && is_in) CacheInsert(a, id);
    }
  };
  for (const auto& p : old) visit(p);
  for (const auto& p : n.subnets) visit(p);
  return true;
}

void Elector::Refill(AddressState& a) {
  a.dirty = false;
  // Enumerate U(a) once, deduplicated (a node may report two subnets that both contain a).
  ++stamp_;
  std::vector<NodeId> ids;
  auto take = [&](NodeId id) {
    NodeState& n = nodes_[id];
    if (n.stamp == stamp_) return;
    n.stamp = stamp_;
    if (InUniverse(id, a)) ids.push_back(id);
  };
  if (a.restricted) {
    for (NodeId id : a.allowed) take(id);
  } else {
    for (const auto& [prefix, nodes] : subnet_nodes_) {
      if (!prefix.Contains(a.address)) continue;
      for (NodeId id : nodes) take(id);
    }
  }
  std::vector<CacheEntry> entries;
  entries.reserve(ids.size());
  for (NodeId id : ids) entries.push_back(MakeEntry(id, a));
  auto less = [&](const CacheEntry& x, const CacheEntry& y) { return Less(x, y, a); };

  // Keep the prefix up to the best candidate plus cache_depth entries after it.
  const CacheEntry* best = nullptr;
  for (const auto& e : entries) {
    if (nodes_[e.node].candidate && (best == nullptr || less(e, *best))) best = &e;
  }
  std::size_t keep = options_.cache_depth;
  if (best != nullptr) {
    const CacheEntry pivot = *best;
    std::size_t before = 0;
    for (const auto& e : entries) before += less(e, pivot) ? 1 : 0;
    keep = before + 1 + options_.cache_depth;
  }
  keep = std::min(keep, entries.size());
  std::partial_sort(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(keep),
                    entries.end(), less);
  a.complete = keep == entries.size();
  entries.resize(keep);
  a.cache = std::move(entries);
  a.cache.shrink_to_fit();
}

Elector::NodeId Elector::Elect(AddressState& a) {
  const bool refilled = a.dirty;
  if (a.dirty) Refill(a);
  if (options_.stickiness == Stickiness::kSticky && a.announcer != kNoNode &&
      nodes_[a.announcer].candidate && InUniverse(a.announcer, a)) {
    return a.announcer;
  }
  auto first_candidate = [&]() -> NodeId {
    for (const auto& e : a.cache) {
      if (nodes_[e.node].candidate && InUniverse(e.node, a)) return e.node;
    }
    return kNoNode;
  };
  const NodeId w = first_candidate();
  if (w != kNoNode || a.complete || refilled) return w;
  // Nothing in the cached prefix can win; a candidate may lie beyond it. If the address had no
  // winner last time, U(a) held no candidate then, so only a node that became one since can win:
  // without such a node, skip the rehash (keeps a cluster-wide outage from costing a full
  // election on every Evaluate).
  if (a.winner == kNoNode && !FreshTouches(a)) return kNoNode;
  Refill(a);
  return first_candidate();
}

bool Elector::Sync(const Membership& membership, SteadyTime now) {
  bool changed = false;
  ++stamp_;
  const std::uint64_t seen = stamp_;
  std::vector<std::pair<NodeId, const Member*>> present;
  present.reserve(membership.size());
  for (const auto& [name, m] : membership.members()) {
    const NodeId id = Intern(name);
    nodes_[id].stamp = seen;
    present.emplace_back(id, &m);
  }
  // Departures first, then joins and subnet changes. ApplySubnets reuses stamp_, so the sweep
  // mark is read before any of them runs.
  std::vector<NodeId> gone;
  for (NodeId id = 0; id < nodes_.size(); ++id) {
    if (nodes_[id].member && nodes_[id].stamp != seen) gone.push_back(id);
  }
  changed = !gone.empty();
  for (NodeId id : gone) {
    ApplySubnets(id, {});
    nodes_[id].member = false;
    nodes_[id].version = 0;
  }
  for (auto [id, m] : present) {
    NodeState& n = nodes_[id];
    if (!n.member || n.version != m->version) {
      n.member = true;
      n.version = m->version;
      changed = ApplySubnets(id, m->subnets) || changed;
    }
  }
  // Liveness at `now`, and who became a candidate since the last Evaluate.
  fresh_.clear();
  std::vector<bool> live(nodes_.size(), false);
  for (auto [id, m] : present) live[id] = membership.IsLive(*m, now);
  for (NodeId id = 0; id < nodes_.size(); ++id) {
    NodeState& n = nodes_[id];
    const bool was = n.candidate;
    n.candidate = n.member && live[id] && !n.excluded;
    if (n.candidate && (!was || n.subnets_changed)) fresh_.push_back(id);
    changed = changed || was != n.candidate;
    n.subnets_changed = false;
  }
  return changed;
}

const ElectionResult& Elector::Evaluate(const Membership& membership, SteadyTime now) {
  const std::uint64_t hashes_before = hash_count_;
  const bool membership_changed = Sync(membership, now);
  if (!membership_changed && !inputs_changed_ && evaluated_) {
    // Same candidates, same inputs: the same winners (e.g. a renewal of a live member).
    result_.changes.clear();
    result_.hashes = hash_count_ - hashes_before;
    return result_;
  }
  inputs_changed_ = false;
  evaluated_ = true;
  removed_winners_.clear();
  result_ = ElectionResult{};
  const NodeId local = [&] {
    auto it = node_ids_.find(options_.local_node);
    return it == node_ids_.end() ? kNoNode : it->second;
  }();
  for (auto& [address, a] : addresses_) {
    const NodeId w = Elect(a);
    if (w != a.winner) {
      WinnerChange c{address, std::nullopt, std::nullopt};
      if (a.winner != kNoNode) c.before = nodes_[a.winner].name;
      if (w != kNoNode) c.after = nodes_[w].name;
      result_.changes.push_back(std::move(c));
      a.winner = w;
    }
    if (w == kNoNode) {
      result_.unserved.push_back(address);
    } else if (w == local) {
      result_.local.push_back(address);
    }
  }
  result_.hashes = hash_count_ - hashes_before;
  return result_;
}

const NodeName* Elector::WinnerOf(const net::IpAddress& address) const {
  auto it = addresses_.find(address);
  return it == addresses_.end() ? nullptr : NameOf(it->second.winner);
}

std::vector<net::IpAddress> Elector::AddressesWonBy(const NodeName& node) const {
  std::vector<net::IpAddress> out;
  auto id = node_ids_.find(node);
  if (id == node_ids_.end()) return out;
  for (const auto& [address, a] : addresses_) {
    if (a.winner == id->second) out.push_back(address);
  }
  return out;
}

std::size_t Elector::address_count() const { return addresses_.size(); }

std::size_t Elector::MemoryBytes() const {
  constexpr std::size_t kMapNode = 32;   // tree links and colour, per std::map entry
  constexpr std::size_t kHashNode = 24;  // next pointer, cached hash, bucket slot
  std::size_t bytes = sizeof(*this);
  constexpr std::size_t kMallocChunk = 16;  // glibc header + rounding, per heap block
  for (const auto& [address, a] : addresses_) {
    bytes += kMallocChunk + kMapNode + sizeof(net::IpAddress) + sizeof(AddressState) +
             StringHeap(a.text);
    if (a.cache.capacity() > 0) bytes += kMallocChunk + a.cache.capacity() * sizeof(CacheEntry);
    if (a.allowed.capacity() > 0) bytes += kMallocChunk + a.allowed.capacity() * sizeof(NodeId);
  }
  bytes += nodes_.capacity() * sizeof(NodeState);
  for (const auto& n : nodes_) {
    bytes += StringHeap(n.name.str()) + n.subnets.capacity() * sizeof(net::Prefix);
  }
  for (const auto& [name, id] : node_ids_) {
    bytes += kHashNode + sizeof(NodeName) + sizeof(NodeId) + StringHeap(name.str());
  }
  for (const auto& [prefix, ids] : subnet_nodes_) {
    // sizeof(ids) is meant: the vector object itself, its elements are counted next.
    bytes += kMapNode + sizeof(net::Prefix) + sizeof(ids);  // NOLINT(bugprone-sizeof-container)
    bytes += ids.capacity() * sizeof(NodeId);
  }
  bytes += fresh_.capacity() * sizeof(NodeId);
  bytes +=
      removed_winners_.size() * (kMallocChunk + kMapNode + sizeof(net::IpAddress) + sizeof(NodeId));
  bytes += (result_.local.capacity() + result_.unserved.capacity()) * sizeof(net::IpAddress);
  bytes += result_.changes.capacity() * sizeof(WinnerChange);
  for (const auto& c : result_.changes) {
    if (c.before) bytes += StringHeap(c.before->str());
    if (c.after) bytes += StringHeap(c.after->str());
  }
  return bytes;
}

}  // namespace pylon::election
