#include "test_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace pylon::apiserver::testing {
namespace {

std::size_t WriteCb(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

std::size_t HeaderCb(char* data, std::size_t size, std::size_t n, void* user) {
  auto* r = static_cast<HttpResult*>(user);
  std::string line(data, size * n);
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ')) value.erase(0, 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.pop_back();
    if (name == "content-type") r->content_type = value;
    if (name == "retry-after") r->retry_after = value;
  }
  return size * n;
}

}  // namespace

HttpResult Call(const std::string& url, const CallOptions& o) {
  HttpResult r;
  CURL* c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, o.method.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteCb);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, HeaderCb);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, o.timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (!o.body.empty() || o.method == "POST" || o.method == "PUT" || o.method == "PATCH") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, o.body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(o.body.size()));
  }
  curl_slist* hdrs = nullptr;
  hdrs = curl_slist_append(hdrs, ("Content-Type: " + o.content_type).c_str());
  for (const auto& h : o.headers) hdrs = curl_slist_append(hdrs, h.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  if (!o.ca_pem.empty()) {
    curl_blob blob{const_cast<char*>(o.ca_pem.data()), o.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
  }
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) r.error = curl_easy_strerror(rc);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(c);
  return r;
}

std::vector<Json> Frames(const std::string& body) {
  std::vector<Json> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::string err;
    auto j = ParseJson(line, &err);
    out.push_back(j ? *j : Json("unparseable: " + line));
  }
  return out;
}

bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds deadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

InProcessServer::InProcessServer(HandlerOptions ho, StoreOptions so,
                                 std::shared_ptr<http::TlsContext> tls, AuditLog* audit)
    : store_(SystemClock::Instance(), std::move(so)),
      handler_(store_, faults_, audit, SystemClock::Instance(), std::move(ho)) {
  http::ServerOptions opts;
  opts.tls = std::move(tls);
  auto s = http::Server::Start(
      opts, [this](const http::Request& r, http::ResponseWriter& w) { handler_.Handle(r, w); });
  if (!s) std::abort();
  server_ = std::move(*s);
}

InProcessServer::~InProcessServer() {
  store_.CloseAllWatches();
  server_->Stop();
}

Child::Child(const std::vector<std::string>& argv, const std::string& output_file)
    : output_file_(output_file) {
  pid_ = fork();
  if (pid_ == 0) {
    int fd = ::open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
}

Child::~Child() { Stop(); }

int Child::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string Child::Output() const { return ReadFile(output_file_); }

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string Run(const std::vector<std::string>& argv, int* status) {
  std::string dir = MakeTempDir();
  std::string out = dir + "/out";
  pid_t pid = fork();
  if (pid == 0) {
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  std::string text = ReadFile(out);
  std::remove(out.c_str());
  ::rmdir(dir.c_str());
  return text;
}

std::string MakeTempDir() {
  char tmpl[] = "/tmp/pylon-apiserver-test-XXXXXX";
  char* d = mkdtemp(tmpl);
  return d ? d : "/tmp";
}

}  // namespace pylon::apiserver::testing
