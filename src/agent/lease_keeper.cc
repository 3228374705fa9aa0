#include "agent/lease_keeper.h"

#include <chrono>
#include <utility>

#include "common/log.h"
#include "election/subnets_annotation.h"
#include "k8s/lease.h"
#include "k8s/object.h"
#include "k8s/resource.h"
#include "k8s/retry.h"

namespace pylon::agent {

LeaseKeeper::LeaseKeeper(k8s::Client& client, std::string ns, election::NodeName node,
                         LeaseTiming timing, const Clock& clock, std::function<void()> on_change,
                         QuietLeaseOptions quiet)
    : client_(client),
      ns_(std::move(ns)),
      node_(std::move(node)),
      clock_(clock),
      on_change_(std::move(on_change)),
      health_(timing),
      pacing_(timing, quiet) {}

LeaseKeeper::~LeaseKeeper() { Stop(); }

void LeaseKeeper::SetSubnets(std::vector<net::Prefix> subnets) {
  std::string text = election::FormatSubnetsAnnotation(subnets);
  MutexLock lock(mu_);
  if (text == subnets_annotation_) return;
  subnets_annotation_ = std::move(text);
  worker_.Wake();
}

void LeaseKeeper::SetAnnotation(const std::string& key, std::string value) {
  MutexLock lock(mu_);
  auto it = extra_annotations_.find(key);
  if (it != extra_annotations_.end() && it->second == value) return;
  if (it == extra_annotations_.end() && value.empty()) return;
  extra_annotations_[key] = std::move(value);
  worker_.Wake();
}

void LeaseKeeper::ClearAnnotation(const std::string& key) {
  MutexLock lock(mu_);
  auto it = extra_annotations_.find(key);
  if (it != extra_annotations_.end() && it->second.empty()) return;
  extra_annotations_[key] = "";
  worker_.Wake();
}

void LeaseKeeper::SetReleased(bool released) {
  MutexLock lock(mu_);
  if (released_ == released) return;
  released_ = released;
  worker_.Wake();
}

void LeaseKeeper::SetInstance(std::string uid) {
  {
    MutexLock lock(mu_);
    instance_ = uid;
  }
  SetAnnotation(std::string(kInstanceAnnotation), std::move(uid));
}

bool LeaseKeeper::SetHeartbeatsCarryLiveness(bool carried) {
  LeasePace pace;
  {
    MutexLock lock(mu_);
    if (!pacing_.Observe(carried, clock_.Now())) return false;
    pace = pacing_.pace();
  }
  worker_.Wake();
  auto ms = [](Duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  };
  log::Info(pace.mode == LeaseMode::kQuiet
                ? "node lease quiet: heartbeats carry this node's liveness"
                : "node lease loud: heartbeats do not carry this node's liveness",
            {{"lease", LeaseName()},
             {"renew_period_ms", ms(pace.renew_period)},
             {"lease_duration_ms", ms(pace.lease_duration)},
             {"renew_deadline_ms", ms(pace.renew_deadline)}});
  return true;
}

LeasePacing LeaseKeeper::pacing() const {
  MutexLock lock(mu_);
  return pacing_;
}

void LeaseKeeper::Start() {
  // Real time for the wait: the worker paces real API requests. The FakeClock never drives this
  // thread; tests call RenewOnce() directly.
  worker_.StartPeriodic([this] {
    (void)RenewOnce();  // it logs and counts its own failure; the next period tries again
    MutexLock lock(mu_);
    return pacing_.WaitAfter(last_ok_);
  });
}

void LeaseKeeper::Stop() { worker_.Stop(); }

bool LeaseKeeper::Healthy() const {
  MutexLock lock(mu_);
  return health_.Healthy(clock_.Now());
}

std::optional<SteadyTime> LeaseKeeper::HealthyUntil() const {
  MutexLock lock(mu_);
  return health_.HealthyUntil();
}

Status LeaseKeeper::RenewOnce() {
  std::string subnets;
  std::map<std::string, std::string> extra;
  LeasePace pace;
  bool released = false;
  {
    MutexLock lock(mu_);
    released = released_;
    subnets = subnets_annotation_;
    extra = extra_annotations_;
    pace = pacing_.pace();
  }
  const auto& res = k8s::resources::Leases();
  const std::string name = LeaseName();
  const WallTime now = clock_.WallNow();
  const auto duration_s =
      std::chrono::duration_cast<std::chrono::seconds>(pace.lease_duration).count();
  // The lease as we last wrote it: renewals are one Update (no Get) while nobody else writes it.
  auto annotate = [&](Json& obj) {
    obj["metadata"]["annotations"][std::string(election::kSubnetsAnnotation)] = subnets;
    for (const auto& [k, v] : extra) {
      if (v.empty()) {
        obj["metadata"]["annotations"].erase(k);
      } else {
        obj["metadata"]["annotations"][k] = v;
      }
    }
  };
  auto attempt = [&](bool use_cached) -> Status {
    Result<Json> current = Fail(ErrorCode::kNotFound, "");
    if (use_cached && last_written_) {
      current = *last_written_;
    } else {
      current = client_.Get(res, ns_, name);
    }
    last_written_.reset();
    if (!current && current.error().code() != ErrorCode::kNotFound) {
      return Fail(current.error());
    }
    k8s::LeaseSpec spec;
    if (current) {
      auto parsed = k8s::ParseLeaseSpec(*current);
      if (parsed) spec = *parsed;
    }
    const std::string holder = released ? std::string() : node_.str();
    if (!current || spec.holder_identity != holder) {
      spec.acquire_time = now;
      if (current) ++spec.lease_transitions;
    }
    spec.holder_identity = holder;
    spec.lease_duration_seconds = duration_s;
    spec.renew_time = now;
    if (!current) {
      Json obj = k8s::MakeLease(ns_, name, spec);
      annotate(obj);
      obj["metadata"]["labels"]["app.kubernetes.io/component"] = "lbnodeagent";
      auto created = client_.Create(res, obj);
      if (!created) return Fail(created.error());
      last_written_ = std::move(*created);
      return Ok();
    }
    Json obj = k8s::WithLeaseSpec(*current, spec);
    annotate(obj);
    auto updated = client_.Update(res, obj);
    if (!updated) return Fail(updated.error());
    last_written_ = std::move(*updated);
    return Ok();
  };
  // The first attempt writes over the lease as we last wrote it; if it changed or went away
  // behind our back (a previous incarnation), the second reads it again. No wait in between.
  k8s::RetryOptions once;
  once.steps = 2;
  once.initial = Duration::zero();
  bool use_cached = true;
  Status st = k8s::RetryOnError(
      once,
      [](const Error& e) {
        return e.code() == ErrorCode::kConflict || e.code() == ErrorCode::kAlreadyExists ||
               e.code() == ErrorCode::kNotFound;
      },
      [&] { return attempt(std::exchange(use_cached, false)); });
  bool before, after;
  {
    MutexLock lock(mu_);
    before = health_.Healthy(clock_.Now());
    if (st) {
      health_.RenewSucceeded(clock_.Now(), pace.renew_deadline);
    } else {
      health_.RenewFailed(clock_.Now());
    }
    last_ok_ = static_cast<bool>(st);
    after = health_.Healthy(clock_.Now());
  }
  if (st) {
    ++renewals_;
  } else {
    ++failures_;
    log::Warn("lease renewal failed", {{"lease", name}, {"error", st.error().message()}});
  }
  if (before != after) {
    if (after) {
      log::Info("node lease healthy", {{"lease", name}});
    } else {
      log::Warn("node lease unhealthy: renewals failed for the renew deadline", {{"lease", name}});
    }
  }
  if (on_change_ && before != after) on_change_();
  return st;
}

Result<LeaseDeleteOutcome> LeaseKeeper::Delete() {
  const auto& res = k8s::resources::Leases();
  std::string instance;
  {
    MutexLock lock(mu_);
    instance = instance_;
  }
  auto absent_or = [](const Status& st, LeaseDeleteOutcome ok) -> Result<LeaseDeleteOutcome> {
    if (st) return ok;
    if (st.error().code() == ErrorCode::kNotFound) return LeaseDeleteOutcome::kAbsent;
    return Fail(st.error());
  };
  if (instance.empty()) {
    return absent_or(client_.Delete(res, ns_, LeaseName(), {}), LeaseDeleteOutcome::kDeleted);
  }
  // Deleted with the resourceVersion read just before as a precondition: a write in between
  // (409) makes it read and check again; after the last attempt the error says it gave up.
  LeaseDeleteOutcome outcome = LeaseDeleteOutcome::kDeleted;
  Status st = k8s::RetryOnConflict([&]() -> Status {
    auto current = client_.Get(res, ns_, LeaseName());
    if (!current) return Fail(current.error());
    const std::string holder = k8s::Annotation(*current, kInstanceAnnotation);
    if (holder != instance) {
      log::Info("node lease belongs to another instance; not deleting it",
                {{"lease", LeaseName()}, {"instance", holder}, {"self", instance}});
      outcome = LeaseDeleteOutcome::kOtherInstance;
      return Ok();
    }
    k8s::DeleteOptions opts;
    opts.precondition_resource_version = k8s::ResourceVersion(*current);
    outcome = LeaseDeleteOutcome::kDeleted;
    return client_.Delete(res, ns_, LeaseName(), opts);
  });
  return absent_or(st, outcome);
}

}  // namespace pylon::agent
