// For migration tests: PureLB 0.15-0.17's v2-only CRD (ServiceGroup, LBNodeAgent), made from
// Pylon's (deploy/crds/, as JSON): its v2 version alone, served and stored, without
// spec.writtenAs and the validation rules that read it. Null when `pylon_crd` has no v2 version.
#pragma once

#include <nlohmann/json.hpp>

namespace pylon::testing {

inline nlohmann::json PurelbV2OnlyCrd(nlohmann::json crd) {
  nlohmann::json v2;
  if (!crd.contains("spec") || !crd["spec"].contains("versions")) return nullptr;
  for (const auto& v : crd["spec"]["versions"]) {
    if (v.value("name", "") == "v2") v2 = v;
  }
  if (!v2.is_object()) return nullptr;
  v2["storage"] = true;
  auto& spec = v2["schema"]["openAPIV3Schema"]["properties"]["spec"];
  spec["properties"].erase("writtenAs");
  spec.erase("x-kubernetes-validations");
  crd["spec"]["versions"] = nlohmann::json::array({v2});
  return crd;
}

}  // namespace pylon::testing
