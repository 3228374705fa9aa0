#include "apiserver/audit.h"

#include <cerrno>
#include <memory>

#include "apiserver/json_util.h"

namespace pylon::apiserver {

Result<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return FailErrno(errno, "open audit log " + path);
  return std::unique_ptr<AuditLog>(new AuditLog(f));
}

AuditLog::~AuditLog() { std::fclose(f_); }

void AuditLog::Write(const AuditRecord& r) {
  Json j = Json::object();
  j["user_agent"] = r.user_agent;
  j["verb"] = r.verb;
  j["group"] = r.group;
  j["resource"] = r.resource;
  j["subresource"] = r.subresource;
  j["namespace"] = r.ns;
  j["name"] = r.name;
  j["code"] = r.code;
  std::string line = Dump(j) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace pylon::apiserver
