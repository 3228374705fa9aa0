// libFuzzer target: arbitrary bytes, parsed as JSON, fed to every config parser and to the
// cross-object validator (three rounds, so the "previous version stays in force" paths run too).
// Besides crashes and sanitizer reports, it traps when an invariant of the result breaks:
// one status per candidate, no overlap between in-force groups, every in-force address found by
// FindAddress in its own group.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/parse.h"
#include "config/validate.h"

namespace {

using pylon::config::InForceConfig;
using pylon::config::ValidationResult;
using pylon::net::AddressRange;
using pylon::net::Family;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void CheckResult(const ValidationResult& r, std::size_t candidates) {
  Check(r.statuses.size() == candidates);
  for (const auto& s : r.statuses) {
    if (s.valid) Check(r.config.Find(s.key) != nullptr);
  }
  for (Family f : {Family::kV4, Family::kV6}) {
    std::vector<AddressRange> all;
    for (const auto& [key, g] : r.config.groups()) {
      Check(g.key() == key);
      for (const auto& e : g.entries(f)) {
        Check(!e.ranges.empty());
        for (const auto& range : e.ranges) {
          Check(range.family() == f);
          Check(e.span.Contains(range));
          if (e.subnet)
            Check(e.subnet->Contains(range.first()) && e.subnet->Contains(range.last()));
          all.push_back(range);
          for (const auto& a : {range.first(), range.last()}) {
            auto m = r.config.FindAddress(a);
            Check(m.has_value() && m->group == &g && m->entry == &e);
          }
        }
      }
    }
    std::sort(all.begin(), all.end(),
              [](const AddressRange& a, const AddressRange& b) { return a.first() < b.first(); });
    for (std::size_t i = 1; i < all.size(); ++i) Check(all[i - 1].last() < all[i].first());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;

  (void)pylon::config::ParseServiceGroup(j);
  (void)pylon::config::ParseLoadBalancerClass(j);
  (void)pylon::config::ParseAddressSource(j);
  if (auto agent = pylon::config::ParseNodeAgent(j)) {
    if (agent->local_interface) (void)agent->local_interface->Matches("enp1s0");
    for (const auto& p : agent->interfaces) (void)p.Matches("eth0");
  }

  // An array is a list of candidates; anything else is one candidate.
  std::span<const nlohmann::json> all(&j, 1);
  if (j.is_array()) all = j.get_ref<const nlohmann::json::array_t&>();

  auto r1 = pylon::config::ValidateConfig(all, InForceConfig{});
  CheckResult(r1, all.size());
  auto half = all.first(all.size() / 2);
  auto r2 = pylon::config::ValidateConfig(half, r1.config);
  CheckResult(r2, half.size());
  auto r3 = pylon::config::ValidateConfig(all, r2.config);
  CheckResult(r3, all.size());
  return 0;
}
