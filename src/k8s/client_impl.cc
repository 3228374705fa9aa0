#include "k8s/client_impl.h"

#include "k8s/api_status.h"
#include "k8s/curl_transport.h"
#include "k8s/json_stream.h"

namespace pylon::k8s {
namespace {

constexpr int kMaxPages = 1000000;

// Serializes without throwing: invalid UTF-8 in a string is replaced, not an exception.
std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

bool Is2xx(int64_t status) { return status >= 200 && status < 300; }

std::string Describe(const Resource& res, std::string_view ns, std::string_view name) {
  std::string s = res.plural;
  if (!ns.empty() || !name.empty()) s += " ";
  if (!ns.empty()) s += std::string(ns) + "/";
  s += name;
  return s;
}

bool WatchContentTypeOk(const std::string& ct) {
  return ct.empty() || ct.rfind("application/json", 0) == 0 || ct.rfind("text/plain", 0) == 0;
}

}  // namespace

const char* PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}

Result<Json> ParseObjectReply(const HttpResponse& resp, const std::string& what) {
  if (!Is2xx(resp.status)) {
    return Fail(ErrorFromHttp(resp.status, resp.body, resp.retry_after, what));
  }
  auto j = ParseJson(resp.body, what + ": reply");
  if (!j) return Fail(ErrorCode::kUnavailable, j.error().message());
  if (!j->is_object()) {
    return Fail(ErrorCode::kUnavailable, what + ": reply is not a JSON object");
  }
  return j;
}

Result<ObjectList> ParseList(const Json& body, std::string* continue_token) {
  if (!body.is_object()) return Fail(ErrorCode::kInvalidArgument, "list: not a JSON object");
  ObjectList out;
  if (const Json* rv = Find(body, {"metadata", "resourceVersion"}); rv && !rv->is_null()) {
    if (!rv->is_string()) {
      return Fail(ErrorCode::kInvalidArgument, "list: metadata.resourceVersion not a string");
    }
    out.resource_version = rv->get<std::string>();
  }
  continue_token->clear();
  if (const Json* c = Find(body, {"metadata", "continue"}); c && !c->is_null()) {
    if (!c->is_string()) {
      return Fail(ErrorCode::kInvalidArgument, "list: metadata.continue not a string");
    }
    *continue_token = c->get<std::string>();
  }
  std::string item_kind = FindString(body, {"kind"}).value_or("");
  if (item_kind.size() > 4 && item_kind.compare(item_kind.size() - 4, 4, "List") == 0) {
    item_kind.resize(item_kind.size() - 4);
  } else {
    item_kind.clear();
  }
  std::string api_version = FindString(body, {"apiVersion"}).value_or("");
  auto items = body.find("items");
  if (items == body.end() || items->is_null()) return out;  // tolerated, though servers send []
  if (!items->is_array()) return Fail(ErrorCode::kInvalidArgument, "list: items is not a list");
  out.items.reserve(items->size());
  for (const auto& item : *items) {
    if (!item.is_object())
      return Fail(ErrorCode::kInvalidArgument, "list: an item is not an object");
    if (Name(item).empty()) {
      return Fail(ErrorCode::kInvalidArgument, "list: an item has no metadata.name");
    }
    out.items.push_back(item);
    Json& added = out.items.back();
    if (!added.contains("kind") && !item_kind.empty()) added["kind"] = item_kind;
    if (!added.contains("apiVersion") && !api_version.empty()) added["apiVersion"] = api_version;
  }
  return out;
}

ClientImpl::ClientImpl(std::unique_ptr<Transport> transport) : transport_(std::move(transport)) {}

Result<Json> ClientImpl::Send(HttpRequest req, const std::string& what) {
  auto resp = transport_->Do(req);
  if (!resp) return Fail(resp.error().Wrap(what));
  return ParseObjectReply(*resp, what);
}

Result<Json> ClientImpl::Get(const Resource& res, std::string_view ns, std::string_view name) {
  HttpRequest req;
  req.path = res.ObjectPath(ns, name);
  return Send(std::move(req), "get " + Describe(res, ns, name));
}

