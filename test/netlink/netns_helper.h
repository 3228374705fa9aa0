// Test-only helpers for root tests in network namespaces: a RAII namespace (deleted even when the
// test fails), running a body with the calling thread moved into a namespace, a fixture of two
// namespaces joined by veth pairs, shell commands, and polling with a deadline. Header-only;
// shared by test/netlink, test/packet and test/agent.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "common/fd.h"
#include "support/eventually.h"
#include "support/shell.h"

namespace pylon::testing {

// Runs a shell command; returns its exit status.
inline int Sh(const std::string& cmd) {
  return test_support::Shell(cmd + " >/dev/null", false).code;
}

// Runs a shell command and returns its stdout.
inline std::string ShOut(const std::string& cmd) { return test_support::Shell(cmd, false).out; }

// Whether this process can create network namespaces (root with iproute2).
inline bool CanUseNetns() {
  if (::geteuid() != 0) return false;
  return Sh("ip netns list") == 0;
}

// A network namespace named "<prefix>-<pid>-<n>", deleted (with every link in it) on destruction.
class Netns {
 public:
  explicit Netns(const std::string& prefix) {
    static std::atomic<int> counter{0};
    name_ = prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    ok_ = Sh("ip netns add " + name_) == 0;
    if (ok_) Sh("ip -n " + name_ + " link set lo up");
  }
  ~Netns() {
    if (ok_) Sh("ip netns del " + name_);
  }
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;

  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  // "ip -n <ns> <args>"; returns the exit status.
  int Ip(const std::string& args) const { return Sh("ip -n " + name_ + " " + args); }
  std::string IpOut(const std::string& args) const { return ShOut("ip -n " + name_ + " " + args); }
  int Exec(const std::string& cmd) const { return Sh("ip netns exec " + name_ + " " + cmd); }

 private:
  std::string name_;
  bool ok_ = false;
};

// Runs `body` on a fresh thread that has joined `ns` (setns(CLONE_NEWNET) affects only the calling
// thread), so sockets it opens and /proc/sys/net it reads belong to the namespace.
inline void InNetns(const Netns& ns, const std::function<void()>& body) {
  std::thread t([&] {
    UniqueFd fd(::open(("/var/run/netns/" + ns.name()).c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd.valid()) << "open netns " << ns.name();
    ASSERT_EQ(::setns(fd.get(), CLONE_NEWNET), 0) << "setns " << ns.name();
    body();
  });
  t.join();
}

// Namespaces a_ ("<prefix>-a-...") and b_ ("<prefix>-b-...") joined by `pairs` veth pairs
// a<i> (in A) <-> b<i> (in B), every end up: the topology of the netlink and packet root tests.
// Skips without root; a fixture that sets up more returns when IsSkipped() or HasFatalFailure()
// after calling this SetUp.
class TwoNetnsTest : public ::testing::Test {
 protected:
  TwoNetnsTest(std::string prefix, int pairs) : prefix_(std::move(prefix)), pairs_(pairs) {}

  void SetUp() override {
    if (!CanUseNetns()) GTEST_SKIP() << "needs root and ip netns";
    a_ = std::make_unique<Netns>(prefix_ + "-a");
    b_ = std::make_unique<Netns>(prefix_ + "-b");
    ASSERT_TRUE(a_->ok() && b_->ok());
    for (int n = 0; n < pairs_; ++n) {
      const std::string i = std::to_string(n);
      ASSERT_EQ(a_->Ip("link add a" + i + " type veth peer name b" + i + " netns " + b_->name()),
                0);
      ASSERT_EQ(a_->Ip("link set a" + i + " up"), 0);
      ASSERT_EQ(b_->Ip("link set b" + i + " up"), 0);
    }
  }

  std::unique_ptr<Netns> a_, b_;

 private:
  std::string prefix_;
  int pairs_;
};

// Polls every 20 ms, for 5 s unless told.
inline constexpr test_support::Poll Eventually{.timeout = std::chrono::seconds(5)};

}  // namespace pylon::testing
