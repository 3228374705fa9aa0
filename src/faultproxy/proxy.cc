#include "faultproxy/proxy.h"

#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>

#include "common/log.h"

namespace pylon::faultproxy {
namespace {

using std::chrono::milliseconds;

http::Response JsonReply(int status, const std::string& body) {
  http::Response r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = body;
  return r;
}

http::Response ErrorReply(const InjectedError& e) {
  http::Response r = JsonReply(e.code, e.body);
  if (e.retry_after_seconds > 0) {
    r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_seconds));
  }
  return r;
}

// What a client sees when the upstream cannot be reached (connection refused while kube-apiserver
// restarts, a timeout while it is stopped): the 503 an unavailable API server answers.
http::Response UpstreamDown(const Error& e) {
  return JsonReply(503, StatusBody(503, "ServiceUnavailable", "upstream: " + e.message()));
}

// Parses a decimal resourceVersion; 0 for "", "0" or anything not a number.
std::uint64_t ParseRv(const std::string& s) {
  if (s.empty() || s.size() > 19) return 0;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

}  // namespace

Result<std::unique_ptr<FaultProxy>> FaultProxy::Start(ProxyOptions options,
                                                      const FaultSettings& initial) {
  if (options.upstream.rfind("https://", 0) != 0 && options.upstream.rfind("http://", 0) != 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "upstream \"" + options.upstream + "\": want https://HOST:PORT");
  }
  std::unique_ptr<FaultProxy> p(new FaultProxy(std::move(options)));
  if (auto s = p->faults_.Set(initial); !s) return Fail(s.error());
  http::ServerOptions so;
  so.address = p->opts_.listen_host;
  so.port = p->opts_.port;
  so.limits.max_body_bytes = 64 * 1024 * 1024;
  so.idle_timeout = std::chrono::minutes(10);
  FaultProxy* self = p.get();
  auto server = http::Server::Start(
      so, [self](const http::Request& req, http::ResponseWriter& w) { self->Handle(req, w); });
  if (!server) return Fail(server.error().Wrap("fault-proxy: listen"));
  p->server_ = std::move(*server);
  return p;
}

FaultProxy::~FaultProxy() { Stop(); }

std::string FaultProxy::Url() const { return server_ ? server_->Url() : ""; }
std::uint16_t FaultProxy::port() const { return server_ ? server_->port() : 0; }

void FaultProxy::Stop() {
  if (stopping_.exchange(true)) return;
  {
    MutexLock lock(mu_);
    for (auto& [id, f] : inflight_) f.cancel->Cancel();
  }
  if (server_) server_->Stop();
}

std::uint64_t FaultProxy::Register(k8s::Canceller* cancel, bool watch) {
  MutexLock lock(mu_);
  std::uint64_t id = next_id_++;
  inflight_[id] = Inflight{cancel, watch};
  if (stopping_.load()) cancel->Cancel();
  return id;
}

void FaultProxy::Unregister(std::uint64_t id) {
  MutexLock lock(mu_);
  inflight_.erase(id);
}

std::size_t FaultProxy::CutWatches() {
  MutexLock lock(mu_);
  std::size_t n = 0;
  for (auto& [id, f] : inflight_) {
    if (f.watch && !f.cancel->Cancelled()) {
      f.cancel->Cancel();
      ++n;
    }
  }
  return n;
}

std::size_t FaultProxy::OpenWatches() const {
  MutexLock lock(mu_);
  std::size_t n = 0;
  for (const auto& [id, f] : inflight_) n += f.watch ? 1 : 0;
  return n;
}

