#include "agent/prober.h"

namespace pylon::agent {

ProbeResult RunProbe(packet::Announcer& announcer, const ProbeJob& job) {
  ProbeResult r;
  r.target = job.target;
  auto owner = announcer.Probe(job.iface, job.target.address, job.options);
  if (!owner) {
    r.error = owner.error().message();
  } else {
    r.owner = *owner;
  }
  return r;
}

void InlineProber::Start(ProbeJob job) {
  started_.push_back(job);
  results_.push_back(RunProbe(announcer_, job));
}

std::vector<ProbeResult> InlineProber::TakeResults() {
  std::vector<ProbeResult> out;
  out.swap(results_);
  return out;
}

}  // namespace pylon::agent
