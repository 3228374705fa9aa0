// The heartbeat key by default (agent/heartbeat_key.h): read the Secret, create it when absent,
// lose the create race gracefully, and refuse what cannot be used with an error that says why.
#include "agent/heartbeat_key.h"

#include <gtest/gtest.h>

#include <string>

#include "heartbeat/keyring.h"
#include "k8s/base64.h"
#include "k8s/resource.h"
#include "support/k8s/fake_client.h"

namespace pylon::agent {
namespace {

using k8s::FakeClient;
using k8s::Verb;

constexpr const char* kNs = "purelb-system";
constexpr const char* kName = "pylon-heartbeat-key";

std::function<Result<std::string>()> Fixed(std::string text, int* calls) {
  return [text = std::move(text), calls]() -> Result<std::string> {
    ++*calls;
    return text;
  };
}

Json SecretWith(const std::string& key_text) { return HeartbeatKeySecret(kNs, kName, key_text); }

TEST(HeartbeatKey, NewKeyIsSixtyFourHexDigitsAndAValidRing) {
  auto text = NewHeartbeatKeyText(
      [](std::size_t n) { return Result<std::string>(std::string(n, '\x5a')); });
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->size(), 65u);
  EXPECT_EQ(text->substr(0, 4), "5a5a");
  EXPECT_TRUE(heartbeat::KeyRing::Parse(*text).has_value());
  auto short_read = NewHeartbeatKeyText([](std::size_t) { return Result<std::string>("abc"); });
  EXPECT_FALSE(short_read.has_value());
}

struct Row {
  const char* what;
  std::function<void(FakeClient&)> setup;
  bool ok;
  const char* key_or_error;  // the key text read, or a piece of the error
  int generated;             // how many times a new key was made
  int creates;               // create calls
};

TEST(HeartbeatKey, Scenarios) {
  const std::string mine = "0123456789abcdef0123456789abcdef\n";
  const std::string operators = "operator-key-0123456789\nold-operator-key-0123\n";
  const Row rows[] = {
      {"absent: created with a new key, which is used", [](FakeClient&) {}, true,
       "0123456789abcdef0123456789abcdef\n", 1, 1},
      {"the operator's Secret wins: read, never replaced",
       [&](FakeClient& c) {
         ASSERT_TRUE(c.Create(k8s::resources::Secrets(), SecretWith(operators)));
       },
       true, "operator-key-0123456789\nold-operator-key-0123\n", 0, 0},
      {"lost the create race: the winner's key is read",
       [&](FakeClient& c) {
         ASSERT_TRUE(c.Create(k8s::resources::Secrets(), SecretWith(operators)));
         c.FailNext(Verb::kGet, Error(ErrorCode::kNotFound, "not found (HTTP 404)"));
       },
       true, "operator-key-0123456789\nold-operator-key-0123\n", 1, 1},
      {"no RBAC to read: an error naming the Role",
       [](FakeClient& c) {
         c.FailNext(Verb::kGet, Error(ErrorCode::kPermission, "forbidden (HTTP 403)"));
       },
       false, "needs get on it and create on secrets", 0, 0},
      {"API down: an error, never a silent downgrade",
       [](FakeClient& c) {
         c.FailNext(Verb::kGet, Error(ErrorCode::kUnavailable, "connection refused"));
       },
       false, "cannot read the heartbeat key Secret purelb-system/pylon-heartbeat-key", 0, 0},
      {"a Secret without the entry key",
       [](FakeClient& c) {
         Json s = SecretWith("x");
         s["data"].erase("key");
         ASSERT_TRUE(c.Create(k8s::resources::Secrets(), s));
       },
       false, "has no entry `key`", 0, 0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    FakeClient client;
    r.setup(client);
    const int creates_before = client.calls(Verb::kCreate);
    int generated = 0;
    auto got = EnsureHeartbeatKey(client, kNs, kName, Fixed(mine, &generated));
    EXPECT_EQ(got.has_value(), r.ok);
    if (got) {
      EXPECT_EQ(*got, r.key_or_error);
    } else {
      EXPECT_NE(got.error().message().find(r.key_or_error), std::string::npos)
          << got.error().message();
    }
    EXPECT_EQ(generated, r.generated);
    EXPECT_EQ(client.calls(Verb::kCreate) - creates_before, r.creates);
  }
}

// The Secret an agent creates is the documented one: the key file text under `key`, and the path
// where the DaemonSet mounts it under `key-file`, so restarted agents read the mounted file.
TEST(HeartbeatKey, CreatedSecretIsTheDocumentedOne) {
  FakeClient client;
  int generated = 0;
  ASSERT_TRUE(EnsureHeartbeatKey(client, kNs, kName, Fixed("k-0123456789abcdef\n", &generated)));
  auto s = client.Get(k8s::resources::Secrets(), kNs, kName);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*k8s::Base64Decode((*s)["data"]["key"].get<std::string>()), "k-0123456789abcdef\n");
  EXPECT_EQ(*k8s::Base64Decode((*s)["data"]["key-file"].get<std::string>()),
            "/etc/pylon/heartbeat/key");
  EXPECT_EQ((*s)["type"], "Opaque");
}

}  // namespace
}  // namespace pylon::agent
