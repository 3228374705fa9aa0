// Property tests: random Assign / Release / SetPools / Rebuild sequences, checked after every step
// against a naive model (a map of Service -> addresses, scanned linearly).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pool/allocator.h"
#include "test_util.h"

namespace pylon::pool {
namespace {

using namespace pylon::pool::testing;  // NOLINT
using net::Family;
using net::IpAddress;

struct ModelService {
  std::string pool;
  std::string sharing_key;
  std::vector<PortKey> ports;  // normalized
  std::vector<IpAddress> addresses;
};
using Model = std::map<ServiceKey, ModelService>;

struct Setup {
  std::vector<PoolDefinition> config_a;
  std::vector<PoolDefinition> config_b;
  // Addresses a request may name, per family: inside and outside the pools.
  std::vector<std::string> candidates_v4;
  std::vector<std::string> candidates_v6;
};

const PoolDefinition* FindDef(const std::vector<PoolDefinition>& config, const std::string& key) {
  for (const auto& d : config) {
    if (d.key == key) return &d;
  }
  return nullptr;
}

bool InPool(const std::vector<PoolDefinition>& config, const std::string& pool,
            const IpAddress& a) {
  const PoolDefinition* d = FindDef(config, pool);
  if (d == nullptr) return false;
  for (const auto& r : d->Ranges(a.family())) {
    if (r.Contains(a)) return true;
  }
  return false;
}

std::map<IpAddress, std::vector<ServiceKey>> HoldersByAddress(const Model& model) {
  std::map<IpAddress, std::vector<ServiceKey>> out;
  for (const auto& [svc, m] : model) {
    for (const auto& a : m.addresses) out[a].push_back(svc);
  }
  for (auto& [a, holders] : out) std::sort(holders.begin(), holders.end());
  return out;
}

void CheckAgainstModel(const Allocator& alloc, const Model& model,
                       const std::vector<PoolDefinition>& config,
                       const std::vector<ServiceKey>& all_services) {
  for (const auto& svc : all_services) {
    auto it = model.find(svc);
    const std::string want = it == model.end() ? "" : Join(it->second.addresses);
    RC_ASSERT(Join(alloc.AddressesOf(svc)) == want);
  }
  RC_ASSERT(alloc.service_count() == model.size());
  const auto holders = HoldersByAddress(model);
  RC_ASSERT(alloc.address_count() == holders.size());
  std::map<std::pair<std::string, Family>, std::uint64_t> in_use;
  for (const auto& [address, keys] : holders) {
    RC_ASSERT(Join(alloc.HoldersOf(address)) == Join(keys));
    const ModelService& first = model.at(keys.front());
    RC_ASSERT(InPool(config, first.pool, address));
    ++in_use[{first.pool, address.family()}];
    if (keys.size() > 1) {
      // Never handed out twice: several holders only under one key with disjoint ports.
      for (std::size_t i = 0; i < keys.size(); ++i) {
        const ModelService& a = model.at(keys[i]);
        RC_ASSERT(!a.sharing_key.empty());
        RC_ASSERT(a.sharing_key == first.sharing_key);
        RC_ASSERT(a.pool == first.pool);
        for (std::size_t j = i + 1; j < keys.size(); ++j) {
          RC_ASSERT(FirstCommonPort(a.ports, model.at(keys[j]).ports) == nullptr);
        }
      }
    }
  }
  for (const auto& def : config) {
    for (Family f : {Family::kV4, Family::kV6}) {
      auto s = alloc.Stats(def.key, f);
      RC_ASSERT(s.has_value());
      RC_ASSERT(s->in_use == in_use[std::make_pair(def.key, f)]);
      RC_ASSERT(s->size == TotalSize(def.Ranges(f)));
    }
  }
}

// True if every address of the family in the pool is held by someone (naive enumeration; a
// large pool cannot be full with the few Services these tests use).
bool FamilyFull(const Model& model, const PoolDefinition& def, Family f) {
  if (TotalSize(def.Ranges(f)) > 64) return false;
  std::set<IpAddress> held;
  for (const auto& [svc, m] : model) held.insert(m.addresses.begin(), m.addresses.end());
  for (const auto& r : def.Ranges(f)) {
    for (net::Uint128 v = r.first().value();; ++v) {
      if (!held.count(IpAddress::FromValue(f, v))) return false;
      if (v == r.last().value()) break;
    }
  }
  return true;
}

void RunRandomSequence(const Setup& setup) {
  const std::vector<ServiceKey> services = {Svc("ns/a"), Svc("ns/b"), Svc("ns/c"),
                                            Svc("ns/d"), Svc("ns/e"), Svc("ns/f")};
  const std::vector<std::string> keys = {"", "", "k", "k", "j"};
  const std::vector<PortKey> port_choices = Ports("TCP/80,TCP/443,UDP/53");
  const std::vector<std::vector<Family>> family_choices = {
      {Family::kV4}, {Family::kV6}, {Family::kV4, Family::kV6}, {Family::kV6, Family::kV4}};

  Allocator alloc;
  const std::vector<PoolDefinition>* config = &setup.config_a;
  RC_ASSERT(alloc.SetPools(*config).has_value());
  Model model;

  const int steps = *rc::gen::inRange(1, 80);
  for (int step = 0; step < steps; ++step) {
    const int op = *rc::gen::weightedElement<int>({{12, 0}, {4, 1}, {1, 2}, {1, 3}});
    if (op == 0) {  // Assign
      AssignRequest req;
      req.service = *rc::gen::elementOf(services);
      req.pool = (*rc::gen::elementOf(*config)).key;
      req.families = *rc::gen::elementOf(family_choices);
      for (Family f : req.families) {
        const auto& cands = f == Family::kV4 ? setup.candidates_v4 : setup.candidates_v6;
        if (*rc::gen::inRange(0, 4) == 0) req.requested.For(f) = Addr(*rc::gen::elementOf(cands));
      }
      req.sharing_key = *rc::gen::elementOf(keys);
      for (const auto& p : port_choices) {
        if (*rc::gen::inRange(0, 2) == 0) req.ports.push_back(p);
      }
      RC_LOG() << "assign " << req.service.ToString() << " pool=" << req.pool
               << " fams=" << req.families.size()
               << " req=" << (req.requested.v4 ? req.requested.v4->ToString() : "-") << ","
               << (req.requested.v6 ? req.requested.v6->ToString() : "-")
               << " key=" << req.sharing_key << " ports=" << req.ports.size() << "\n";
      auto r = alloc.Assign(req);
      const PoolDefinition* def = FindDef(*config, req.pool);
      if (r) {
        RC_ASSERT(r->addresses.size() == req.families.size());
        for (std::size_t i = 0; i < req.families.size(); ++i) {
          const IpAddress& a = r->addresses[i];
          RC_ASSERT(a.family() == req.families[i]);
          RC_ASSERT(InPool(*config, req.pool, a));
          if (const auto& want = req.requested.For(a.family())) RC_ASSERT(*want == a);
        }
        model[req.service] = {req.pool, req.sharing_key, NormalizePorts(req.ports), r->addresses};
        // Re-assigning the same request is stable: same addresses, nothing acquired or released.
        auto again = alloc.Assign(req);
        RC_ASSERT(again.has_value());
        RC_ASSERT(Join(again->addresses) == Join(r->addresses));
        RC_ASSERT(!again->changed());
      } else {
        const ErrorCode code = r.error().code();
        RC_LOG() << "  -> " << r.error().message() << "\n";
        if (code == ErrorCode::kExhausted) {
          bool some_full = false;
          for (Family f : req.families) {
            if (!req.requested.For(f)) some_full = some_full || FamilyFull(model, *def, f);
          }
          RC_ASSERT(some_full);
        } else if (code == ErrorCode::kOutOfRange) {
          bool outside = false;
          for (Family f : req.families) {
            const auto& want = req.requested.For(f);
            outside = outside || (want && !InPool(*config, req.pool, *want));
          }
          RC_ASSERT(outside);
        } else if (code == ErrorCode::kConflict) {
          bool taken = false;
          for (Family f : req.families) {
            const auto& want = req.requested.For(f);
            if (!want) continue;
            for (const auto& [svc, m] : model) {
              if (svc != req.service &&
                  std::find(m.addresses.begin(), m.addresses.end(), *want) != m.addresses.end()) {
                taken = true;
              }
            }
          }
          RC_ASSERT(taken);
        } else {
          // kInvalidArgument: a family the pool has no range for.
          RC_ASSERT(code == ErrorCode::kInvalidArgument);
          bool missing = false;
          for (Family f : req.families) missing = missing || def->Ranges(f).empty();
          RC_ASSERT(missing);
        }
      }
    } else if (op == 1) {  // Release
      const ServiceKey svc = *rc::gen::elementOf(services);
      RC_LOG() << "release " << svc.ToString() << "\n";
      auto it = model.find(svc);
      const std::string want = it == model.end() ? "" : Join(it->second.addresses);
      RC_ASSERT(Join(alloc.Release(svc)) == want);
      model.erase(svc);
    } else if (op == 2) {  // SetPools: switch configuration
      config = config == &setup.config_a ? &setup.config_b : &setup.config_a;
      RC_LOG() << "setpools\n";
      auto r = alloc.SetPools(*config);
      RC_ASSERT(r.has_value());
      std::set<std::pair<ServiceKey, IpAddress>> want, got;
      for (auto& [svc, m] : model) {
        for (const auto& a : m.addresses) {
          if (!InPool(*config, m.pool, a)) want.insert({svc, a});
        }
      }
      for (const auto& e : *r) got.insert({e.service, e.address});
      RC_ASSERT(got == want);
      for (auto it = model.begin(); it != model.end();) {
        auto& addrs = it->second.addresses;
        addrs.erase(std::remove_if(addrs.begin(), addrs.end(),
                                   [&](const IpAddress& a) {
                                     return want.count({it->first, a});
                                   }),
                    addrs.end());
        it = addrs.empty() ? model.erase(it) : std::next(it);
      }
    } else {  // Rebuild from the model's records, in a random order: nothing conflicts.
      std::vector<ExistingRecord> records;
      for (const auto& [svc, m] : model) {
        for (const auto& a : m.addresses) {
          records.push_back({svc, m.pool, a, m.sharing_key, m.ports});
        }
      }
      // A record for an address the Service already holds in the model is a duplicate.
      const bool duplicate = !records.empty() && *rc::gen::arbitrary<bool>();
      if (duplicate) records.push_back(records.front());
      const auto order = *rc::gen::unique<std::vector<int>>(
          records.size(), rc::gen::inRange(0, static_cast<int>(records.size())));
      std::vector<ExistingRecord> shuffled;
      for (int i : order) shuffled.push_back(records[static_cast<std::size_t>(i)]);
      RC_LOG() << "rebuild " << shuffled.size() << "\n";
      auto conflicts = alloc.Rebuild(shuffled);
      RC_ASSERT(conflicts.size() == (duplicate ? 1u : 0u));
      if (duplicate) RC_ASSERT(conflicts[0].error.code() == ErrorCode::kAlreadyExists);
      // Rebuild keeps each Service's records in its own order, which may differ from the model's.
      for (auto& [svc, m] : model) {
        std::vector<IpAddress> got = alloc.AddressesOf(svc);
        RC_ASSERT(
            std::is_permutation(got.begin(), got.end(), m.addresses.begin(), m.addresses.end()));
        m.addresses = got;
      }
    }
    CheckAgainstModel(alloc, model, *config, services);
  }
}

RC_GTEST_PROP(AllocatorProperty, TinyPoolsMatchANaiveModel, ()) {
  Setup setup{
      .config_a = {Pool("p1", "192.0.2.0-192.0.2.2,192.0.2.10-192.0.2.11",
                        "2001:db8::1-2001:db8::3"),
                   Pool("p2", "198.51.100.0-198.51.100.1", "")},
      .config_b = {Pool("p1", "192.0.2.1-192.0.2.3,192.0.2.11-192.0.2.12",
                        "2001:db8::2-2001:db8::4"),
                   Pool("p2", "198.51.100.1", "2001:db8:2::/127")},
      .candidates_v4 = {"192.0.2.0", "192.0.2.2", "192.0.2.3", "192.0.2.11", "198.51.100.1",
                        "203.0.113.1"},
      .candidates_v6 = {"2001:db8::1", "2001:db8::3", "2001:db8::4", "2001:db8:2::1",
                        "2001:db8:9::1"},
  };
  RunRandomSequence(setup);
}

RC_GTEST_PROP(AllocatorProperty, Slash64PoolNeverDuplicates, ()) {
  Setup setup{
      .config_a = {Pool("p1", "192.0.2.0/30", "2001:db8::/64"), Pool("p2", "", "2001:db8:1::/48")},
      .config_b = {Pool("p1", "192.0.2.0/29", "2001:db8::/64,2001:db8:5::/64"),
                   Pool("p2", "198.51.100.0/30", "2001:db8:1::/64")},
      .candidates_v4 = {"192.0.2.0", "192.0.2.1", "192.0.2.7", "198.51.100.2"},
      .candidates_v6 = {"2001:db8::", "2001:db8::1", "2001:db8::2", "2001:db8::ffff:ffff:ffff:ffff",
                        "2001:db8:1::1", "2001:db8:1:ffff:ffff:ffff:ffff:ffff", "2001:db8:5::"},
  };
  RunRandomSequence(setup);
}

}  // namespace
}  // namespace pylon::pool
