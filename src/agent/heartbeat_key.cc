#include "agent/heartbeat_key.h"

#include <fstream>

#include "k8s/base64.h"
#include "k8s/resource.h"

namespace pylon::agent {

Json HeartbeatKeySecret(const std::string& ns, const std::string& name,
                        const std::string& key_text) {
  return Json{
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata",
       {{"name", name},
        {"namespace", ns},
        {"labels", {{"app.kubernetes.io/part-of", "pylon"}}},
        {"annotations",
         {{"purelb.io/created-by", "pylon agent: a random heartbeat key, because none existed"}}}}},
      {"type", "Opaque"},
      {"data",
       {{"key", k8s::Base64Encode(key_text)},
        {"key-file", k8s::Base64Encode(kHeartbeatKeyFileInPod)}}}};
}

Result<std::string> NewHeartbeatKeyText(
    const std::function<Result<std::string>(std::size_t)>& random_bytes) {
  auto bytes = random_bytes(32);
  if (!bytes) return Fail(bytes.error().Wrap("heartbeat key"));
  if (bytes->size() != 32) return Fail(ErrorCode::kSystem, "heartbeat key: short random read");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned char b : *bytes) {
    text += kHex[b >> 4];
    text += kHex[b & 15];
  }
  return text + "\n";
}

namespace {

Result<std::string> KeyOf(const Json& secret, const std::string& where) {
  auto data = FindString(secret, {"data", "key"});
  if (!data) {
    return Fail(ErrorCode::kInvalidArgument,
                where +
                    " has no entry `key` (the key file: one key per line); fix the Secret or "
                    "delete it to have a random key created");
  }
  auto text = k8s::Base64Decode(*data);
  if (!text) return Fail(text.error().Wrap(where + " entry `key`"));
  return *text;
}

}  // namespace

Result<std::string> EnsureHeartbeatKey(k8s::Client& client, const std::string& ns,
                                       const std::string& name,
                                       const std::function<Result<std::string>()>& new_key_text) {
  const std::string where = "Secret " + ns + "/" + name;
  auto explain = [&](const Error& e, const char* verb) {
    if (e.code() == ErrorCode::kPermission) {
      return e.Wrap(std::string("cannot ") + verb + " the heartbeat key " + where +
                    " (the agent's Role needs get on it and create on secrets)");
    }
    return e.Wrap(std::string("cannot ") + verb + " the heartbeat key " + where);
  };
  auto got = client.Get(k8s::resources::Secrets(), ns, name);
  if (got) return KeyOf(*got, where);
  if (got.error().code() != ErrorCode::kNotFound) return Fail(explain(got.error(), "read"));
  auto text = new_key_text();
  if (!text) return Fail(text.error());
  auto created = client.Create(k8s::resources::Secrets(), HeartbeatKeySecret(ns, name, *text));
  if (created) return *text;
  if (created.error().code() != ErrorCode::kAlreadyExists) {
    return Fail(explain(created.error(), "create"));
  }
  // Another agent (or the operator) created it first: everyone uses that one.
  got = client.Get(k8s::resources::Secrets(), ns, name);
  if (!got) return Fail(explain(got.error(), "read"));
  return KeyOf(*got, where);
}

Result<std::string> SystemRandomBytes(std::size_t n) {
  std::ifstream in("/dev/urandom", std::ios::binary);
  std::string out(n, '\0');
  in.read(out.data(), static_cast<std::streamsize>(n));
  if (!in) return Fail(ErrorCode::kSystem, "cannot read /dev/urandom");
  return out;
}

}  // namespace pylon::agent
