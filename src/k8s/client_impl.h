// Client over HTTP (a Transport). Stateless apart from the transport; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "k8s/client.h"
#include "k8s/rest_config.h"
#include "k8s/transport.h"

namespace pylon::k8s {

class ClientImpl final : public Client {
 public:
  explicit ClientImpl(std::unique_ptr<Transport> transport);

  Result<Json> Get(const Resource& res, std::string_view ns, std::string_view name) override;
  Result<ObjectList> List(const Resource& res, std::string_view ns,
                          const ListOptions& opts) override;
  Result<Json> Create(const Resource& res, const Json& obj) override;
  Result<Json> Update(const Resource& res, const Json& obj) override;
  Result<Json> UpdateStatus(const Resource& res, const Json& obj) override;
  Result<Json> Patch(const Resource& res, std::string_view ns, std::string_view name,
                     PatchType type, const Json& patch, std::string_view subresource) override;
  Status Delete(const Resource& res, std::string_view ns, std::string_view name,
                const DeleteOptions& opts) override;
  Status Watch(const Resource& res, std::string_view ns, const WatchOptions& opts,
               const WatchHandler& handler, Canceller* cancel) override;

 private:
  Result<Json> Send(HttpRequest req, const std::string& what);
  Result<Json> Put(const Resource& res, const Json& obj, std::string_view subresource);
  Result<ObjectList> ListOnce(const Resource& res, std::string_view ns, const ListOptions& opts,
                              bool paginate);

  std::unique_ptr<Transport> transport_;
};

// A ClientImpl over libcurl for `config`; `user_agent` (e.g. "pylon-allocator/0.1.0") overrides
// the config's when non-empty.
Result<std::unique_ptr<Client>> NewClient(RestConfig config, const std::string& user_agent = "");

// Parses a 2xx reply body into an object; a non-2xx reply into its Status error. Pure.
Result<Json> ParseObjectReply(const HttpResponse& resp, const std::string& what);
// Parses a list body ({"metadata":{"resourceVersion","continue"},"items":[...]}), filling in each
// item's kind (the list kind minus "List") and apiVersion when missing. Pure.
Result<ObjectList> ParseList(const Json& body, std::string* continue_token);

}  // namespace pylon::k8s
