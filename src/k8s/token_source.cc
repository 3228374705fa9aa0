#include "k8s/token_source.h"

#include "common/log.h"
#include "k8s/rest_config.h"

namespace pylon::k8s {

TokenSource::TokenSource(std::string static_token, std::string file, const Clock& clock,
                         Duration refresh)
    : static_token_(std::move(static_token)),
      file_(std::move(file)),
      clock_(clock),
      refresh_(refresh) {}

Result<std::string> TokenSource::Get() {
  if (file_.empty()) return static_token_;
  MutexLock lock(mu_);
  SteadyTime now = clock_.Now();
  if (cached_ && !stale_ && now - read_at_ < refresh_) return *cached_;
  auto text = ReadFile(file_);
  if (!text) {
    if (cached_) {
      log::Warn("token file unreadable, keeping the previous token",
                {{"file", file_}, {"error", text.error().message()}});
      read_at_ = now;
      stale_ = false;
      return *cached_;
    }
    if (!static_token_.empty()) return static_token_;
    return Fail(text.error().Wrap("bearer token"));
  }
  std::string token = *text;
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  cached_ = token;
  read_at_ = now;
  stale_ = false;
  return token;
}

void TokenSource::Invalidate() {
  MutexLock lock(mu_);
  stale_ = true;
}

}  // namespace pylon::k8s
