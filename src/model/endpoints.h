// EndpointSlice view and kube-proxy's rules for "usable local endpoints"
// (docs/references.md, "externalTrafficPolicy Local (kube-proxy)").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace pylon::model {

inline constexpr const char* kLabelServiceName = "kubernetes.io/service-name";

struct Endpoint {
  std::string node_name;
  // kube-proxy reads nil ready/serving as true and nil terminating as false.
  bool ready = true;
  bool serving = true;
  bool terminating = false;
};

struct EndpointSlice {
  std::string ns;
  std::string name;
  std::string service_name;  // from the kubernetes.io/service-name label; empty if none
  // addressType: "IPv4", "IPv6" or "FQDN" (required and immutable in the API); empty when absent.
  // kube-proxy programs each family from the slices of that family only.
  std::string address_type;
  std::vector<Endpoint> endpoints;
};

Result<EndpointSlice> ParseEndpointSlice(const Json& obj);

// True when `node` has a usable endpoint among the Service's slices: a ready one, or, if the
// node has no ready one, a serving-and-terminating one (kube-proxy's fallback).
bool HasLocalEndpoint(const std::vector<const EndpointSlice*>& slices, const std::string& node);

}  // namespace pylon::model
