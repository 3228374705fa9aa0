// The heartbeat key by default: the agent reads the key ring from a Secret in its namespace and,
// when the Secret is absent, creates it with a random key. Many agents starting at once race on
// the create; exactly one wins (the API server's create is atomic), the others get AlreadyExists
// and read the winner's key, so every agent of the cluster ends up with the same ring. An
// operator's own Secret (created before, or edited later and rolled) always wins: it is read, never
// replaced.
//
// The Secret (docs/failover.md "Key"):
//   data.key       the key file's text: one key per line, the first signs (heartbeat/keyring.h)
//   data.key-file  "/etc/pylon/heartbeat/key": where the DaemonSet mounts the entry `key`; its
//                  PYLON_HEARTBEAT_KEY_FILE reads this entry, so restarted agents read the mounted
//                  file (the file wins over the Secret) and rotation by editing `key` works as
//                  before.
// RBAC (deploy/rbac-agent.yaml): create on secrets, get on this one Secret only.
#pragma once

#include <functional>
#include <string>

#include "common/json.h"
#include "common/result.h"
#include "k8s/client.h"

namespace pylon::agent {

inline constexpr const char* kHeartbeatKeyFileInPod = "/etc/pylon/heartbeat/key";

// The Secret object to create: `key_text` in data.key, kHeartbeatKeyFileInPod in data.key-file.
Json HeartbeatKeySecret(const std::string& ns, const std::string& name,
                        const std::string& key_text);

// A new key file's text: 32 random bytes from `random_bytes` as 64 hex digits, one line.
Result<std::string> NewHeartbeatKeyText(
    const std::function<Result<std::string>(std::size_t)>& random_bytes);

// The key file text of the Secret, read with get; when it is absent, created with
// `new_key_text()` first (AlreadyExists: another agent won, its Secret is read). Errors name the
// Secret and what to do (RBAC, a Secret without the entry `key`).
Result<std::string> EnsureHeartbeatKey(k8s::Client& client, const std::string& ns,
                                       const std::string& name,
                                       const std::function<Result<std::string>()>& new_key_text);

// 32 bytes of /dev/urandom.
Result<std::string> SystemRandomBytes(std::size_t n);

}  // namespace pylon::agent
