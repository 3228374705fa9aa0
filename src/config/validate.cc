#include "config/validate.h"

#include <algorithm>
#include <exception>
#include <set>
#include <tuple>

#include "config/json_util.h"
#include "config/parse.h"

namespace pylon::config {

using net::AddressRange;
using net::Family;
using net::IpAddress;
using net::Uint128;

const Group* InForceConfig::Find(const ConfigKey& key) const {
  auto it = groups_.find(key);
  return it == groups_.end() ? nullptr : &it->second;
}

const Group* InForceConfig::FindServiceGroup(std::string_view ns, std::string_view name) const {
  return Find(ConfigKey{ObjectKind::kServiceGroup, std::string(ns), std::string(name)});
}

const Group* InForceConfig::FindClass(std::string_view name) const {
  return Find(ConfigKey{ObjectKind::kLoadBalancerClass, "", std::string(name)});
}

std::optional<AddressMatch> InForceConfig::FindAddress(const IpAddress& address) const {
  const auto& index = address.is_v4() ? index_v4_ : index_v6_;
  auto it =
      std::upper_bound(index.begin(), index.end(), address,
                       [](const IpAddress& a, const IndexEntry& e) { return a < e.range.first(); });
  if (it == index.begin()) return std::nullopt;
  --it;
  if (!it->range.Contains(address)) return std::nullopt;
  const Group* g = Find(it->key);
  if (g == nullptr) return std::nullopt;
  const PoolEntry& e = g->entries(address.family())[it->entry];
  return AddressMatch{g, &e, e.subnet, e.AggregationLength()};
}

void InForceConfig::Put(Group g) {
  ConfigKey key = g.key();
  groups_.insert_or_assign(std::move(key), std::move(g));
}

void InForceConfig::BuildIndex() {
  index_v4_.clear();
  index_v6_.clear();
  for (const auto& [key, g] : groups_) {
    for (Family f : {Family::kV4, Family::kV6}) {
      auto& index = f == Family::kV4 ? index_v4_ : index_v6_;
      const auto& entries = g.entries(f);
      for (std::size_t i = 0; i < entries.size(); ++i) {
        for (const auto& r : entries[i].ranges) index.push_back({r, key, i});
      }
    }
  }
  for (auto* index : {&index_v4_, &index_v6_}) {
    std::sort(index->begin(), index->end(), [](const IndexEntry& a, const IndexEntry& b) {
      return a.range.first() < b.range.first();
    });
  }
}

Json ObjectStatus::ToJson() const {
  Json j = {{"valid", valid},
            {"message", message},
            {"warnings", warnings},
            {"observedGeneration", observed_generation},
            {"poolSize",
             {{std::string(net::FamilyName(Family::kV4)), SizeString(Family::kV4)},
              {std::string(net::FamilyName(Family::kV6)), SizeString(Family::kV6)}}}};
  if (in_force_generation) j["inForceGeneration"] = *in_force_generation;
  return j;
}

namespace {

// Addresses held by the groups in force during one validation round, keyed by range start.
class Reservations {
 public:
  struct Holder {
    Uint128 last = 0;
    const Group* group = nullptr;
    const PoolEntry* entry = nullptr;
  };
  struct Conflict {
    const PoolEntry* mine = nullptr;
    Holder other;
  };

  void Add(const Group& g) { Apply(g, true); }
  void Remove(const Group& g) { Apply(g, false); }

  // The first range of `g` that overlaps a range held by another group.
  std::optional<Conflict> FindConflict(const Group& g) const {
    for (Family f : {Family::kV4, Family::kV6}) {
      const auto& m = Map(f);
      for (const auto& e : g.entries(f)) {
        for (const auto& r : e.ranges) {
          // Held ranges are disjoint: those overlapping r are contiguous just before the first
          // one starting after r.last.
          auto it = m.upper_bound(r.last().value());
          while (it != m.begin()) {
            --it;
            if (it->second.last < r.first().value()) break;
            if (it->second.group->key() != g.key()) return Conflict{&e, it->second};
          }
        }
      }
    }
    return std::nullopt;
  }

 private:
  using RangeMap = std::map<Uint128, Holder>;
  RangeMap& Map(Family f) { return f == Family::kV4 ? v4_ : v6_; }
  const RangeMap& Map(Family f) const { return f == Family::kV4 ? v4_ : v6_; }

