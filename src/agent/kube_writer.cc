#include "agent/kube_writer.h"

#include <utility>

#include "common/log.h"
#include "election/node_name.h"

namespace pylon::agent {

namespace {

Json L2Spec(const L2Advertisement& l2) {
  return {{"address", l2.address.ToString()},
          {"service", {{"namespace", l2.service_namespace}, {"name", l2.service_name}}},
          {"loadBalancerClass", l2.load_balancer_class},
          {"node", l2.node},
          {"interface", l2.interface}};
}

// The planner's level-based writes (asked for again every pass while wanted): PassDone drops the
// queued ones a pass did not ask for.
bool IsPassScoped(const std::string& target) {
  return target.starts_with("annotations/") || target.starts_with("l2/");
}

}  // namespace

Json L2AdvertisementObject(const L2Advertisement& l2) {
  return {{"apiVersion", kL2AdvApiVersion},
          {"kind", "L2Advertisement"},
          {"metadata", {{"name", l2.name}}},
          {"spec", L2Spec(l2)}};
}

Result<L2Advertisement> ParseL2Advertisement(const Json& obj) {
  L2Advertisement out;
  out.name = k8s::Name(obj);
  auto addr = FindString(obj, {"spec", "address"});
  if (!addr)
    return Fail(ErrorCode::kInvalidArgument, "L2Advertisement " + out.name + ": no spec.address");
  auto ip = net::IpAddress::Parse(*addr);
  if (!ip) return Fail(ip.error().Wrap("L2Advertisement " + out.name + ": spec.address"));
  out.address = *ip;
  out.service_namespace = FindString(obj, {"spec", "service", "namespace"}).value_or("");
  out.service_name = FindString(obj, {"spec", "service", "name"}).value_or("");
  out.load_balancer_class = FindString(obj, {"spec", "loadBalancerClass"}).value_or("");
  out.node = FindString(obj, {"spec", "node"}).value_or("");
  out.interface = FindString(obj, {"spec", "interface"}).value_or("");
  return out;
}

KubeWriter::KubeWriter(k8s::Client& client, k8s::EventRecorder& recorder, KubeWriterOptions options,
                       const Clock& clock)
    : client_(client), recorder_(recorder), options_(std::move(options)), clock_(clock) {}

KubeWriter::~KubeWriter() { Stop(std::chrono::seconds(0)); }

void KubeWriter::Start() {
  worker_.Start([this] { Run(); });
}

void KubeWriter::Stop(Duration drain) {
  {
    MutexLock lock(mu_);
    auto deadline = std::chrono::steady_clock::now() + drain;
    while (!pending_.empty() || busy_) {
      if (lock.WaitUntil(idle_cv_, deadline) == std::cv_status::timeout) break;
    }
  }
  worker_.Stop();
}

std::int64_t KubeWriter::writes() const {
  MutexLock lock(mu_);
  return writes_;
}
std::int64_t KubeWriter::failures() const {
  MutexLock lock(mu_);
  return failures_;
}

void KubeWriter::Enqueue(const std::string& target, std::string fingerprint,
                         std::function<Status()> run, std::string observed) {
  MutexLock lock(mu_);
  if (IsPassScoped(target)) asked_.insert(target);
  const SteadyTime now = clock_.Now();
  auto d = done_.find(target);
  if (d != done_.end() && d->second.fingerprint == fingerprint &&
      now < d->second.at + options_.rewrite_after) {
    // The same write again: the cache still lags behind it (same version observed), or it is
    // too soon to write it again; else the target changed after our write and lost our value.
    const bool changed_since = !observed.empty() && observed != d->second.observed;
    Duration wait = options_.min_identical_rewrite;
    for (int i = 0; i < d->second.rewrites && wait < options_.rewrite_after; ++i) wait *= 2;
    if (!changed_since || now < d->second.at + wait) return;
  }
  // Entries past the dedup window no longer matter (targets include event messages: keep the
  // map bounded by what was written within one window).
  if (done_.size() > 1024) {
    std::erase_if(done_,
                  [&](const auto& kv) { return now >= kv.second.at + options_.rewrite_after; });
  }
  auto p = pending_.find(target);
  if (p == pending_.end()) order_.push_back(target);
  pending_[target] = Op{std::move(fingerprint), std::move(run), std::move(observed)};
  worker_.Wake();
}

void KubeWriter::PassDone() {
  MutexLock lock(mu_);
  // Their order_ entries are skipped by Run. (A loop, not erase_if: the analysis does not see
  // that a lambda runs under the lock.)
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (IsPassScoped(it->first) && !asked_.count(it->first)) {
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  asked_.clear();
}

void KubeWriter::Run() {
  do {
    while (RunNext()) continue;
  } while (worker_.WaitForWake());  // an Enqueue since the queue was seen empty
}

// The lock is released while the write runs.
bool KubeWriter::RunNext() {
  MutexLock lock(mu_);
  if (worker_.Stopping() || order_.empty()) return false;
  std::string target = order_.front();
  order_.pop_front();
  auto it = pending_.find(target);
  if (it == pending_.end()) return true;
  Op op = std::move(it->second);
  pending_.erase(it);
  busy_ = true;
  lock.Unlock();
  Status st = op.run();
  lock.Lock();
  busy_ = false;
  if (st) {
    ++writes_;
    const SteadyTime now = clock_.Now();
    auto prev = done_.find(target);
    const bool again = prev != done_.end() && prev->second.fingerprint == op.fingerprint &&
                       now < prev->second.at + options_.rewrite_after;
    done_[target] = Done{op.fingerprint, now, op.observed, again ? prev->second.rewrites + 1 : 0};
  } else {
    ++failures_;
    done_.erase(target);  // the next pass asks again
    log::Warn("API write failed", {{"target", target}, {"error", st.error().message()}});
  }
  idle_cv_.notify_all();
  return true;
}

void KubeWriter::PatchAnnotations(const AnnotationPatch& patch) {
  Json annotations = Json::object();
  std::string target = "annotations/" + patch.service.Key();
  for (const auto& [k, v] : patch.annotations) {
    annotations[k] = v ? Json(*v) : Json(nullptr);
    target += "/" + k;
  }
  Json body = {{"metadata", {{"annotations", annotations}}}};
  ServiceRef svc = patch.service;
  Enqueue(
      target, body.dump(),
      [this, svc, body]() -> Status {
        auto r = client_.Patch(k8s::resources::Services(), svc.ns, svc.name, k8s::PatchType::kMerge,
                               body, "");
        if (!r && r.error().code() != ErrorCode::kNotFound) return Fail(r.error());
        return Ok();
      },
      patch.observed_version);
}

void KubeWriter::ResetTrafficPolicy(const ServiceRef& service) {
  const std::string target = "etp/" + service.Key();
  Enqueue(target, "Cluster", [this, service]() -> Status {
    Json body = {{"spec", {{"externalTrafficPolicy", "Cluster"}}}};
    auto r = client_.Patch(k8s::resources::Services(), service.ns, service.name,
                           k8s::PatchType::kMerge, body, "");
    if (!r) {
      if (r.error().code() == ErrorCode::kNotFound) return Ok();
      return Fail(r.error());
    }
    k8s::ObjectReference ref = k8s::ObjectReference::For(k8s::resources::Services(), *r);
    recorder_.Event(ref, k8s::EventLevel::kNormal, "ExternalTrafficPolicy",
                    "Local -> Cluster: local addresses are announced by one node (agent flag "
                    "--etp-local=elect keeps Local and elects among nodes with ready endpoints)");
    log::Info("reset externalTrafficPolicy to Cluster", {{"service", service.Key()}});
    return Ok();
  });
}

void KubeWriter::UpsertL2Advertisement(const L2Advertisement& l2) {
  Json obj = L2AdvertisementObject(l2);
  Enqueue("l2/" + l2.name, obj.dump(), [this, obj, name = l2.name]() -> Status {
    Json patch = {{"spec", obj["spec"]}};
    auto r = client_.Patch(k8s::resources::L2Advertisements(), "", name, k8s::PatchType::kMerge,
                           patch, "");
    if (r) return Ok();
    if (r.error().code() != ErrorCode::kNotFound) return Fail(r.error());
    auto c = client_.Create(k8s::resources::L2Advertisements(), obj);
    if (!c) return Fail(c.error());
    return Ok();
  });
}

void KubeWriter::DeleteL2Advertisement(const std::string& name) {
  Enqueue("l2/" + name, "delete", [this, name]() -> Status {
    auto st = client_.Delete(k8s::resources::L2Advertisements(), "", name, {});
    if (!st && st.error().code() != ErrorCode::kNotFound) return st;
    return Ok();
  });
}

void KubeWriter::Event(const ServiceEvent& event) {
  // `kubectl describe` lists a Service's events by involvedObject.uid, so the reference needs the
  // Service's uid: read it (off the reconcile path, on the writer's queue) before recording.
  // One target per message: two events of one reason in one pass (e.g. one per family of a
  // dual-stack Service) are both recorded; a repeated message is dropped by the dedup window.
  const std::string target =
      "event/" + event.service.Key() + "/" + event.reason + "/" + event.message;
  Enqueue(target, event.message, [this, event]() -> Status {
    auto svc = client_.Get(k8s::resources::Services(), event.service.ns, event.service.name);
    if (!svc) {
      if (svc.error().code() == ErrorCode::kNotFound) return Ok();
      return Fail(svc.error());
    }
    recorder_.Event(k8s::ObjectReference::For(k8s::resources::Services(), *svc),
                    event.warning ? k8s::EventLevel::kWarning : k8s::EventLevel::kNormal,
                    event.reason, event.message);
    return Ok();
  });
}

void KubeWriter::NodeEvent(bool warning, const std::string& reason, const std::string& message) {
  k8s::ObjectReference ref;
  ref.kind = "Lease";
  ref.api_version = "coordination.k8s.io/v1";
  ref.ns = options_.ns;
  ref.name = election::LeaseNameFor(election::NodeName(options_.node));
  recorder_.Event(ref, warning ? k8s::EventLevel::kWarning : k8s::EventLevel::kNormal, reason,
                  message);
}

}  // namespace pylon::agent
