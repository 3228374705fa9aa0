// The resource types the server serves: built-in kinds and those defined by CRDs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apiserver/api_error.h"
#include "apiserver/json_util.h"

namespace pylon::apiserver {

struct PrinterColumn {
  std::string name;
  std::string type;  // integer|number|string|boolean|date
  std::string format;
  std::string description;
  std::string json_path;  // ".spec.replicas"
  int priority = 0;
};

struct ResourceType {
  std::string group;     // "" for core
  std::string version;   // the version this entry serves
  std::string resource;  // plural, "services"
  std::string singular;
  std::string kind;
  std::string list_kind;
  bool namespaced = true;
  bool has_status = false;  // a status subresource is served
  bool custom = false;      // defined by a CRD
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::string storage_version;         // custom: the CRD's storage version (objects are kept in it)
  Json schema;                         // custom: openAPIV3Schema of this version (may be null)
  std::vector<PrinterColumn> columns;  // custom: additionalPrinterColumns of this version

  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  GroupResource Gr() const { return {group, resource}; }
  // Key of the storage bucket: all versions of one group/resource share it.
  std::string StoreKey() const { return group + "/" + resource; }
};

using TypePtr = std::shared_ptr<const ResourceType>;

// Built-in kinds: core v1 namespaces, services, events, nodes, configmaps, secrets,
// serviceaccounts; apps/v1 deployments and daemonsets (stored only: no controller runs them);
// rbac.authorization.k8s.io/v1 clusterroles, clusterrolebindings, roles, rolebindings (stored only:
// the server authorizes nothing); coordination.k8s.io leases; discovery.k8s.io endpointslices;
// events.k8s.io events (a view of core events); apiextensions.k8s.io customresourcedefinitions.
std::vector<TypePtr> BuiltinTypes();

// Builds the types (one per served version) described by a CRD object.
std::vector<TypePtr> TypesFromCrd(const Json& crd);

}  // namespace pylon::apiserver