Result<ObjectList> ClientImpl::ListOnce(const Resource& res, std::string_view ns,
                                        const ListOptions& opts, bool paginate) {
  const std::string what = "list " + Describe(res, ns, "");
  ObjectList all;
  std::string cont;
  for (int page = 0; page < kMaxPages; ++page) {
    Query q;
    q.AddIf(!opts.label_selector.empty(), "labelSelector", opts.label_selector);
    q.AddIf(!opts.field_selector.empty(), "fieldSelector", opts.field_selector);
    if (paginate && opts.page_size > 0) q.Add("limit", std::to_string(opts.page_size));
    if (!cont.empty()) {
      q.Add("continue", cont);  // the token pins the snapshot; RV must not be sent with it
    } else if (opts.resource_version) {
      q.Add("resourceVersion", *opts.resource_version);
      // With `limit`, kube-apiserver reads an RV other than "0" as Exact when no match is given
      // (the legacy paginated semantics): a relist at an informer's last RV returned that old
      // snapshot, objects created since were missing from the cache until the next relist (the
      // soak saw a leader leave two new Services unallocated that way). Not older than is what
      // the field means.
      if (paginate && opts.page_size > 0 && *opts.resource_version != "0") {
        q.Add("resourceVersionMatch", "NotOlderThan");
      }
    }
    HttpRequest req;
    req.path = res.CollectionPath(ns) + q.String();
    auto body = Send(std::move(req), what);
    if (!body) {
      // An expired continue token (page 2+): fall back to one full list at the requested RV.
      if (body.error().code() == ErrorCode::kGone && !cont.empty()) {
        return ListOnce(res, ns, opts, /*paginate=*/false);
      }
      return Fail(body.error());
    }
    auto list = ParseList(*body, &cont);
    if (!list) return Fail(list.error().Wrap(what));
    *body = Json();  // the page's tree: freed before the items are merged
    if (opts.item_transform) {
      for (auto& item : list->items) opts.item_transform(item);
    }
    if (all.items.empty()) {
      all.items = std::move(list->items);
    } else {
      for (auto& item : list->items) all.items.push_back(std::move(item));
    }
    all.resource_version = list->resource_version;
    if (cont.empty()) return all;
  }
  return Fail(ErrorCode::kUnavailable, what + ": too many pages");
}

Result<ObjectList> ClientImpl::List(const Resource& res, std::string_view ns,
                                    const ListOptions& opts) {
  return ListOnce(res, ns, opts, /*paginate=*/true);
}

Result<Json> ClientImpl::Create(const Resource& res, const Json& obj) {
  std::string ns = Namespace(obj);
  if (res.namespaced && ns.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "create " + res.plural + ": object has no metadata.namespace");
  }
  HttpRequest req;
  req.method = "POST";
  req.path = res.CollectionPath(res.namespaced ? ns : "");
  req.body = Dump(obj);
  req.content_type = "application/json";
  return Send(std::move(req), "create " + Describe(res, ns, Name(obj)));
}

Result<Json> ClientImpl::Put(const Resource& res, const Json& obj, std::string_view subresource) {
  std::string ns = Namespace(obj);
  std::string name = Name(obj);
  std::string what =
      std::string(subresource.empty() ? "update " : "update status of ") + Describe(res, ns, name);
  if (name.empty()) return Fail(ErrorCode::kInvalidArgument, what + ": no metadata.name");
  if (res.namespaced && ns.empty()) {
    return Fail(ErrorCode::kInvalidArgument, what + ": no metadata.namespace");
  }
  HttpRequest req;
  req.method = "PUT";
  req.path = res.ObjectPath(res.namespaced ? ns : "", name, subresource);
  req.body = Dump(obj);
  req.content_type = "application/json";
  return Send(std::move(req), what);
}

Result<Json> ClientImpl::Update(const Resource& res, const Json& obj) { return Put(res, obj, ""); }

Result<Json> ClientImpl::UpdateStatus(const Resource& res, const Json& obj) {
  return Put(res, obj, "status");
}

Result<Json> ClientImpl::Patch(const Resource& res, std::string_view ns, std::string_view name,
                               PatchType type, const Json& patch, std::string_view subresource) {
  HttpRequest req;
  req.method = "PATCH";
  req.path = res.ObjectPath(ns, name, subresource);
  req.body = Dump(patch);
  req.content_type = PatchContentType(type);
  return Send(std::move(req), "patch " + Describe(res, ns, name));
}

