// The agent's writes to the Kubernetes API, behind an interface: the planner's level-based
// outputs go here every pass, so implementations must be idempotent and cheap to call again with
// the same value. KubeWriter (kube_writer.h) is the real one; tests use RecordingWriter.
#pragma once

#include <string>
#include <vector>

#include "agent/types.h"

namespace pylon::agent {

class ClusterWriter {
 public:
  virtual ~ClusterWriter() = default;
  // Merge-patches Service annotations (the value differs from what was observed).
  virtual void PatchAnnotations(const AnnotationPatch& patch) = 0;
  // Sets spec.externalTrafficPolicy to Cluster and records an event saying so.
  virtual void ResetTrafficPolicy(const ServiceRef& service) = 0;
  virtual void UpsertL2Advertisement(const L2Advertisement& l2) = 0;
  virtual void DeleteL2Advertisement(const std::string& name) = 0;
  virtual void Event(const ServiceEvent& event) = 0;
  // An event about the agent itself (on its Node object).
  virtual void NodeEvent(bool warning, const std::string& reason, const std::string& message) = 0;
  // The end of one planner pass. A writer that queues may drop the queued annotation patches and
  // L2Advertisement writes this pass did not ask for again: they were decided on an earlier pass,
  // and either the cache shows them done or this node no longer wants them (it stopped winning
  // the address); sent late, one would name a node that no longer holds the address.
  virtual void PassDone() {}
};

// Records every call, for tests.
class RecordingWriter final : public ClusterWriter {
 public:
  void PatchAnnotations(const AnnotationPatch& patch) override { patches.push_back(patch); }
  void ResetTrafficPolicy(const ServiceRef& service) override { etp_resets.push_back(service); }
  void UpsertL2Advertisement(const L2Advertisement& l2) override { l2_upserts.push_back(l2); }
  void DeleteL2Advertisement(const std::string& name) override { l2_deletes.push_back(name); }
  void Event(const ServiceEvent& event) override { events.push_back(event); }
  void NodeEvent(bool warning, const std::string& reason, const std::string& message) override {
    node_events.push_back(ServiceEvent{{}, warning, reason, message});
  }
  void PassDone() override { ++passes; }
  void Clear() { *this = RecordingWriter(); }

  std::vector<AnnotationPatch> patches;
  std::vector<ServiceRef> etp_resets;
  std::vector<L2Advertisement> l2_upserts;
  std::vector<std::string> l2_deletes;
  std::vector<ServiceEvent> events;
  std::vector<ServiceEvent> node_events;
  int passes = 0;
};

}  // namespace pylon::agent
