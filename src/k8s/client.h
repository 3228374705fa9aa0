// The Kubernetes client interface used by every controller. Objects are JSON; errors are Result
// values with ErrorCode kNotFound / kConflict / kAlreadyExists / kGone / kInvalidArgument /
// kUnavailable / kPermission / kUnsupported (see api_status.h for the mapping). Implementations:
// ClientImpl (HTTP) and FakeClient (in memory, for tests). All methods are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/canceller.h"
#include "k8s/object.h"
#include "k8s/resource.h"
#include "k8s/watch_event.h"

namespace pylon::k8s {

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  // Unset: most recent (consistent read). "0": any (may be served from cache). "N": not older
  // (sent with resourceVersionMatch=NotOlderThan when paginated: without it, "N" with `limit` is
  // Exact).
  std::optional<std::string> resource_version;
  // Page size (`limit`); pages are fetched with `continue` and merged. 0: one unlimited request.
  int64_t page_size = 500;
  // Optional: applied to every item as its page arrives, before the next page is fetched, so a
  // caller that trims objects (an informer transform) never holds a whole list of untrimmed ones.
  // Clients may ignore it (test doubles); callers re-apply an idempotent transform if they must.
  std::function<void(Json& item)> item_transform;
};

struct ObjectList {
  std::vector<Json> items;  // every item carries kind and apiVersion (filled in if the server
                            // left them out, as it does for built-in kinds)
  std::string resource_version;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  // "" or "0": synthetic ADDED events for all current objects first; "N": changes after N only.
  std::string resource_version;
  bool allow_bookmarks = true;
  std::optional<int64_t> timeout_seconds;  // server-side watch deadline
};

// Receives ADDED / MODIFIED / DELETED / BOOKMARK events (never ERROR: that ends the watch with an
// error). Return false to stop watching.
using WatchHandler = std::function<bool(WatchEvent&&)>;

enum class PatchType { kMerge, kJson, kStrategicMerge };
const char* PatchContentType(PatchType type);

struct DeleteOptions {
  std::string precondition_uid;               // "" = none
  std::string precondition_resource_version;  // "" = none
  std::string propagation_policy;             // "" | Orphan | Background | Foreground
  std::optional<int64_t> grace_period_seconds;
};

class Client {
 public:
  virtual ~Client() = default;

  virtual Result<Json> Get(const Resource& res, std::string_view ns, std::string_view name) = 0;
  // Lists in `ns` ("" = all namespaces, or a cluster-scoped resource).
  virtual Result<ObjectList> List(const Resource& res, std::string_view ns,
                                  const ListOptions& opts) = 0;
  // POST; the namespace comes from obj.metadata.namespace (required for namespaced resources).
  virtual Result<Json> Create(const Resource& res, const Json& obj) = 0;
  // PUT of the main resource; a stale metadata.resourceVersion gives kConflict.
  virtual Result<Json> Update(const Resource& res, const Json& obj) = 0;
  // PUT of the /status subresource.
  virtual Result<Json> UpdateStatus(const Resource& res, const Json& obj) = 0;
  virtual Result<Json> Patch(const Resource& res, std::string_view ns, std::string_view name,
                             PatchType type, const Json& patch,
                             std::string_view subresource = "") = 0;
  virtual Status Delete(const Resource& res, std::string_view ns, std::string_view name,
                        const DeleteOptions& opts = {}) = 0;
  // Blocks for one watch request: returns Ok when the server ends the stream cleanly, the handler
  // returns false, or `cancel` fires; an error for HTTP errors, transport failures, malformed
  // events and in-stream ERROR events (410 Expired/Gone → kGone). `cancel` may be null.
  virtual Status Watch(const Resource& res, std::string_view ns, const WatchOptions& opts,
                       const WatchHandler& handler, Canceller* cancel) = 0;
};

}  // namespace pylon::k8s
