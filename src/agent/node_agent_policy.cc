#include "agent/node_agent_policy.h"

#include <algorithm>

namespace pylon::agent {

GarpOptions GarpOptionsFor(const GarpOptions& flags, const config::NodeAgentConfig* cfg) {
  if (cfg == nullptr) return flags;
  GarpOptions out = flags;
  if (cfg->garp_off()) {
    out.count = 0;
  } else if (cfg->version == config::PurelbVersion::kV2 && cfg->garp) {
    out.count = cfg->garp->count;
    out.interval = cfg->garp->interval;
    out.initial_delay = cfg->garp->initial_delay;
  } else if (!cfg->send_garp) {
    out.count = 1;
  }
  return out;
}

namespace {

void Override(AddressPolicy& p, const std::optional<config::InterfaceAddressConfig>& c) {
  if (!c) return;
  if (c->valid_lifetime) {
    if (*c->valid_lifetime == 0) {
      p.valid_lifetime = netlink::kForever;
    } else {
      p.valid_lifetime = netlink::Seconds{*c->valid_lifetime};
      p.renew_interval = p.valid_lifetime / 2;
    }
  }
  if (c->preferred_lifetime) p.preferred_lifetime = netlink::Seconds{*c->preferred_lifetime};
  if (c->no_prefix_route) {
    p.prefix_route =
        *c->no_prefix_route ? netlink::PrefixRoute::kSuppress : netlink::PrefixRoute::kInstall;
  }
}

}  // namespace

AddressSyncOptions AddressSyncOptionsFor(const AgentOptions& flags,
                                         const config::NodeAgentConfig* cfg) {
  AddressSyncOptions out;
  const netlink::Seconds lifetime = EffectiveAddressLifetime(flags);
  const Duration renew = std::min<Duration>(flags.timing.retry_period, lifetime / 3);
  for (AddressPolicy* p : {&out.local, &out.virtual_addresses}) {
    p->valid_lifetime = lifetime;
    p->renew_interval = renew;
  }
  if (cfg != nullptr && cfg->address_config) {
    Override(out.local, cfg->address_config->local);
    Override(out.virtual_addresses, cfg->address_config->dummy);
  }
  return out;
}

}  // namespace pylon::agent