  void Apply(const Group& g, bool add) {
    for (Family f : {Family::kV4, Family::kV6}) {
      auto& m = Map(f);
      for (const auto& e : g.entries(f)) {
        for (const auto& r : e.ranges) {
          if (add) {
            m[r.first().value()] = Holder{r.last().value(), &g, &e};
          } else {
            auto it = m.find(r.first().value());
            if (it != m.end() && it->second.group->key() == g.key()) m.erase(it);
          }
        }
      }
    }
  }

  RangeMap v4_, v6_;
};

enum class State { kRejected, kDuplicate, kUnchanged, kEdit, kNew, kKeepPrevious };

struct Candidate {
  ConfigKey key;
  std::int64_t generation = 0;
  std::optional<Group> parsed;
  std::string error;                // why the observed version is rejected
  const Group* previous = nullptr;  // its version in force before this round
  const Group* in_force = nullptr;  // its version in force after this round
  State state = State::kRejected;
};

// Best-effort identity of a candidate that failed to parse, for its status.
ConfigKey RawKey(const Json& object) {
  ConfigKey key;
  const Json* kind = Find(object, {"kind"});
  if (kind != nullptr && kind->is_string() &&
      kind->get_ref<const std::string&>() == KindName(ObjectKind::kLoadBalancerClass)) {
    key.kind = ObjectKind::kLoadBalancerClass;
  }
  const Json* md = Find(object, {"metadata"});
  if (md != nullptr) {
    const Json* n = Find(*md, {"name"});
    if (n != nullptr && n->is_string()) key.name = n->get_ref<const std::string&>();
    const Json* ns = Find(*md, {"namespace"});
    if (KindIsNamespaced(key.kind) && ns != nullptr && ns->is_string()) {
      key.namespace_ = ns->get_ref<const std::string&>();
    }
  }
  return key;
}

std::int64_t RawGeneration(const Json& object) {
  const Json* md = Find(object, {"metadata"});
  if (md == nullptr) return 0;
  auto g = detail::OptionalNonNegativeInt(*md, "generation", "");
  return g && g->has_value() ? **g : 0;
}

// Oldest first: creationTimestamp (absent sorts last), then kind, namespace, name.
bool CreatedBefore(const ObjectMeta& a, const ObjectMeta& b) {
  auto rank = [](const ObjectMeta& m) {
    return std::make_tuple(!m.created.has_value(), m.created.value_or(WallTime{}),
                           KindName(m.key.kind), std::string_view(m.key.namespace_),
                           std::string_view(m.key.name));
  };
  return rank(a) < rank(b);
}

std::string ConflictMessage(const Group& g, const Reservations::Conflict& c, std::string_view why) {
  return g.key().ToString() + ": " + c.mine->path + ": " + c.mine->written + " overlaps " +
         c.other.entry->written + " (" + c.other.entry->path + ") of " +
         c.other.group->key().ToString() + ", " + std::string(why);
}

std::string GenerationWord(std::int64_t g) {
  return g > 0 ? "generation " + std::to_string(g) + " " : "";
}

struct Outcome {
  std::vector<Group> in_force;
  std::vector<ObjectStatus> statuses;
};

// Phase 1: parses every candidate and classifies it against the config in force (new, unchanged,
// edit, duplicate, rejected, or kept at its previous version).
std::vector<Candidate> Classify(std::span<const Json> objects, const InForceConfig& previous) {
  std::vector<Candidate> cands(objects.size());
  std::set<ConfigKey> seen;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    Candidate& c = cands[i];
    auto g = ParseAddressSource(objects[i]);
    if (g) {
      c.key = g->key();
      c.generation = g->meta.generation;
      c.parsed = std::move(*g);
    } else {
      c.key = RawKey(objects[i]);
      c.generation = RawGeneration(objects[i]);
      c.error = g.error().message();
    }
    if (!seen.insert(c.key).second) {
      c.state = State::kDuplicate;
      c.error = c.key.ToString() + ": duplicate of another candidate with the same kind, " +
                "namespace and name";
      continue;
    }
    c.previous = previous.Find(c.key);
    if (c.parsed) {
      if (c.previous == nullptr) {
        c.state = State::kNew;
      } else if (c.previous->SameContent(*c.parsed)) {
        c.state = State::kUnchanged;
      } else {
        c.state = State::kEdit;
      }
    } else {
      c.state = c.previous != nullptr ? State::kKeepPrevious : State::kRejected;
    }
  }
  return cands;
}

// Phase 3: admits the edits whose addresses are free, retried while any is accepted (an accepted
// edit may release addresses); the others keep their previous version.
void AdmitEdits(const std::vector<Candidate*>& edits, Reservations& held) {
  for (bool progress = true; progress;) {
    progress = false;
    for (Candidate* c : edits) {
      if (c->in_force == &*c->parsed) continue;
      auto conflict = held.FindConflict(*c->parsed);
      if (conflict) {
        c->error = ConflictMessage(*c->parsed, *conflict, "which is in force");
        continue;
      }
      held.Remove(*c->previous);
      c->in_force = &*c->parsed;
      held.Add(*c->in_force);
      c->error.clear();
      progress = true;
    }
  }
  for (Candidate* c : edits) {
    if (c->in_force != &*c->parsed) c->state = State::kKeepPrevious;
  }
}

// Phase 4: admits new objects, oldest first, whose addresses are free; rejects the others. The
// reason depends only on the two objects, not on history, so that a rejected object's status
// message is the same in every round.
void AdmitFresh(const std::vector<Candidate*>& fresh, Reservations& held) {
  for (Candidate* c : fresh) {
    auto conflict = held.FindConflict(*c->parsed);
    if (conflict) {
      bool other_older = CreatedBefore(conflict->other.group->meta, c->parsed->meta);
      c->error = ConflictMessage(*c->parsed, *conflict,
                                 other_older ? "which was created earlier" : "which is in force");
      c->state = State::kRejected;
      continue;
    }
    c->in_force = &*c->parsed;
    held.Add(*c->in_force);
  }
}

// Phase 5: the groups in force and every candidate's status.
Outcome Report(std::vector<Candidate>& cands) {
  Outcome result;
  result.statuses.reserve(cands.size());
  for (Candidate& c : cands) {
    ObjectStatus s;
    s.key = c.key;
    s.observed_generation = c.generation;
    if (c.parsed) s.warnings = c.parsed->warnings;
    if (c.in_force != nullptr) {
      result.in_force.push_back(*c.in_force);
      s.in_force_generation = c.in_force->meta.generation;
      s.size_v4 = c.in_force->Size(Family::kV4);
      s.size_v6 = c.in_force->Size(Family::kV6);
    }
    s.valid = c.parsed && c.in_force == &*c.parsed;
    if (s.valid) {
      s.message = "in force";
    } else {
      s.message = GenerationWord(c.generation) + "rejected: " + c.error;
      if (c.in_force != nullptr) {
        s.message += "; " + GenerationWord(c.in_force->meta.generation) +
                     (c.in_force->meta.generation > 0 ? "stays in force"
                                                      : "the previous version stays in force");
      }
    }
    result.statuses.push_back(std::move(s));
  }
  return result;
}

Outcome ValidateUnguarded(std::span<const Json> objects, const InForceConfig& previous) {
  std::vector<Candidate> cands = Classify(objects, previous);

  // Phase 2: everything already in force holds its addresses first.
  Reservations held;
  for (Candidate& c : cands) {
    if (c.state == State::kUnchanged) {
      c.in_force = &*c.parsed;
      held.Add(*c.in_force);
    } else if (c.state == State::kEdit || c.state == State::kKeepPrevious) {
      c.in_force = c.previous;
      held.Add(*c.in_force);
    }
  }

  std::vector<Candidate*> edits, fresh;
  for (Candidate& c : cands) {
    if (c.state == State::kEdit) edits.push_back(&c);
    if (c.state == State::kNew) fresh.push_back(&c);
  }
  auto older = [](const Candidate* a, const Candidate* b) {
    return CreatedBefore(a->parsed->meta, b->parsed->meta);
  };
  std::sort(edits.begin(), edits.end(), older);
  std::sort(fresh.begin(), fresh.end(), older);
  AdmitEdits(edits, held);
  AdmitFresh(fresh, held);
  return Report(cands);
}

}  // namespace

ValidationResult ValidateConfig(std::span<const Json> candidates, const InForceConfig& previous) {
  try {
    Outcome o = ValidateUnguarded(candidates, previous);
    ValidationResult r;
    for (auto& g : o.in_force) r.config.Put(std::move(g));
    r.config.BuildIndex();
    r.statuses = std::move(o.statuses);
    return r;
  } catch (const std::exception& e) {
    // A bug or bad_alloc: keep what was in force rather than dropping configuration.
    ValidationResult r;
    r.config = previous;
    for (const auto& c : candidates) {
      ObjectStatus s;
      s.key = RawKey(c);
      s.message = std::string("internal error during validation: ") + e.what();
      if (const Group* g = previous.Find(s.key)) s.in_force_generation = g->meta.generation;
      r.statuses.push_back(std::move(s));
    }
    return r;
  }
}

}  // namespace pylon::config