// Compaction, for real: etcd is compacted at its current revision through its v3 JSON gateway
// (POST /v3/kv/range for the revision, then /v3/kv/compaction). kube-apiserver's watch cache does
// not learn about a compaction it did not do itself: it keeps serving watches from the events it
// holds in memory, so a watch from a compacted resourceVersion is not reliably answered with 410
// (it is only once the cache's own window has moved past it). To make "resuming watchers get 410"
// deterministic, the proxy also remembers the compacted revision and answers a watch request that
// resumes from an older (non-zero) resourceVersion itself, with exactly the ERROR event
// kube-apiserver sends: {"type":"ERROR","object":{"kind":"Status",...,"reason":"Expired",
// "code":410}}. Lists are forwarded untouched: kube-apiserver serves them from its cache or etcd.
Result<std::uint64_t> FaultProxy::Compact() {
  if (opts_.etcd.empty()) {
    return Fail(ErrorCode::kUnsupported, "fault-proxy runs without --etcd: cannot compact");
  }
  k8s::RestConfig rc;
  rc.server = opts_.etcd;
  rc.request_timeout = std::chrono::seconds(10);
  auto t = k8s::CurlTransport::Create(rc);
  if (!t) return Fail(t.error());
  k8s::HttpRequest range;
  range.method = "POST";
  range.path = "/v3/kv/range";
  range.content_type = "application/json";
  range.body = R"({"key":"L3JlZ2lzdHJ5Lw==","limit":"1","keys_only":true})";  // "/registry/"
  auto resp = (*t)->Do(range);
  if (!resp) return Fail(resp.error().Wrap("etcd range"));
  if (resp->status != 200) {
    return Fail(ErrorCode::kUnavailable,
                "etcd range: HTTP " + std::to_string(resp->status) + ": " + resp->body);
  }
  Json j = Json::parse(resp->body, nullptr, false);
  std::uint64_t rev = 0;
  if (auto text = FindString(j, {"header", "revision"})) {
    rev = ParseRv(*text);
  } else if (const Json* r = Find(j, {"header", "revision"}); r && r->is_number_unsigned()) {
    rev = r->get<std::uint64_t>();
  }
  if (rev == 0)
    return Fail(ErrorCode::kInternal, "etcd range: no header.revision in " + resp->body);
  k8s::HttpRequest compact;
  compact.method = "POST";
  compact.path = "/v3/kv/compaction";
  compact.content_type = "application/json";
  compact.body = R"({"revision":")" + std::to_string(rev) + R"(","physical":true})";
  resp = (*t)->Do(compact);
  if (!resp) return Fail(resp.error().Wrap("etcd compaction"));
  // "required revision has been compacted" (a compaction at this revision already happened) is
  // fine: the history before `rev` is gone either way.
  if (resp->status != 200 && resp->body.find("compacted") == std::string::npos) {
    return Fail(ErrorCode::kUnavailable,
                "etcd compaction: HTTP " + std::to_string(resp->status) + ": " + resp->body);
  }
  std::uint64_t prev = compacted_rv_.load();
  while (prev < rev && !compacted_rv_.compare_exchange_weak(prev, rev)) {
  }
  log::Info("etcd compacted", {{"revision", std::to_string(rev)}});
  return rev;
}

void FaultProxy::Handle(const http::Request& req, http::ResponseWriter& w) {
  if (req.path == "/pylon" || req.path.rfind("/pylon/", 0) == 0) return HandleControl(req, w);
  RequestInfo info = ClassifyRequest(req.method, req.path, req.Query("watch"));
  FaultDecision fault = faults_.Decide(info);
  if (fault.latency_ms > 0) std::this_thread::sleep_for(milliseconds(fault.latency_ms));
  if (fault.error) return w.Send(ErrorReply(*fault.error));
  if (info.is_watch && req.method == "GET") return ForwardWatch(req, w);
  Forward(req, info, w);
}

