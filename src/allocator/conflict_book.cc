#include "allocator/conflict_book.h"

#include <algorithm>
#include <tuple>

#include "common/time.h"
#include "model/conflicts.h"

namespace pylon::allocator {

using net::IpAddress;

pool::ServiceKey ReservationKey(const net::IpAddress& address) {
  return pool::ReservationHolder(pool::ReservationKind::kConflict, address.ToString());
}

std::string ConflictText(const ConflictReport& c) {
  return c.address.ToString() + " is in use on the network by another host (MAC " + c.mac +
         ", answered the probe of node " + c.node +
         (c.interface.empty() ? std::string() : " on " + c.interface) + " at " +
         FormatTime(c.since) + ")";
}

std::vector<ConflictReport> ConflictBook::ForPool(const std::string& pool_key) const {
  std::vector<ConflictReport> out;
  for (const auto& [svc, e] : by_service_) {
    if (e.pool_key != pool_key) continue;
    out.insert(out.end(), e.reports.begin(), e.reports.end());
  }
  std::sort(out.begin(), out.end(), [](const ConflictReport& a, const ConflictReport& b) {
    return std::tie(a.address, a.service) < std::tie(b.address, b.service);
  });
  return out;
}

bool ConflictBook::Reserves(const net::IpAddress& address) const {
  return ReservationOf(address).has_value();
}

std::optional<ConflictReport> ConflictBook::ReservationOf(const net::IpAddress& address) const {
  for (const auto& [svc, e] : by_service_) {
    for (const auto& r : e.reports) {
      if (!r.requested && r.address == address) return r;
    }
  }
  return std::nullopt;
}

std::vector<net::IpAddress> ConflictBook::Set(const std::string& service, Entry entry,
                                              bool* changed) {
  std::vector<net::IpAddress> before;
  auto it = by_service_.find(service);
  if (it != by_service_.end()) {
    for (const auto& r : it->second.reports) {
      if (!r.requested) before.push_back(r.address);
    }
  }
  const bool same = it == by_service_.end() ? entry.reports.empty()
                                            : (it->second.pool_key == entry.pool_key &&
                                               it->second.reports == entry.reports);
  if (changed) *changed = !same;
  if (entry.reports.empty()) {
    if (it != by_service_.end()) by_service_.erase(it);
  } else {
    by_service_[service] = std::move(entry);
  }
  std::vector<net::IpAddress> freed;
  for (const auto& ip : before) {
    if (!Reserves(ip)) freed.push_back(ip);
  }
  return freed;
}

bool SetConflicts(ConflictBook& book, const std::string& owner, ConflictBook::Entry entry,
                  pool::Allocator& pool, bool* freed) {
  bool changed = false;
  for (const IpAddress& ip : book.Set(owner, std::move(entry), &changed)) {
    pool.Unreserve(pool::ReservationKind::kConflict, ip.ToString());
    if (freed) *freed = true;
  }
  return changed;
}

bool RecordConflicts(ConflictBook& book, const std::string& owner, ConflictBook::Entry entry,
                     pool::Allocator& pool, bool* freed) {
  const std::string pool_key = entry.pool_key;
  const std::vector<ConflictReport> reports = entry.reports;
  const bool changed = SetConflicts(book, owner, std::move(entry), pool, freed);
  for (const auto& r : reports) {
    if (r.requested) continue;
    if (!pool.HoldersOf(r.address).empty()) continue;  // reserved already, or a Service holds it
    // Only fails if the address left the pool: nothing to keep out.
    (void)pool.Reserve(pool::ReservationKind::kConflict, r.address.ToString(), pool_key, r.address);
  }
  return changed;
}

ConflictState ActiveConflicts(const model::Service& svc, const pool::RequestedAddresses& requested,
                              const config::Group& group, const config::InForceConfig& config,
                              const ConflictBook* book, WallTime now,
                              std::chrono::nanoseconds hold) {
  ConflictState st;
  auto note_recheck = [&](WallTime until) {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - now);
    if (!st.recheck_after || left < *st.recheck_after) st.recheck_after = left;
  };
  for (const auto& e : model::ParseAddressConflicts(svc.annotations).entries) {
    auto match = config.FindAddress(e.address);
    if (!match || match->group != &group) continue;  // not this pool's business
    const WallTime since = std::min(e.since, now);
    const WallTime until = since + std::chrono::duration_cast<WallTime::duration>(hold);
    if (now >= until) continue;  // hold over: the address may be tried again
    ConflictReport r{e.address, e.mac, e.node, e.interface, svc.Key(), since, until, false};
    const auto& want = requested.For(e.address.family());
    r.requested = want && *want == e.address;
    note_recheck(until);
    if (r.requested && !st.requested) st.requested = r;
    st.avoid.insert(e.address);
    st.active.push_back(std::move(r));
  }
  // A requested address that another owner's report keeps out of the pool is in conflict for
  // this Service too (the allocator knows without a probe).
  for (const auto& want : {requested.v4, requested.v6}) {
    if (!want || st.avoid.count(*want) || book == nullptr) continue;
    auto other = book->ReservationOf(*want);
    if (!other || other->service == svc.Key() || now >= other->until) continue;
    ConflictReport r = *other;
    r.service = svc.Key();
    r.requested = true;
    r.skipped = false;
    note_recheck(r.until);
    if (!st.requested) st.requested = r;
    st.avoid.insert(r.address);
    st.active.push_back(std::move(r));
  }
  return st;
}

}  // namespace pylon::allocator
