// ClusterWriter over the Kubernetes API. Calls return at once: writes go to a queue served by one
// worker thread, so a slow or unreachable API server never stalls the agent loop (and with it
// address withdrawal). Writes are coalesced per target (the latest wins) and deduplicated: a
// write identical to one that succeeded less than `rewrite_after` ago is dropped, because the
// informer cache that the planner compares against may still lag behind our own write. This
// bounds the agent to one write per target per `rewrite_after` even if it were confused (the
// peers' write storms: docs/references.md, Operations). Annotation patches carry the
// resourceVersion the planner compared against: an identical patch asked for on a *different*
// version means the Service changed after our write and still lacks our value (another node
// overwrote it, e.g. after an address moved away and back), so it is written again: after
// `min_identical_rewrite`, doubled on each consecutive such rewrite up to `rewrite_after`, which
// still bounds two confused writers to a few writes.
//
// The planner's writes are level-based and asked for again every pass while still wanted: at the
// end of a pass (PassDone) a queued annotation patch or L2Advertisement write that the pass did
// not ask for again is dropped. With the API slow or hung, the queue can hold a write decided
// while this node won an address for seconds after it stopped winning it (a peer came back,
// split-brain resolution); sent then, it named this node as the announcer of an address it no
// longer held, and every node's sticky election deferred to it (the soak, seed 1: 44 s without an
// announcer). A write already in flight is not recalled.
//
// Events go through k8s::EventRecorder (source component purelb-lbnodeagent).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "agent/writer.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/worker.h"
#include "k8s/client.h"
#include "k8s/event_recorder.h"

namespace pylon::agent {

// The L2Advertisement object for `l2` (pure).
Json L2AdvertisementObject(const L2Advertisement& l2);
// Parses one; fails on a missing or malformed spec.address.
Result<L2Advertisement> ParseL2Advertisement(const Json& obj);

struct KubeWriterOptions {
  std::string ns;  // install namespace (the node lease lives there)
  std::string node;
  Duration rewrite_after = std::chrono::seconds(30);
  Duration min_identical_rewrite = std::chrono::seconds(1);
};

class KubeWriter final : public ClusterWriter {
 public:
  KubeWriter(k8s::Client& client, k8s::EventRecorder& recorder, KubeWriterOptions options,
             const Clock& clock);
  ~KubeWriter() override;

  void PatchAnnotations(const AnnotationPatch& patch) override;
  void ResetTrafficPolicy(const ServiceRef& service) override;
  void UpsertL2Advertisement(const L2Advertisement& l2) override;
  void DeleteL2Advertisement(const std::string& name) override;
  void Event(const ServiceEvent& event) override;
  void NodeEvent(bool warning, const std::string& reason, const std::string& message) override;
  void PassDone() override;

  void Start();
  // Gives queued writes up to `drain` to finish, then stops the worker.
  void Stop(Duration drain = std::chrono::seconds(2));
  std::int64_t writes() const;
  std::int64_t failures() const;

 private:
  struct Op {
    std::string fingerprint;  // what is written; equal fingerprints are the same write
    std::function<Status()> run;
    std::string observed;  // the target's resourceVersion the write was decided on ("": unknown)
  };
  void Enqueue(const std::string& target, std::string fingerprint, std::function<Status()> run,
               std::string observed = "");
  // The worker: runs what is queued, then waits for the next Enqueue.
  void Run();
  // Runs the next queued write; false once the queue is empty or the worker stops.
  bool RunNext();

  k8s::Client& client_;
  k8s::EventRecorder& recorder_;
  const KubeWriterOptions options_;
  const Clock& clock_;

  mutable Mutex mu_;
  std::condition_variable idle_cv_;  // a write finished (Stop's drain waits on it)
  std::deque<std::string> order_ PYLON_GUARDED_BY(mu_);  // targets in arrival order
  std::map<std::string, Op> pending_ PYLON_GUARDED_BY(mu_);
  // Level-based targets asked for since the last PassDone.
  std::set<std::string> asked_ PYLON_GUARDED_BY(mu_);
  struct Done {
    std::string fingerprint;
    SteadyTime at;
    std::string observed;
    int rewrites = 0;  // consecutive identical writes after the target changed (the backoff)
  };
  std::map<std::string, Done> done_ PYLON_GUARDED_BY(mu_);
  bool busy_ PYLON_GUARDED_BY(mu_) = false;
  std::int64_t writes_ PYLON_GUARDED_BY(mu_) = 0;
  std::int64_t failures_ PYLON_GUARDED_BY(mu_) = 0;
  Worker worker_;  // Run: serves the queue, woken by Enqueue (last: stops first)
};

}  // namespace pylon::agent
