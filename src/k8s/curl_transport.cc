#include "k8s/curl_transport.h"

#include <curl/curl.h>

#include <cstring>
#include <mutex>

#include "common/text.h"

namespace pylon::k8s {
namespace {

constexpr size_t kMaxPool = 16;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

struct EasyDeleter {
  void operator()(CURL* e) const { curl_easy_cleanup(e); }
};
using Easy = std::unique_ptr<CURL, EasyDeleter>;

Error CurlError(CURLcode rc, const char* errbuf, const std::string& what) {
  std::string msg = what + ": " + curl_easy_strerror(rc);
  if (errbuf[0] != '\0') msg += std::string(" (") + errbuf + ")";
  ErrorCode code = ErrorCode::kUnavailable;
  if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
      rc == CURLE_SSL_CERTPROBLEM) {
    code = ErrorCode::kPermission;
  }
  return Error(code, std::move(msg));
}

}  // namespace

struct CurlTransport::Xfer {
  CURL* easy = nullptr;
  HttpResponse resp;
  const DataCallback* on_data = nullptr;
  bool stopped = false;  // on_data returned false
  Slist headers;         // must outlive the transfer
  Slist connect_to;      // likewise
  char errbuf[CURL_ERROR_SIZE] = {0};

  bool Streaming() {
    if (on_data == nullptr) return false;
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    return code >= 200 && code < 300;
  }

  static size_t OnWrite(char* data, size_t size, size_t n, void* self) {
    auto* x = static_cast<Xfer*>(self);
    size_t len = size * n;
    if (x->Streaming()) {
      if (!(*x->on_data)(std::string_view(data, len))) {
        x->stopped = true;
        return 0;  // aborts the transfer with CURLE_WRITE_ERROR
      }
      return len;
    }
    x->resp.body.append(data, len);
    return len;
  }

  static size_t OnHeader(char* data, size_t size, size_t n, void* self) {
    auto* x = static_cast<Xfer*>(self);
    size_t len = size * n;
    std::string_view line(data, len);
    if (line.rfind("HTTP/", 0) == 0) {  // a new header block (e.g. after 100 Continue)
      x->resp.content_type.clear();
      x->resp.retry_after.reset();
      return len;
    }
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return len;
    std::string_view name = line.substr(0, colon);
    std::string value(Trim(line.substr(colon + 1), " \r\n"));
    if (IEquals(name, "Content-Type")) {
      x->resp.content_type = value;
    } else if (IEquals(name, "Retry-After")) {
      char* end = nullptr;
      long secs = std::strtol(value.c_str(), &end, 10);
      if (end != value.c_str() && *end == '\0' && secs >= 0) {
        x->resp.retry_after = std::chrono::seconds(secs);
      }
    }
    return len;
  }
};

Result<std::unique_ptr<CurlTransport>> CurlTransport::Create(const RestConfig& config,
                                                             const Clock& clock) {
  GlobalInit();
  std::unique_ptr<CurlTransport> t(new CurlTransport(config, clock));
  if (config.server.rfind("unix://", 0) == 0) {
    t->unix_socket_ = config.server.substr(std::string("unix://").size());
    if (t->unix_socket_.empty() || t->unix_socket_[0] != '/') {
      return Fail(ErrorCode::kInvalidArgument,
                  "server URL \"" + config.server + "\": want unix:///absolute/path");
    }
    t->url_base_ = "http://localhost";
    return t;
  }
  // Split scheme://host[:port][/prefix] to rewrite the host for tls-server-name.
  const std::string& s = config.server;
  auto scheme_end = s.find("://");
  if (scheme_end == std::string::npos) {
    return Fail(ErrorCode::kInvalidArgument, "server URL \"" + s + "\" has no scheme");
  }
  std::string scheme = s.substr(0, scheme_end);
  std::string rest = s.substr(scheme_end + 3);
  std::string prefix;
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    prefix = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  std::string host = rest;
  std::string port = scheme == "https" ? "443" : "80";
  if (!rest.empty() && rest[0] == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos) {
      return Fail(ErrorCode::kInvalidArgument, "server URL \"" + s + "\": bad IPv6 host");
    }
    host = rest.substr(0, close + 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') port = rest.substr(close + 2);
  } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty()) return Fail(ErrorCode::kInvalidArgument, "server URL \"" + s + "\": no host");
  if (!config.tls_server_name.empty()) {
    t->url_base_ = scheme + "://" + config.tls_server_name + ":" + port + prefix;
    t->connect_to_ = config.tls_server_name + ":" + port + ":" + host + ":" + port;
  } else {
    t->url_base_ = s;
  }
  return t;
}

CurlTransport::CurlTransport(const RestConfig& config, const Clock& clock)
    : config_(config), tokens_(config.token, config.token_file, clock) {}

CurlTransport::~CurlTransport() {
  for (void* e : pool_) curl_easy_cleanup(static_cast<CURL*>(e));
}

void* CurlTransport::Borrow() {
  {
    MutexLock lock(pool_mu_);
    if (!pool_.empty()) {
      void* e = pool_.back();
      pool_.pop_back();
      curl_easy_reset(static_cast<CURL*>(e));  // keeps live connections and caches
      return e;
    }
  }
  return curl_easy_init();
}

void CurlTransport::Return(void* easy) {
  MutexLock lock(pool_mu_);
  if (pool_.size() < kMaxPool) {
    pool_.push_back(easy);
  } else {
    curl_easy_cleanup(static_cast<CURL*>(easy));
  }
}