void FaultProxy::HandleControl(const http::Request& req, http::ResponseWriter& w) {
  const std::string& p = req.path;
  auto bad = [&](const std::string& msg) {
    w.Send(JsonReply(400, StatusBody(400, "BadRequest", msg)));
  };
  if (p == "/pylon/faults" && req.method == "GET") {
    w.Send(JsonReply(200, faults_.Get().ToJson().dump()));
  } else if (p == "/pylon/faults" && (req.method == "POST" || req.method == "PUT")) {
    Json j = Json::parse(req.body.empty() ? "{}" : req.body, nullptr, false);
    if (j.is_discarded()) return bad("invalid JSON");
    auto s = FaultSettings::FromJson(j);
    if (!s) return bad(s.error().message());
    if (auto st = faults_.Set(*s); !st) return bad(st.error().message());
    log::Info("faults set", {{"settings", faults_.Get().ToJson().dump()}});
    w.Send(JsonReply(200, faults_.Get().ToJson().dump()));
  } else if (p == "/pylon/faults/cut-watches" && req.method == "POST") {
    std::size_t n = CutWatches();
    w.Send(JsonReply(200, Json{{"closed", n}}.dump()));
  } else if (p == "/pylon/faults/compact" && req.method == "POST") {
    auto rev = Compact();
    if (!rev) {
      int code = rev.error().code() == ErrorCode::kUnsupported ? 501 : 503;
      return w.Send(
          JsonReply(code, StatusBody(code, code == 501 ? "NotImplemented" : "ServiceUnavailable",
                                     rev.error().message())));
    }
    w.Send(JsonReply(200, Json{{"compacted_rv", *rev}}.dump()));
  } else {
    w.Send(JsonReply(404, StatusBody(404, "NotFound",
                                     "the server could not find the requested "
                                     "resource")));
  }
}

Result<k8s::CurlTransport*> FaultProxy::TransportFor(const http::Request& req) {
  std::string auth = req.Header("authorization");
  std::string token;
  if (auth.size() > 7 && (auth.rfind("Bearer ", 0) == 0 || auth.rfind("bearer ", 0) == 0)) {
    token = auth.substr(7);
  }
  std::string agent = req.Header("user-agent");
  if (agent.empty()) agent = "pylon-fault-proxy";
  std::string key = token + "\n" + agent;
  MutexLock lock(mu_);
  auto it = transports_.find(key);
  if (it != transports_.end()) return it->second.get();
  k8s::RestConfig rc;
  rc.server = opts_.upstream;
  rc.ca_pem = opts_.upstream_ca_pem;
  rc.token = token;
  rc.user_agent = agent;
  // A hung upstream (SIGSTOP) accepts TCP but never finishes the TLS handshake: waiting as long
  // as for an answer keeps the client's view the same as without the proxy (it hangs, it does not
  // get a fast 503).
  rc.connect_timeout = opts_.upstream_timeout;
  rc.request_timeout = opts_.upstream_timeout;
  auto t = k8s::CurlTransport::Create(rc);
  if (!t) return Fail(t.error());
  k8s::CurlTransport* raw = t->get();
  transports_[key] = std::move(*t);
  return raw;
}

k8s::HttpRequest FaultProxy::UpstreamRequest(const http::Request& req, bool watch) const {
  k8s::HttpRequest up;
  up.method = req.method;
  up.path = req.target;
  up.body = req.body;
  up.content_type = req.Header("content-type");
  up.accept = req.Header("accept");
  if (up.accept.empty()) up.accept = "*/*";
  if (watch) up.timeout = milliseconds(0);
  return up;
}

// Non-watch requests go through Stream too (the body is collected), so that Stop() can cancel a
// request stuck on a stopped upstream instead of waiting for its timeout.
void FaultProxy::Forward(const http::Request& req, const RequestInfo& /*info*/,
                         http::ResponseWriter& w) {
  auto t = TransportFor(req);
  if (!t) return w.Send(UpstreamDown(t.error()));
  k8s::Canceller cancel;
  std::uint64_t id = Register(&cancel, false);
  std::string body;
  auto resp = (*t)->Stream(
      UpstreamRequest(req, false),
      [&](std::string_view data) {
        body.append(data);
        return true;
      },
      &cancel);
  Unregister(id);
  if (!resp) return w.Send(UpstreamDown(resp.error()));
  http::Response out;
  out.status = static_cast<int>(resp->status);
  out.body = resp->status / 100 == 2 ? std::move(body) : std::move(resp->body);
  if (!resp->content_type.empty()) out.headers.emplace_back("Content-Type", resp->content_type);
  if (resp->retry_after) {
    out.headers.emplace_back("Retry-After", std::to_string(resp->retry_after->count()));
  }
  w.Send(out);
}

