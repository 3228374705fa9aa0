#include "apiserver/handler.h"

#include <algorithm>
#include <random>
#include <thread>

#include "apiserver/discovery.h"
#include "apiserver/table.h"

namespace pylon::apiserver {

struct ApiHandler::Route {
  std::string group, version, resource, ns, name, sub;
  bool watch_prefix = false;
  TypePtr type;        // the type as requested (version, events.k8s.io view)
  TypePtr store_type;  // the type the store keeps the objects under
  bool events_v1 = false;
  std::string verb;
  AuditRecord audit;
};

namespace {

using http::Request;
using http::Response;

Response JsonResponse(int status, std::string body, std::string content_type = "application/json") {
  Response r;
  r.status = status;
  r.headers.emplace_back("Content-Type", std::move(content_type));
  r.headers.emplace_back("Cache-Control", "no-cache, private");
  r.body = std::move(body);
  return r;
}

Response ErrorResponse(const ApiError& e) {
  Response r = JsonResponse(e.code, Dump(e.ToStatus()));
  if (e.code == 429 || e.retry_after_seconds > 0)
    r.headers.emplace_back("Retry-After", std::to_string(std::max(1, e.retry_after_seconds)));
  return r;
}

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool Truthy(const std::string& v) { return v == "true" || v == "1"; }

// "application/json;as=Table;v=v1;g=meta.k8s.io, application/json" → "meta.k8s.io/v1" or "".
std::string TableVersion(const std::string& accept) {
  std::size_t pos = 0;
  while (pos < accept.size()) {
    std::size_t comma = accept.find(',', pos);
    std::string part =
        accept.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? accept.size() : comma + 1;
    if (part.find("as=Table") == std::string::npos ||
        part.find("g=meta.k8s.io") == std::string::npos)
      continue;
    if (part.find("v=v1beta1") != std::string::npos) return "meta.k8s.io/v1beta1";
    if (part.find("v=v1") != std::string::npos) return "meta.k8s.io/v1";
  }
  return "";
}

// Core v1 Event → events.k8s.io/v1 Event.
Json CoreToEventsV1(const Json& e) {
  Json o = Json::object();
  o["kind"] = "Event";
  o["apiVersion"] = "events.k8s.io/v1";
  o["metadata"] = e.contains("metadata") ? e["metadata"] : Json::object();
  o["eventTime"] = e.contains("eventTime") ? e["eventTime"] : Json(nullptr);
  auto copy = [&](const char* from, const char* to) {
    if (const Json* v = Find(e, {from}); v && !v->is_null()) o[to] = *v;
  };
  copy("series", "series");
  copy("reportingComponent", "reportingController");
  copy("reportingInstance", "reportingInstance");
  copy("action", "action");
  copy("reason", "reason");
  copy("involvedObject", "regarding");
  copy("related", "related");
  copy("message", "note");
  copy("type", "type");
  copy("source", "deprecatedSource");
  copy("firstTimestamp", "deprecatedFirstTimestamp");
  copy("lastTimestamp", "deprecatedLastTimestamp");
  copy("count", "deprecatedCount");
  return o;
}

Json EventsV1ToCore(const Json& e) {
  Json o = Json::object();
  o["kind"] = "Event";
  o["apiVersion"] = "v1";
  o["metadata"] = e.contains("metadata") ? e["metadata"] : Json::object();
  auto copy = [&](const char* from, const char* to) {
    if (const Json* v = Find(e, {from}); v && !v->is_null()) o[to] = *v;
  };
  copy("regarding", "involvedObject");
  copy("reason", "reason");
  copy("note", "message");
  copy("deprecatedSource", "source");
  copy("deprecatedFirstTimestamp", "firstTimestamp");
  copy("deprecatedLastTimestamp", "lastTimestamp");
  copy("deprecatedCount", "count");
  copy("type", "type");
  copy("eventTime", "eventTime");
  copy("series", "series");
  copy("action", "action");
  copy("related", "related");
  copy("reportingController", "reportingComponent");
  copy("reportingInstance", "reportingInstance");
  return o;
}

// Field selectors written against events.k8s.io/v1 names, mapped to the core names.
std::string MapEventsV1Fields(std::string sel) {
  auto replace_all = [&](const std::string& from, const std::string& to) {
    std::size_t p = 0;
    while ((p = sel.find(from, p)) != std::string::npos) {
      sel.replace(p, from.size(), to);
      p += to.size();
    }
  };
  replace_all("regarding.", "involvedObject.");
  replace_all("reportingController", "reportingComponent");
  replace_all("deprecatedSource", "source");
  return sel;
}

}  // namespace

void ApiHandler::Handle(const Request& req, http::ResponseWriter& w) {
  const std::string& path = req.path;
  if (path == "/healthz" || path == "/livez" || path == "/readyz") {
    w.Send(Response::Text(200, "ok"));
    return;
  }
  if (path.rfind("/pylon", 0) == 0) {
    HandlePylon(req, w);
    return;
  }
  bool read = req.method == "GET" || req.method == "HEAD";
  if (path == "/version" || path == "/version/") {
    w.Send(JsonResponse(200, Dump(VersionDocument())));
    return;
  }
  std::vector<std::string> segs = Split(path);
  if (segs.empty()) {
    Json paths =
        Json::array({"/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"});
    w.Send(JsonResponse(200, Dump(Json{{"paths", paths}})));
    return;
  }
  Route route;
  std::vector<std::string> rest;
  std::vector<TypePtr> types;
  if (segs[0] == "api") {
    if (segs.size() == 1 || (segs.size() == 2 && segs[1] == "v1")) {
      if (!read) return w.Send(ErrorResponse(MethodNotAllowedError()));
      if (segs.size() == 1)
        return w.Send(JsonResponse(200, Dump(ApiVersionsDocument(opts_.server_address))));
      return w.Send(JsonResponse(200, Dump(*ResourceListDocument(store_.Types(), "", "v1"))));
    }
    if (segs[1] != "v1") return w.Send(ErrorResponse(UnknownPathError()));
    route.version = "v1";
    rest.assign(segs.begin() + 2, segs.end());
  } else if (segs[0] == "apis") {
    if (segs.size() <= 3) {
      if (!read) return w.Send(ErrorResponse(MethodNotAllowedError()));
      types = store_.Types();
      std::optional<Json> doc;
      if (segs.size() == 1)
        doc = GroupListDocument(types);
      else if (segs.size() == 2)
        doc = GroupDocument(types, segs[1]);
      else
        doc = ResourceListDocument(types, segs[1], segs[2]);
      if (!doc) return w.Send(ErrorResponse(UnknownPathError()));
      return w.Send(JsonResponse(200, Dump(*doc)));
    }
    route.group = segs[1];
    route.version = segs[2];
    rest.assign(segs.begin() + 3, segs.end());
  } else {
    return w.Send(ErrorResponse(UnknownPathError()));
  }
  if (!rest.empty() && rest[0] == "watch") {
    route.watch_prefix = true;
    rest.erase(rest.begin());
  }
  if (rest.size() >= 3 && rest[0] == "namespaces" && rest[2] != "status" && rest[2] != "finalize") {
    route.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty() || rest.size() > 3) return w.Send(ErrorResponse(UnknownPathError()));
  route.resource = rest[0];
  if (rest.size() > 1) route.name = rest[1];
  if (rest.size() > 2) route.sub = rest[2];
  HandleResource(req, w, route);
}

void ApiHandler::HandlePylon(const Request& req, http::ResponseWriter& w) {
  const std::string& p = req.path;
  if (p == "/pylon/faults" && req.method == "GET") {
    w.Send(JsonResponse(200, Dump(faults_.Get().ToJson())));
  } else if (p == "/pylon/faults" && (req.method == "POST" || req.method == "PUT")) {
    std::string err;
    auto j = ParseJson(req.body.empty() ? "{}" : req.body, &err);
    if (!j) return w.Send(ErrorResponse(BadRequestError("invalid JSON: " + err)));
    auto s = FaultSettings::FromJson(*j);
    if (!s) return w.Send(ErrorResponse(BadRequestError(s.error().message())));
    if (auto st = faults_.Set(*s); !st)
      return w.Send(ErrorResponse(BadRequestError(st.error().message())));
    w.Send(JsonResponse(200, Dump(faults_.Get().ToJson())));
  } else if (p == "/pylon/faults/cut-watches" && req.method == "POST") {
    std::size_t n = store_.WatcherCount();
    store_.CloseAllWatches();
    w.Send(JsonResponse(200, Dump(Json{{"closed", n}})));
  } else if (p == "/pylon/faults/compact" && req.method == "POST") {
    store_.CompactHistory();
    w.Send(JsonResponse(200, Dump(Json{{"compacted_rv", store_.CurrentRv()}})));
  } else {
    w.Send(ErrorResponse(UnknownPathError()));
  }
}

void ApiHandler::HandleResource(const Request& req, http::ResponseWriter& w, Route& route) {
  route.type = store_.Lookup(route.group, route.version, route.resource);
  if (!route.type) return w.Send(ErrorResponse(UnknownPathError()));
  route.store_type = route.type;
  route.events_v1 = route.group == "events.k8s.io" && route.resource == "events";
  if (route.events_v1) route.store_type = store_.Lookup("", "v1", "events");
  const ResourceType& type = *route.type;
  if (!route.sub.empty() && !(route.sub == "status" && type.has_status))
    return w.Send(ErrorResponse(UnknownPathError()));
  if (!type.namespaced && !route.ns.empty()) return w.Send(ErrorResponse(UnknownPathError()));
  const std::string& m = req.method;
  bool has_name = !route.name.empty();
  std::string verb;
  if (m == "GET" || m == "HEAD")
    verb = has_name ? "get" : (route.watch_prefix || Truthy(req.Query("watch")) ? "watch" : "list");
  else if (m == "POST" && !has_name)
    verb = "create";
  else if (m == "PUT" && has_name)
    verb = "update";
  else if (m == "PATCH" && has_name)
    verb = "patch";
  else if (m == "DELETE")
    verb = has_name ? "delete" : "deletecollection";
  if (route.watch_prefix && has_name && verb == "get") verb = "watch";
  route.verb = verb;
  route.audit = {req.Header("user-agent"),
                 verb,
                 route.group,
                 route.resource,
                 route.sub,
                 route.ns,
                 route.name,
                 0};
  auto send = [&](const Response& r) {
    route.audit.code = r.status;
    if (audit_) audit_->Write(route.audit);
    w.Send(r);
  };
  if (verb.empty()) return send(ErrorResponse(MethodNotAllowedError()));

  bool is_write = verb == "create" || verb == "update" || verb == "patch" || verb == "delete";
  FaultDecision fault = faults_.Decide(req.path, is_write, type.Gr(), route.name);
  if (fault.latency_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(fault.latency_ms));
  if (fault.error) return send(ErrorResponse(*fault.error));

  const ResourceType& st = *route.store_type;
  bool dry_run = req.Query("dryRun") == "All";
  bool status = route.sub == "status";
  std::string table_version = TableVersion(req.Header("accept"));
  TableOptions topts;
  topts.api_version = table_version;
  topts.now = clock_.WallNow();
  std::string inc = req.Query("includeObject");
  topts.include = inc == "Object" ? IncludeObject::kObject
                  : inc == "None" ? IncludeObject::kNone
                                  : IncludeObject::kMetadata;

  // Renders a stored object as the requested version/kind view.
  auto present = [&](const ObjectPtr& obj) -> ObjectPtr {
    if (route.events_v1) return std::make_shared<const Json>(CoreToEventsV1(*obj));
    if (GetString(*obj, {"kind"}) == "Status") return obj;
    if (GetString(*obj, {"apiVersion"}) != type.ApiVersion()) {
      auto c = std::make_shared<Json>(*obj);
      (*c)["apiVersion"] = type.ApiVersion();
      return c;
    }
    return obj;
  };
  auto reply_object = [&](int code, const ObjectPtr& obj) {
    ObjectPtr p = present(obj);
    if (!table_version.empty() && verb == "get") {
      Json meta = Json{{"resourceVersion", GetString(*p, {"metadata", "resourceVersion"})}};
      return send(JsonResponse(
          code, Dump(ToTable(type, {p}, meta, topts)),
          "application/json;as=Table;v=" + table_version.substr(12) + ";g=meta.k8s.io"));
    }
    send(JsonResponse(code, Dump(*p)));
  };
  auto parse_body = [&](Json* out) -> bool {
    std::string ct = req.Header("content-type");
    std::string base = ct.substr(0, ct.find(';'));
    if (!base.empty() && base != "application/json" && base != "*/*") {
      send(ErrorResponse(UnsupportedMediaTypeError({"application/json", "application/yaml"})));
      return false;
    }
    std::string err;
    auto j = ParseJson(req.body, &err);
    if (!j) {
      send(ErrorResponse(BadRequestError(type.kind + " in version \"" + type.version +
                                         "\" cannot be handled as a " + type.kind + ": " + err)));
      return false;
    }
    *out = route.events_v1 ? EventsV1ToCore(*j) : std::move(*j);
    return true;
  };
  std::string field_selector = req.Query("fieldSelector");
  if (route.events_v1) field_selector = MapEventsV1Fields(field_selector);

  if (verb == "get") {
    auto r = store_.Get(st, route.ns, route.name);
    if (!r) return send(ErrorResponse(r.error()));
    return reply_object(200, *r);
  }
  if (verb == "list") {
    ListOptions o;
    o.ns = route.ns;
    o.label_selector = req.Query("labelSelector");
    o.field_selector = field_selector;
    o.resource_version = req.Query("resourceVersion");
    o.continue_token = req.Query("continue");
    std::string limit = req.Query("limit");
    if (!limit.empty()) o.limit = std::atoll(limit.c_str());
    auto r = store_.List(st, o);
    if (!r) return send(ErrorResponse(r.error()));
    Json meta = Json::object();
    meta["resourceVersion"] = std::to_string(r->resource_version);
    if (!r->continue_token.empty()) meta["continue"] = r->continue_token;
    if (r->remaining > 0) meta["remainingItemCount"] = r->remaining;
    if (!table_version.empty()) {
      std::vector<ObjectPtr> items;
      for (const auto& o2 : r->items) items.push_back(present(o2));
      return send(JsonResponse(
          200, Dump(ToTable(type, items, meta, topts)),
          "application/json;as=Table;v=" + table_version.substr(12) + ";g=meta.k8s.io"));
    }
    std::string out = "{\"kind\":" + Dump(Json(type.list_kind)) +
                      ",\"apiVersion\":" + Dump(Json(type.ApiVersion())) +
                      ",\"metadata\":" + Dump(meta) + ",\"items\":[";
    std::string strip = "{\"kind\":" + Dump(Json(type.kind)) +
                        ",\"apiVersion\":" + Dump(Json(type.ApiVersion())) + ",";
    bool first = true;
    for (const auto& item : r->items) {
      std::string s = Dump(*present(item));
      if (!type.custom && s.rfind(strip, 0) == 0) s = "{" + s.substr(strip.size());
      if (!first) out += ",";
      out += s;
      first = false;
    }
    out += "]}";
    return send(JsonResponse(200, std::move(out)));
  }
  if (verb == "watch") {
    if (has_name) {
      std::string sel = "metadata.name=" + route.name;
      if (!field_selector.empty()) sel += "," + field_selector;
      field_selector = sel;
    }
    Request copy = req;
    for (auto& [k, v] : copy.query)
      if (k == "fieldSelector") v = field_selector;
    if (!copy.HasQuery("fieldSelector") && !field_selector.empty())
      copy.query.emplace_back("fieldSelector", field_selector);
    return ServeWatch(copy, w, route);
  }
  if (verb == "create") {
    if (status) return send(ErrorResponse(MethodNotAllowedError()));
    Json body;
    if (!parse_body(&body)) return;
    auto r = store_.Create(st, route.ns, std::move(body), dry_run);
    if (!r) return send(ErrorResponse(r.error()));
    return reply_object(201, *r);
  }
  if (verb == "update") {
    Json body;
    if (!parse_body(&body)) return;
    auto r = store_.Update(st, route.ns, route.name, std::move(body), status, dry_run);
    if (!r) return send(ErrorResponse(r.error()));
    return reply_object(200, *r);
  }
  if (verb == "patch") {
    auto pt = PatchTypeFromContentType(req.Header("content-type"));
    if (!pt) {
      std::vector<std::string> accepted = {"application/json-patch+json",
                                           "application/merge-patch+json"};
      if (!type.custom) accepted.push_back("application/strategic-merge-patch+json");
      return send(ErrorResponse(UnsupportedMediaTypeError(accepted)));
    }
    if (route.events_v1 && *pt == PatchType::kStrategicMerge) pt = PatchType::kMergePatch;
    auto r = store_.Patch(st, route.ns, route.name, *pt, req.body, status, dry_run);
    if (!r) return send(ErrorResponse(r.error()));
    return reply_object(200, *r);
  }
  if (verb == "delete") {
    Json opts = Json::object();
    if (!req.body.empty()) {
      std::string err;
      auto j = ParseJson(req.body, &err);
      if (!j || !j->is_object())
        return send(ErrorResponse(BadRequestError("invalid DeleteOptions: " + err)));
      opts = *j;
    }
    if (const Json* pre = Find(opts, {"preconditions"}); !pre) {
      // Preconditions may also come as query parameters.
    }
    if (req.Query("dryRun") == "All") dry_run = true;
    auto r = store_.Delete(st, route.ns, route.name, opts, dry_run);
    if (!r) return send(ErrorResponse(r.error()));
    return reply_object(200, *r);
  }
  if (verb == "deletecollection") {
    ListOptions o;
    o.ns = route.ns;
    o.label_selector = req.Query("labelSelector");
    o.field_selector = field_selector;
    auto r = store_.DeleteCollection(st, o);
    if (!r) return send(ErrorResponse(r.error()));
    Json list = Json::object();
    list["kind"] = type.list_kind;
    list["apiVersion"] = type.ApiVersion();
    list["metadata"] = Json{{"resourceVersion", std::to_string(store_.CurrentRv())}};
    Json items = Json::array();
    for (const auto& o2 : *r) items.push_back(*present(o2));
    list["items"] = items;
    return send(JsonResponse(200, Dump(list)));
  }
  send(ErrorResponse(MethodNotAllowedError()));
}

void ApiHandler::ServeWatch(const Request& req, http::ResponseWriter& w, Route& route) {
  const ResourceType& type = *route.type;
  auto finish_audit = [&](int code) {
    route.audit.code = code;
    if (audit_) audit_->Write(route.audit);
  };
  if (Truthy(req.Query("sendInitialEvents"))) {
    ApiError e =
        InvalidError("meta.k8s.io", "ListOptions", "",
                     {FieldError::Forbidden("sendInitialEvents",
                                            "sendInitialEvents is not supported by this server")});
    finish_audit(e.code);
    return w.Send(ErrorResponse(e));
  }
  WatchOptions o;
  o.ns = route.ns;
  o.label_selector = req.Query("labelSelector");
  o.field_selector = req.Query("fieldSelector");
  o.resource_version = req.Query("resourceVersion");
  bool bookmarks = Truthy(req.Query("allowWatchBookmarks"));
  std::string table_version = TableVersion(req.Header("accept"));
  using namespace std::chrono;
  milliseconds timeout;
  std::string ts = req.Query("timeoutSeconds");
  long long tsec = ts.empty() ? 0 : std::atoll(ts.c_str());
  if (tsec > 0) {
    timeout = seconds(tsec);
  } else {
    static thread_local std::mt19937 rng{std::random_device{}()};
    timeout = seconds(1800 + rng() % 1800);
  }
  if (timeout < seconds(1)) timeout = seconds(1);  // never close within 1 s without events

  std::string content_type =
      table_version.empty()
          ? "application/json"
          : "application/json;as=Table;v=" + table_version.substr(12) + ";g=meta.k8s.io";
  http::HeaderList headers = {{"Content-Type", content_type},
                              {"Cache-Control", "no-cache, private"}};
  auto watcher = store_.Watch(*route.store_type, o);
  if (!watcher) {
    finish_audit(watcher.error().code == 410 ? 200 : watcher.error().code);
    if (watcher.error().code != 410) return w.Send(ErrorResponse(watcher.error()));
    if (!w.StartStream(200, headers)) return;
    w.WriteChunk("{\"type\":\"ERROR\",\"object\":" + Dump(watcher.error().ToStatus()) + "}\n");
    return;
  }
  finish_audit(200);
  std::shared_ptr<Watcher> wp = *watcher;
  TableOptions topts;
  topts.api_version = table_version;
  topts.include =
      req.Query("includeObject") == "Object" ? IncludeObject::kObject : IncludeObject::kMetadata;
  bool first_table = true;

  auto frame = [&](const char* etype, const ObjectPtr& obj) {
    ObjectPtr p = obj;
    if (route.events_v1) {
      p = std::make_shared<const Json>(CoreToEventsV1(*obj));
    } else if (GetString(*obj, {"apiVersion"}) != type.ApiVersion()) {
      auto c = std::make_shared<Json>(*obj);
      (*c)["apiVersion"] = type.ApiVersion();
      p = c;
    }
    if (!table_version.empty()) {
      topts.now = clock_.WallNow();
      topts.column_definitions = first_table;
      first_table = false;
      Json meta = Json{{"resourceVersion", GetString(*p, {"metadata", "resourceVersion"})}};
      return std::string("{\"type\":\"") + etype +
             "\",\"object\":" + Dump(ToTable(type, {p}, meta, topts)) + "}\n";
    }
    return std::string("{\"type\":\"") + etype + "\",\"object\":" + Dump(*p) + "}\n";
  };
  auto bookmark = [&](std::uint64_t rv) {
    Json b = Json::object();
    b["kind"] = type.kind;
    b["apiVersion"] = type.ApiVersion();
    b["metadata"] = Json{{"resourceVersion", std::to_string(rv)}};
    return "{\"type\":\"BOOKMARK\",\"object\":" + Dump(b) + "}\n";
  };

  if (w.StartStream(200, headers)) {
    auto start = steady_clock::now();
    auto deadline = start + timeout;
    // One bookmark shortly before the deadline, so the client can resume from a fresh RV.
    auto final_bookmark = deadline - std::min<milliseconds>(seconds(2), timeout / 4);
    auto next_bookmark = start + opts_.bookmark_interval;
    bool final_sent = false;
    for (;;) {
      if (w.Done()) break;
      auto now = steady_clock::now();
      if (now >= deadline) break;
      auto wait = std::min<milliseconds>(
          milliseconds(250), duration_cast<milliseconds>(deadline - now) + milliseconds(1));
      Watcher::Batch batch = wp->Wait(wait);
      bool ok = true;
      for (const auto& ev : batch.events) {
        if (!w.WriteChunk(frame(ev.type, ev.object))) {
          ok = false;
          break;
        }
      }
      if (!ok || batch.closed) break;
      now = steady_clock::now();
      if (bookmarks && (now >= next_bookmark || (!final_sent && now >= final_bookmark))) {
        if (now >= final_bookmark) final_sent = true;
        next_bookmark = now + opts_.bookmark_interval;
        if (!w.WriteChunk(bookmark(batch.progress))) break;
      }
    }
  }
  store_.StopWatch(wp);
}

}  // namespace pylon::apiserver
