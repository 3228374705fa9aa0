// meta.k8s.io Table responses (what `kubectl get` asks for), with kube-apiserver's columns for the
// built-in kinds (Services, Deployments, DaemonSets, Secrets, RBAC bindings...: pkg/printers/
// internalversion), the CRD's additionalPrinterColumns for custom resources and Name/Age for
// other kinds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apiserver/json_util.h"
#include "apiserver/resource.h"

namespace pylon::apiserver {

enum class IncludeObject { kNone, kMetadata, kObject };

struct TableOptions {
  std::string api_version = "meta.k8s.io/v1";
  IncludeObject include = IncludeObject::kMetadata;
  bool column_definitions = true;  // watches send them only with the first event
  WallTime now{};
};

// `objects` carry kind/apiVersion. `list_meta` is the ListMeta to put in the table's metadata.
Json ToTable(const ResourceType& type, const std::vector<std::shared_ptr<const Json>>& objects,
             const Json& list_meta, const TableOptions& options);

// Evaluates the JSONPath subset used by printer columns: ".a.b", "[N]", "[?(@.k==\"v\")]".
// Returns null when the path does not resolve.
Json EvalJsonPath(const Json& obj, const std::string& path);

}  // namespace pylon::apiserver
