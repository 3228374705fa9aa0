#include "pool/families.h"

#include <algorithm>
#include <string>

namespace pylon::pool {
namespace {

using net::Family;

Family Other(Family f) { return f == Family::kV4 ? Family::kV6 : Family::kV4; }

bool Has(std::span<const Family> list, Family f) {
  return std::find(list.begin(), list.end(), f) != list.end();
}

std::string Describe(std::string_view pool_name) {
  return pool_name.empty() ? std::string("the pool") : std::string(pool_name);
}

std::string Offered(std::span<const Family> offered) {
  if (offered.empty()) return "no pools";
  std::string out;
  for (Family f : {Family::kV4, Family::kV6}) {
    if (!Has(offered, f)) continue;
    if (!out.empty()) out += " and ";
    out += std::string(net::FamilyName(f));
  }
  return out + " pools only";
}

}  // namespace

Result<IpFamilyPolicy> ParseIpFamilyPolicy(std::string_view text) {
  if (text.empty() || text == "SingleStack") return IpFamilyPolicy::kSingleStack;
  if (text == "PreferDualStack") return IpFamilyPolicy::kPreferDualStack;
  if (text == "RequireDualStack") return IpFamilyPolicy::kRequireDualStack;
  return Fail(ErrorCode::kInvalidArgument,
              "unknown ipFamilyPolicy \"" + std::string(text) +
                  "\" (want SingleStack, PreferDualStack or RequireDualStack)");
}

std::string_view IpFamilyPolicyName(IpFamilyPolicy policy) {
  switch (policy) {
    case IpFamilyPolicy::kSingleStack:
      return "SingleStack";
    case IpFamilyPolicy::kPreferDualStack:
      return "PreferDualStack";
    case IpFamilyPolicy::kRequireDualStack:
      return "RequireDualStack";
  }
  return "?";
}

Result<std::vector<Family>> SelectFamilies(const FamilySelection& in) {
  const auto& listed = in.service_families;
  if (listed.size() > 2) {
    return Fail(ErrorCode::kInvalidArgument, "ipFamilies lists more than two families");
  }
  if (listed.size() == 2 && listed[0] == listed[1]) {
    return Fail(ErrorCode::kInvalidArgument,
                "ipFamilies lists " + std::string(net::FamilyName(listed[0])) + " twice");
  }
  const std::string policy(IpFamilyPolicyName(in.policy));
  const std::string pool = Describe(in.pool_name);

  std::vector<Family> wanted = listed;
  if (wanted.empty()) wanted.push_back(in.primary);
  if (in.policy != IpFamilyPolicy::kSingleStack && wanted.size() == 1 &&
      (listed.empty() || in.policy == IpFamilyPolicy::kRequireDualStack)) {
    wanted.push_back(Other(wanted[0]));
  }

  std::vector<Family> available;
  for (Family f : wanted) {
    if (Has(in.offered, f)) available.push_back(f);
  }

  switch (in.policy) {
    case IpFamilyPolicy::kSingleStack:
      if (available.empty()) {
        return Fail(ErrorCode::kUnsupported, policy + " " +
                                                 std::string(net::FamilyName(wanted[0])) + " but " +
                                                 pool + " has " + Offered(in.offered));
      }
      return std::vector<Family>{available[0]};
    case IpFamilyPolicy::kPreferDualStack:
      if (available.empty()) {
        std::string fams;
        for (Family f : wanted) fams += (fams.empty() ? "" : "/") + std::string(net::FamilyName(f));
        return Fail(ErrorCode::kUnsupported,
                    policy + " " + fams + " but " + pool + " has " + Offered(in.offered));
      }
      return available;
    case IpFamilyPolicy::kRequireDualStack:
      for (Family f : wanted) {
        if (!Has(in.offered, f)) {
          return Fail(ErrorCode::kUnsupported, policy + " but " + pool + " has no " +
                                                   std::string(net::FamilyName(f)) + " pool");
        }
      }
      return wanted;
  }
  return Fail(ErrorCode::kInternal, "unhandled ipFamilyPolicy");
}

}  // namespace pylon::pool
