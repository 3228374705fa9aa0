// Reservations (reservation.h) and pool::Allocator::Reserve / Unreserve.
#include "pool/reservation.h"

#include "pool/allocator.h"

namespace pylon::pool {

namespace {
constexpr char kConflictNs[] = "pylon.conflict";
constexpr char kQuarantineNs[] = "pylon.quarantine";
}  // namespace

ServiceKey ReservationHolder(ReservationKind kind, std::string_view id) {
  auto key = ServiceKey::Make(kind == ReservationKind::kConflict ? kConflictNs : kQuarantineNs, id);
  return key ? *key : ServiceKey();
}

Status Allocator::Reserve(ReservationKind kind, std::string_view id, const std::string& pool,
                          const net::IpAddress& address) {
  AssignRequest req;
  req.service = ReservationHolder(kind, id);
  req.pool = pool;
  req.families = {address.family()};
  req.requested.For(address.family()) = address;
  auto r = Assign(req);
  if (!r) return Fail(r.error());
  return Ok();
}

std::vector<net::IpAddress> Allocator::Unreserve(ReservationKind kind, std::string_view id) {
  return Release(ReservationHolder(kind, id));
}

}  // namespace pylon::pool