Status CurlTransport::Setup(void* handle, const HttpRequest& req, Xfer* x,
                            const std::string& token) {
  CURL* e = static_cast<CURL*>(handle);
  x->easy = e;
  std::string url = url_base_ + req.path;
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  if (!unix_socket_.empty()) curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, unix_socket_.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Xfer::OnWrite);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Xfer::OnHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(e, CURLOPT_USERAGENT, config_.user_agent.c_str());
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(config_.connect_timeout.count()));
  auto timeout = req.timeout.value_or(config_.request_timeout);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");  // gzip if the server offers it
  if (!connect_to_.empty()) {
    x->connect_to.reset(curl_slist_append(nullptr, connect_to_.c_str()));
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, x->connect_to.get());
  }
  // TLS: verification stays on unless the config turns it off.
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!config_.ca_pem.empty()) {
    curl_blob ca{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(), CURL_BLOB_COPY};
    if (curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca) != CURLE_OK) {
      return Fail(ErrorCode::kUnsupported, "libcurl rejects CURLOPT_CAINFO_BLOB");
    }
    curl_easy_setopt(e, CURLOPT_CAPATH, nullptr);  // trust only the configured CA
  }
  if (!config_.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(config_.client_cert_pem.data()),
                   config_.client_cert_pem.size(), CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(config_.client_key_pem.data()), config_.client_key_pem.size(),
                  CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
  }
  curl_slist* h = nullptr;
  h = curl_slist_append(h, ("Accept: " + req.accept).c_str());
  h = curl_slist_append(h, "Expect:");
  if (!req.content_type.empty())
    h = curl_slist_append(h, ("Content-Type: " + req.content_type).c_str());
  if (!token.empty()) h = curl_slist_append(h, ("Authorization: Bearer " + token).c_str());
  x->headers.reset(h);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  if (req.method == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    if (req.method != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, req.body.data());
    }
  }
  return Ok();
}

Result<HttpResponse> CurlTransport::DoOnce(const HttpRequest& req, const std::string& token) {
  void* handle = Borrow();
  if (handle == nullptr) return Fail(ErrorCode::kInternal, "curl_easy_init failed");
  Xfer x;
  if (auto s = Setup(handle, req, &x, token); !s) {
    Return(handle);
    return Fail(s.error());
  }
  CURLcode rc = curl_easy_perform(static_cast<CURL*>(handle));
  long code = 0;
  curl_easy_getinfo(static_cast<CURL*>(handle), CURLINFO_RESPONSE_CODE, &code);
  Return(handle);
  if (rc != CURLE_OK) return Fail(CurlError(rc, x.errbuf, req.method + " " + req.path));
  x.resp.status = code;
  return std::move(x.resp);
}

Result<HttpResponse> CurlTransport::Do(const HttpRequest& req) {
  auto token = tokens_.Get();
  if (!token) return Fail(token.error());
  auto resp = DoOnce(req, *token);
  if (resp && resp->status == 401 && tokens_.HasFile()) {
    tokens_.Invalidate();  // the token may have rotated: re-read it and try once more
    token = tokens_.Get();
    if (!token) return Fail(token.error());
    resp = DoOnce(req, *token);
  }
  return resp;
}

Result<HttpResponse> CurlTransport::StreamOnce(const HttpRequest& req, const DataCallback& on_data,
                                               Canceller* cancel, const std::string& token) {
  Easy easy(curl_easy_init());
  if (!easy) return Fail(ErrorCode::kInternal, "curl_easy_init failed");
  Xfer x;
  x.on_data = &on_data;
  if (auto s = Setup(easy.get(), req, &x, token); !s) return Fail(s.error());
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) return Fail(ErrorCode::kInternal, "curl_multi_init failed");
  curl_multi_add_handle(multi, easy.get());
  uint64_t waker = 0;
  if (cancel != nullptr) waker = cancel->AddWaker([multi] { curl_multi_wakeup(multi); });
  CURLcode result = CURLE_OK;
  bool done = false;
  while (!done) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      break;
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE) {
        result = msg->data.result;
        done = true;
      }
    }
    if (done || running == 0) break;
    if (cancel != nullptr && cancel->Cancelled()) break;
    curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
  if (cancel != nullptr) cancel->RemoveWaker(waker);
  long code = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &code);
  curl_multi_remove_handle(multi, easy.get());
  curl_multi_cleanup(multi);
  x.resp.status = code;
  bool cancelled = cancel != nullptr && cancel->Cancelled();
  if (result != CURLE_OK && !x.stopped && !cancelled) {
    return Fail(CurlError(result, x.errbuf, req.method + " " + req.path));
  }
  return std::move(x.resp);
}

Result<HttpResponse> CurlTransport::Stream(const HttpRequest& req, const DataCallback& on_data,
                                           Canceller* cancel) {
  auto token = tokens_.Get();
  if (!token) return Fail(token.error());
  auto resp = StreamOnce(req, on_data, cancel, *token);
  if (resp && resp->status == 401 && tokens_.HasFile()) {
    tokens_.Invalidate();
    token = tokens_.Get();
    if (!token) return Fail(token.error());
    resp = StreamOnce(req, on_data, cancel, *token);
  }
  return resp;
}

}  // namespace pylon::k8s
