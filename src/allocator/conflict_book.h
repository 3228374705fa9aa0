// The conflict book: address conflicts in force and the pool reservations they imply. Pure.
//
// An address the agents report in conflict (annotation conflict.purelb.io/<address> on a Service:
// a foreign host answered the duplicate-address probe) or a node found taken ahead of any Service
// (probe_ahead.h) is kept out of the pool: a pool reservation of kind kConflict
// (pool/reservation.h; holder ReservationKey(address)) for as long as some entry of the book lists
// it. A Service
// that requested that very address is refused (Reason::kAddressConflict) for the hold instead; such
// a report reserves nothing.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "config/validate.h"
#include "model/service.h"
#include "net/ip.h"
#include "pool/allocator.h"
#include "pool/requested.h"

namespace pylon::allocator {

// One address conflict in force, as the group/class status shows it.
struct ConflictReport {
  net::IpAddress address;
  std::string mac;
  std::string node;       // the node whose probe was answered
  std::string interface;  // on that node
  std::string service;    // "ns/name" that reported it
  WallTime since{};
  WallTime until{};        // since + hold
  bool requested = false;  // the Service asked for exactly this address (refused)
  // Found taken ahead of any Service by a node's background probe (probe_ahead.h): no Service,
  // no interface; kept out of the pool while a live node lists it.
  bool skipped = false;
  friend bool operator==(const ConflictReport&, const ConflictReport&) = default;
};

// The address conflicts in force per owner (a Service "ns/name", or a probe-ahead book key), and
// which addresses are kept out of the pool for them (each under the synthetic pool key
// ReservationKey(address)). Owned by the caller next to the pool state; mutated by the reconcile
// core and ApplyTakenAhead only. Not thread-safe.
class ConflictBook {
 public:
  // Conflicts shown in the status of the group/class with this pool key, by address.
  std::vector<ConflictReport> ForPool(const std::string& pool_key) const;
  std::size_t size() const { return by_service_.size(); }

  struct Entry {
    std::string pool_key;
    std::vector<ConflictReport> reports;
  };
  // Replaces the owner's entry (empty reports: removes it). Returns the addresses it reserved
  // before that no entry keeps reserved now; whether anything changed in *changed.
  std::vector<net::IpAddress> Set(const std::string& service, Entry entry, bool* changed);
  // Whether some entry holds `address` out of the pool (a non-requested report).
  bool Reserves(const net::IpAddress& address) const;
  // The report that keeps `address` out of the pool, if any.
  std::optional<ConflictReport> ReservationOf(const net::IpAddress& address) const;

 private:
  std::map<std::string, Entry> by_service_;
};

// The holder of the pool reservation that keeps a conflicted address out of the pool.
pool::ServiceKey ReservationKey(const net::IpAddress& address);

// "<address> is in use on the network by another host (MAC .., answered the probe of node ..
// on .. at ..)": the conflict as messages and events name it.
std::string ConflictText(const ConflictReport& c);

// Replaces `owner`'s entry in the book and frees the reservations no entry keeps any more.
// Reserves nothing new. Returns whether the entry changed; *freed (if given) is set to true when
// a reservation was freed.
bool SetConflicts(ConflictBook& book, const std::string& owner, ConflictBook::Entry entry,
                  pool::Allocator& pool, bool* freed = nullptr);

// SetConflicts, then holds every non-requested report's address under its ReservationKey in
// `entry.pool_key` unless something holds it already (another Service, or a reservation).
bool RecordConflicts(ConflictBook& book, const std::string& owner, ConflictBook::Entry entry,
                     pool::Allocator& pool, bool* freed = nullptr);

// The conflicts in force for one Service, the addresses it must not keep, and when to look again.
struct ConflictState {
  std::vector<ConflictReport> active;
  std::optional<ConflictReport> requested;  // a requested address in conflict (refusal)
  std::set<net::IpAddress> avoid;           // addresses the Service must not keep
  std::optional<std::chrono::nanoseconds> recheck_after;
};

// The Service's conflicts in force at `now`: its own conflict.purelb.io reports of addresses in
// `group` whose hold (`hold` from the report's time, never later than `now`) has not ended, and
// each requested address another owner's report keeps out of the pool (`book`; may be null).
// Reads the book only.
ConflictState ActiveConflicts(const model::Service& svc, const pool::RequestedAddresses& requested,
                              const config::Group& group, const config::InForceConfig& config,
                              const ConflictBook* book, WallTime now,
                              std::chrono::nanoseconds hold);

}  // namespace pylon::allocator
