#include "k8s/lease.h"

#include "common/time.h"

namespace pylon::k8s {
namespace {

Status ReadTime(const Json& spec, const char* key, std::optional<WallTime>* out) {
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return Ok();
  if (!it->is_string()) {
    return Fail(ErrorCode::kInvalidArgument, std::string("lease spec.") + key + " not a string");
  }
  auto t = ParseTime(it->get<std::string>());
  if (!t) return Fail(t.error().Wrap(std::string("lease spec.") + key));
  *out = *t;
  return Ok();
}

Status ReadInt(const Json& spec, const char* key, std::optional<int64_t>* out) {
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return Ok();
  if (!it->is_number_integer()) {
    return Fail(ErrorCode::kInvalidArgument, std::string("lease spec.") + key + " not an integer");
  }
  *out = it->get<int64_t>();
  return Ok();
}

}  // namespace

Result<LeaseSpec> ParseLeaseSpec(const Json& lease) {
  if (!lease.is_object()) return Fail(ErrorCode::kInvalidArgument, "lease: not an object");
  LeaseSpec out;
  auto sit = lease.find("spec");
  if (sit == lease.end() || sit->is_null()) return out;
  if (!sit->is_object()) return Fail(ErrorCode::kInvalidArgument, "lease: spec not an object");
  const Json& spec = *sit;
  if (auto h = spec.find("holderIdentity"); h != spec.end() && !h->is_null()) {
    if (!h->is_string()) {
      return Fail(ErrorCode::kInvalidArgument, "lease spec.holderIdentity not a string");
    }
    out.holder_identity = h->get<std::string>();
  }
  if (auto s = ReadInt(spec, "leaseDurationSeconds", &out.lease_duration_seconds); !s) {
    return Fail(s.error());
  }
  std::optional<int64_t> transitions;
  if (auto s = ReadInt(spec, "leaseTransitions", &transitions); !s) return Fail(s.error());
  out.lease_transitions = transitions.value_or(0);
  if (auto s = ReadTime(spec, "acquireTime", &out.acquire_time); !s) return Fail(s.error());
  if (auto s = ReadTime(spec, "renewTime", &out.renew_time); !s) return Fail(s.error());
  return out;
}

Json LeaseSpecToJson(const LeaseSpec& spec) {
  Json j = Json::object();
  j["holderIdentity"] = spec.holder_identity;
  if (spec.lease_duration_seconds) j["leaseDurationSeconds"] = *spec.lease_duration_seconds;
  if (spec.acquire_time) j["acquireTime"] = FormatMicroTime(*spec.acquire_time);
  if (spec.renew_time) j["renewTime"] = FormatMicroTime(*spec.renew_time);
  j["leaseTransitions"] = spec.lease_transitions;
  return j;
}

Json MakeLease(std::string_view ns, std::string_view name, const LeaseSpec& spec) {
  Json j = {{"apiVersion", "coordination.k8s.io/v1"},
            {"kind", "Lease"},
            {"metadata", {{"name", std::string(name)}, {"namespace", std::string(ns)}}}};
  j["spec"] = LeaseSpecToJson(spec);
  return j;
}

Json WithLeaseSpec(const Json& lease, const LeaseSpec& spec) {
  Json j = lease.is_object() ? lease : Json::object();
  j["apiVersion"] = "coordination.k8s.io/v1";
  j["kind"] = "Lease";
  j["spec"] = LeaseSpecToJson(spec);
  return j;
}

}  // namespace pylon::k8s
