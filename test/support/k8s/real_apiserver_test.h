// A gtest fixture over one RealApiServer (real_apiserver.h) for a whole test binary: started by
// the first suite, stopped when the binary exits. Each test gets the faults cleared, a client
// through the fault proxy and a fresh namespace; without the Kubernetes binaries it skips, or
// fails where they are required (support/apiserver.h).
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "k8s/client.h"
#include "support/apiserver.h"
#include "support/k8s/real_apiserver.h"

namespace pylon::k8s {

class RealApiServerTest : public ::testing::Test {
 protected:
  // `user_agent` of the clients, `ns_prefix` of the namespaces ("<prefix>-<n>").
  RealApiServerTest(std::string user_agent, std::string ns_prefix)
      : user_agent_(std::move(user_agent)), ns_prefix_(std::move(ns_prefix)) {}

  static void SetUpTestSuite() {
    if (start_error_.empty()) start_error_ = StartSuiteApiServer(&server_);
  }
  void SetUp() override {
    PYLON_NEED_APISERVER();
    ASSERT_EQ(start_error_, "");
    ASSERT_TRUE(server_->SetFaults("{}"));
    auto client = NewClient(server_->config(), user_agent_);
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
    ns_ = ns_prefix_ + "-" + std::to_string(++counter_);
    auto ns = client_->Create(resources::Namespaces(), Json{{"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(ns) << ns.error().message();
  }

  static inline RealApiServer* server_ = nullptr;
  static inline std::string start_error_;  // why the server did not start
  static inline int counter_ = 0;
  const std::string user_agent_;
  const std::string ns_prefix_;
  std::unique_ptr<Client> client_;  // through the fault proxy
  std::string ns_;

 private:
  // Stops the server after the last test of the binary.
  class StopAtExit : public ::testing::Environment {
   public:
    void TearDown() override {
      delete server_;
      server_ = nullptr;
    }
  };
  static inline const ::testing::Environment* const stop_at_exit_ =
      ::testing::AddGlobalTestEnvironment(new StopAtExit);
};

}  // namespace pylon::k8s
