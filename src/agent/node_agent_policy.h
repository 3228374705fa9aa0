// What the governing LBNodeAgent changes in how this node adds and announces addresses: the
// GARP / unsolicited NA bursts and the address lifetimes and flags. Pure.
#pragma once

#include "agent/address_sync.h"
#include "agent/garp.h"
#include "agent/options.h"
#include "config/parse.h"

namespace pylon::agent {

// `flags`: --garp-count, --garp-interval. `cfg` null: no LBNodeAgent governs (the flags apply).
//  - purelb.io/v1: sendgarp true: the flags; false: one announcement per takeover (garp.h);
//  - purelb.io/v2: no garpConfig or `enabled: false`: none at all (count 0); otherwise its
//    count, interval and initialDelay (the flags do not apply).
GarpOptions GarpOptionsFor(const GarpOptions& flags, const config::NodeAgentConfig* cfg);

// Without an addressConfig (and for what it leaves out): valid lifetime EffectiveAddressLifetime,
// renewed every min(retry period, lifetime / 3); preferred = valid (IPv4); local addresses without
// a prefix route, virtual ones with it. A purelb.io/v2 addressConfig.localInterface (local
// addresses) / dummyInterface (virtual ones) overrides per field: validLifetime 0 = permanent
// (never renewed), otherwise renewed every lifetime / 2 (PureLB: max(valid/2, 30 s); the parser
// already raised it to >= 60 s); preferredLifetime (clamped to the valid lifetime by AddressSync);
// noPrefixRoute.
AddressSyncOptions AddressSyncOptionsFor(const AgentOptions& flags,
                                         const config::NodeAgentConfig* cfg);

}  // namespace pylon::agent