void FaultProxy::ForwardWatch(const http::Request& req, http::ResponseWriter& w) {
  std::uint64_t rv = ParseRv(req.Query("resourceVersion"));
  std::uint64_t compacted = compacted_rv_.load();
  if (rv != 0 && rv < compacted) {
    // See Compact(): the 410 kube-apiserver's watch cache would answer once its window has moved
    // past `rv`.
    if (!w.StartStream(200, {{"Content-Type", "application/json"}})) return;
    w.WriteChunk(ExpiredWatchEvent(rv, compacted));
    return;
  }
  auto t = TransportFor(req);
  if (!t) return w.Send(UpstreamDown(t.error()));

  // The upstream stream is read on its own thread; this (the connection's) thread forwards what
  // arrives and polls whether the client is still there (ResponseWriter is single-threaded).
  struct Shared {
    Mutex mu;
    std::condition_variable cv;
    std::deque<std::string> chunks PYLON_GUARDED_BY(mu);
    bool finished PYLON_GUARDED_BY(mu) = false;
    std::optional<Result<k8s::HttpResponse>> result PYLON_GUARDED_BY(mu);
  } sh;
  k8s::Canceller cancel;
  std::uint64_t id = Register(&cancel, true);
  k8s::HttpRequest up = UpstreamRequest(req, true);
  k8s::CurlTransport* transport = *t;
  std::thread reader([&] {
    auto r = transport->Stream(
        up,
        [&](std::string_view data) {
          MutexLock lock(sh.mu);
          sh.chunks.emplace_back(data);
          sh.cv.notify_one();
          return !cancel.Cancelled();
        },
        &cancel);
    MutexLock lock(sh.mu);
    sh.result = std::move(r);
    sh.finished = true;
    sh.cv.notify_one();
  });
  bool started = false;
  bool client_gone = false;
  // Whole lines only (one watch event per line): a cut never hands the client half an event.
  std::string pending;
  auto forward = [&](std::string_view data) {
    if (client_gone || data.empty()) return;
    if (!started) {
      started = true;
      if (!w.StartStream(200, {{"Content-Type", "application/json"}})) {
        client_gone = true;
        return;
      }
    }
    if (!w.WriteChunk(data)) client_gone = true;
  };
  while (true) {
    std::deque<std::string> batch;
    bool finished = false;
    {
      MutexLock lock(sh.mu);
      auto deadline = std::chrono::steady_clock::now() + milliseconds(200);
      while (!sh.finished && sh.chunks.empty()) {
        if (lock.WaitUntil(sh.cv, deadline) == std::cv_status::timeout) break;
      }
      batch.swap(sh.chunks);
      finished = sh.finished;
    }
    if (!cancel.Cancelled()) {
      for (const auto& c : batch) pending += c;
      std::size_t end = pending.rfind('\n');
      if (end != std::string::npos) {
        forward(std::string_view(pending).substr(0, end + 1));
        pending.erase(0, end + 1);
      }
    }
    if (finished) {
      if (!cancel.Cancelled()) forward(pending);  // the upstream ended the stream itself
      break;
    }
    if (client_gone || w.Done() || cancel.Cancelled()) {
      cancel.Cancel();
      // The reader ends promptly (the canceller wakes curl); drain what it hands over.
    }
  }
  reader.join();
  Unregister(id);
  if (started || client_gone) return;  // a started stream ends with the last chunk
  // The reader is gone: its result is this thread's alone now.
  Result<k8s::HttpResponse> r = [&] {
    MutexLock lock(sh.mu);
    return std::move(*sh.result);
  }();
  if (!r) return w.Send(UpstreamDown(r.error()));
  http::Response out;
  out.status = static_cast<int>(r->status);
  if (cancel.Cancelled() && out.status == 0) out.status = 200;  // cut before any byte
  out.body = r->body;
  if (!r->content_type.empty()) out.headers.emplace_back("Content-Type", r->content_type);
  if (r->retry_after) {
    out.headers.emplace_back("Retry-After", std::to_string(r->retry_after->count()));
  }
  w.Send(out);
}

}  // namespace pylon::faultproxy