Status ClientImpl::Delete(const Resource& res, std::string_view ns, std::string_view name,
                          const DeleteOptions& opts) {
  HttpRequest req;
  req.method = "DELETE";
  req.path = res.ObjectPath(ns, name);
  Json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  bool any = false;
  if (!opts.precondition_uid.empty()) {
    body["preconditions"]["uid"] = opts.precondition_uid;
    any = true;
  }
  if (!opts.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = opts.precondition_resource_version;
    any = true;
  }
  if (!opts.propagation_policy.empty()) {
    body["propagationPolicy"] = opts.propagation_policy;
    any = true;
  }
  if (opts.grace_period_seconds) {
    body["gracePeriodSeconds"] = *opts.grace_period_seconds;
    any = true;
  }
  if (any) {
    req.body = Dump(body);
    req.content_type = "application/json";
  }
  const std::string what = "delete " + Describe(res, ns, name);
  auto resp = transport_->Do(req);
  if (!resp) return Fail(resp.error().Wrap(what));
  if (!Is2xx(resp->status)) {
    return Fail(ErrorFromHttp(resp->status, resp->body, resp->retry_after, what));
  }
  return Ok();
}

Status ClientImpl::Watch(const Resource& res, std::string_view ns, const WatchOptions& opts,
                         const WatchHandler& handler, Canceller* cancel) {
  const std::string what = "watch " + Describe(res, ns, "");
  Query q;
  q.Add("watch", "1");
  q.AddIf(!opts.resource_version.empty(), "resourceVersion", opts.resource_version);
  q.AddIf(opts.allow_bookmarks, "allowWatchBookmarks", "true");
  if (opts.timeout_seconds) q.Add("timeoutSeconds", std::to_string(*opts.timeout_seconds));
  q.AddIf(!opts.label_selector.empty(), "labelSelector", opts.label_selector);
  q.AddIf(!opts.field_selector.empty(), "fieldSelector", opts.field_selector);
  HttpRequest req;
  req.path = res.CollectionPath(ns) + q.String();
  // Client-side guard a little past the server deadline; none when the server has no deadline.
  req.timeout = opts.timeout_seconds
                    ? std::chrono::milliseconds((*opts.timeout_seconds + 30) * 1000)
                    : std::chrono::milliseconds(0);
  JsonStreamScanner scanner;
  std::vector<std::string> values;
  std::optional<Error> stream_error;
  auto on_data = [&](std::string_view chunk) -> bool {
    values.clear();
    Status fed = scanner.Feed(chunk, &values);
    for (const auto& text : values) {
      auto ev = ParseWatchEventText(text);
      if (!ev) {
        stream_error = Error(ErrorCode::kUnavailable, what + ": " + ev.error().message());
        return false;
      }
      if (ev->type == EventType::kError) {
        auto st = ParseApiStatus(ev->object);
        if (!st) {
          stream_error = Error(ErrorCode::kUnavailable,
                               what + ": ERROR event without a Status: " + st.error().message());
        } else {
          stream_error = ErrorFromStatus(*st, what);
        }
        return false;
      }
      if (!handler(std::move(*ev))) return false;
    }
    if (!fed) {
      stream_error = Error(ErrorCode::kUnavailable, what + ": " + fed.error().message());
      return false;
    }
    return true;
  };
  auto resp = transport_->Stream(req, on_data, cancel);
  if (!resp) return Fail(resp.error().Wrap(what));
  if (!Is2xx(resp->status)) {
    return Fail(ErrorFromHttp(resp->status, resp->body, resp->retry_after, what));
  }
  if (!WatchContentTypeOk(resp->content_type)) {
    return Fail(ErrorCode::kUnsupported,
                what + ": unexpected content type \"" + resp->content_type + "\"");
  }
  if (stream_error) return Fail(*stream_error);
  return Ok();
}

Result<std::unique_ptr<Client>> NewClient(RestConfig config, const std::string& user_agent) {
  if (!user_agent.empty()) config.user_agent = user_agent;
  auto transport = CurlTransport::Create(config);
  if (!transport) return Fail(transport.error());
  return std::unique_ptr<Client>(new ClientImpl(std::move(*transport)));
}

}  // namespace pylon::k8s
