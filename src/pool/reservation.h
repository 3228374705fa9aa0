// Reservations: an address kept out of use in a pool for a reason other than a Service holding it.
// Two kinds, one mechanism (pool::Allocator::Reserve / Unreserve):
//   - kConflict: a foreign host answers for the address on the network (an agent's
//     duplicate-address probe, or its probe ahead); id: the address.
//   - kQuarantine: a Service still shows the address in its status but no longer holds it; kept
//     until the status write that removes it has succeeded; id: "<ns>/<name>@<address>".
// A reservation holds its address like a Service that shares it with nobody: exclusively, counted
// in use (Stats), named as the holder (HoldersOf, Lookup, evictions), under the synthetic key
// ReservationHolder(kind, id) — namespaces "pylon.conflict" and "pylon.quarantine", which no
// Kubernetes namespace can be (a dot is not allowed in one). Pure.
#pragma once

#include <string_view>

#include "pool/types.h"

namespace pylon::pool {

enum class ReservationKind { kConflict, kQuarantine };

// The holder key of the reservation (kind, id); `id` must not be empty.
ServiceKey ReservationHolder(ReservationKind kind, std::string_view id);

}  // namespace pylon::pool
