// Tests that need a real kube-apiserver (and etcd, kubectl: scripts/k8s-components.sh builds them,
// PYLON_K8S_BIN_DIR points elsewhere). Where they are missing such a test reports SKIP (ctest:
// "Skipped", through the SKIP_REGULAR_EXPRESSION of pylon_test) — or FAILs where they must be
// there: with PYLON_REQUIRE_APISERVER set (scripts/test.sh, so CI, sets it) or CI set.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "lab/control_plane.h"
#include "support/test_dir.h"

namespace pylon::test_support {

// Why the Kubernetes binaries cannot run, or nothing when they can.
inline std::optional<std::string> ApiServerMissing() {
  const std::string dir = lab::K8sBinDir();
  for (const char* b : {"etcd", "kube-apiserver", "kubectl"}) {
    if (dir.empty() || ::access((dir + "/" + b).c_str(), X_OK) != 0) {
      return std::string("no ") + b + " in \"" + dir +
             "\" (scripts/k8s-components.sh builds it; set PYLON_K8S_BIN_DIR)";
    }
  }
  return std::nullopt;
}

// Whether a missing kube-apiserver is a failure rather than a reason to skip.
inline bool ApiServerRequired() {
  for (const char* name : {"PYLON_REQUIRE_APISERVER", "CI"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0' && std::string(v) != "0" && std::string(v) != "false") {
      return true;
    }
  }
  return false;
}

// A lab::ControlPlane (etcd + kube-apiserver on loopback, no audit log) in dir()/control-plane,
// dir() a fresh test directory, for a suite: stopped, and the directory removed (test_dir.h), when
// destroyed.
class TestControlPlane {
 public:
  static Result<std::unique_ptr<TestControlPlane>> Start(const std::string& tag) {
    std::unique_ptr<TestControlPlane> t(new TestControlPlane());
    t->dir_ = MakeTestDir(tag);
    if (t->dir_.empty()) return FailErrno(errno, "mkdtemp");
    lab::ControlPlaneConfig cfg;
    cfg.dir = t->dir_ + "/control-plane";
    cfg.audit = false;
    t->plane_ = std::make_unique<lab::ControlPlane>(cfg);
    if (auto s = t->plane_->Start(); !s) return Fail(s.error());
    return t;
  }
  ~TestControlPlane() {
    if (plane_) plane_->Stop();
    RemoveTestDir(dir_);
  }
  TestControlPlane(const TestControlPlane&) = delete;
  TestControlPlane& operator=(const TestControlPlane&) = delete;

  lab::ControlPlane& plane() { return *plane_; }
  const std::string& dir() const { return dir_; }

 private:
  TestControlPlane() = default;
  std::string dir_;
  std::unique_ptr<lab::ControlPlane> plane_;
};

// For a fixture's SetUpTestSuite: starts `*suite` (TestControlPlane::Start(tag)) unless it runs
// already or the Kubernetes binaries are missing (the fixture's SetUp then skips or fails:
// PYLON_NEED_APISERVER). Returns why it could not start, or "".
inline std::string StartSuiteControlPlane(const std::string& tag, TestControlPlane** suite) {
  if (*suite != nullptr || ApiServerMissing()) return "";
  auto started = TestControlPlane::Start(tag);
  if (!started) return started.error().message();
  *suite = started->release();
  return "";
}

}  // namespace pylon::test_support

// In a test or a fixture's SetUp (a gtest file): skips it when the Kubernetes binaries are missing,
// or fails it when they are required (ApiServerRequired).
#define PYLON_NEED_APISERVER()                                                            \
  do {                                                                                    \
    if (const auto pylon_missing_ = ::pylon::test_support::ApiServerMissing()) {          \
      if (::pylon::test_support::ApiServerRequired()) {                                   \
        FAIL() << *pylon_missing_ << " (required: PYLON_REQUIRE_APISERVER or CI is set)"; \
      }                                                                                   \
      GTEST_SKIP() << *pylon_missing_;                                                    \
    }                                                                                     \
  } while (0)
