// A scripted Transport for ClientImpl tests: replies are consumed in order; requests recorded.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "k8s/transport.h"

namespace pylon::k8s {

struct ScriptedReply {
  int64_t status = 200;
  std::string body;                 // Do body, or the non-2xx body of a stream
  std::vector<std::string> chunks;  // Stream: 2xx body pieces, delivered in order
  std::string content_type = "application/json";
  std::optional<std::chrono::seconds> retry_after;
  std::optional<Error> transport_error;  // returned instead of a response (after the chunks)
};

inline ScriptedReply Reply(int64_t status, std::string body) {
  ScriptedReply r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

class FakeTransport final : public Transport {
 public:
  void Push(ScriptedReply r) {
    std::lock_guard<std::mutex> lock(mu_);
    replies_.push_back(std::move(r));
  }
  std::vector<HttpRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  Result<HttpResponse> Do(const HttpRequest& req) override {
    ScriptedReply r = Next(req);
    if (r.transport_error) return Fail(*r.transport_error);
    HttpResponse resp;
    resp.status = r.status;
    resp.body = r.body;
    resp.content_type = r.content_type;
    resp.retry_after = r.retry_after;
    return resp;
  }

  Result<HttpResponse> Stream(const HttpRequest& req, const DataCallback& on_data,
                              Canceller*) override {
    ScriptedReply r = Next(req);
    HttpResponse resp;
    resp.status = r.status;
    resp.content_type = r.content_type;
    resp.retry_after = r.retry_after;
    if (r.status >= 200 && r.status < 300) {
      for (const auto& c : r.chunks) {
        if (!on_data(c)) return resp;
      }
    } else {
      resp.body = r.body;
    }
    if (r.transport_error) return Fail(*r.transport_error);
    return resp;
  }

 private:
  ScriptedReply Next(const HttpRequest& req) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(req);
    if (replies_.empty()) {
      ScriptedReply r;
      r.transport_error = Error(ErrorCode::kUnavailable, "no scripted reply");
      return r;
    }
    ScriptedReply r = std::move(replies_.front());
    replies_.pop_front();
    return r;
  }

  mutable std::mutex mu_;
  std::deque<ScriptedReply> replies_;
  std::vector<HttpRequest> requests_;
};

}  // namespace pylon::k8s
