#include "agent/wire_check.h"

#include <algorithm>

namespace pylon::agent {

WireCheckResult RunWireCheck(packet::Announcer& announcer, const HttpStatusFn& http,
                             const WireCheckJob& job, net::MacAddress own_mac,
                             const WireCheckOptions& options) {
  WireCheckResult r;
  r.address = job.address;
  r.holder = job.holder;
  auto owner =
      announcer.ProbeOwner(packet::Interface{job.ifindex, own_mac}, job.address, options.arp_wait);
  if (!owner) {
    r.detail = "probe failed: " + owner.error().message();
    return r;
  }
  if (!*owner) {
    r.detail = "no answer";
    return r;
  }
  r.answered_by = **owner;
  r.holder_answers =
      std::find(job.holder_macs.begin(), job.holder_macs.end(), **owner) != job.holder_macs.end();
  if (!r.holder_answers) {
    r.detail = "answered by " + (*owner)->ToString() + ", not the holder";
    return r;
  }
  if (job.kube_proxy_url.empty() || !http) {
    r.detail = "the holder answers";
    return r;
  }
  auto status = http(job.kube_proxy_url, options.http_timeout);
  if (!status) {
    r.detail = "the holder answers; kube-proxy: " + status.error().message();
  } else {
    r.kube_proxy_ok = *status == 200;
    r.detail = "the holder answers; kube-proxy: HTTP " + std::to_string(*status);
  }
  return r;
}

}  // namespace pylon::agent
