// Audit log: one JSON line per request, appended to a file:
// {"user_agent","verb","group","resource","subresource","namespace","name","code"}.
// Thread-safe. Used to check that RBAC rules cover every request a component makes.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"

namespace pylon::apiserver {

struct AuditRecord {
  std::string user_agent, verb, group, resource, subresource, ns, name;
  int code = 0;
};

class AuditLog {
 public:
  static Result<std::unique_ptr<AuditLog>> Open(const std::string& path);
  ~AuditLog();
  void Write(const AuditRecord& r);

 private:
  explicit AuditLog(std::FILE* f) : f_(f) {}
  std::mutex mu_;
  std::FILE* f_;
};

}  // namespace pylon::apiserver
