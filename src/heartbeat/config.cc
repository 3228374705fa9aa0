#include "heartbeat/config.h"

#include "common/duration.h"
#include "common/text.h"

namespace pylon::heartbeat {

namespace {

struct Var {
  const char* flag;
  const char* env;
};
constexpr Var kVars[] = {
    {"heartbeat-key-file", "PYLON_HEARTBEAT_KEY_FILE"},
    {"heartbeat-key-secret", "PYLON_HEARTBEAT_KEY_SECRET"},
    {"heartbeat-interval", "PYLON_HEARTBEAT_INTERVAL"},
    {"heartbeat-miss-count", "PYLON_HEARTBEAT_MISS_COUNT"},
    {"heartbeat-port", "PYLON_HEARTBEAT_PORT"},
    {"heartbeat-interface", "PYLON_HEARTBEAT_INTERFACE"},
};

Result<long> ParseInt(std::string_view text, long lo, long hi, std::string_view what) {
  auto v = ParseInteger<long>(text, lo, hi);
  if (!v) {
    return Fail(ErrorCode::kInvalidArgument, std::string(what) + " \"" + std::string(text) +
                                                 "\": expected an integer in " +
                                                 std::to_string(lo) + ".." + std::to_string(hi));
  }
  return *v;
}

}  // namespace

Result<bool> ApplyHeartbeatFlag(std::string_view name, std::string_view value,
                                HeartbeatConfig& config) {
  if (name == "heartbeat-key-file") {
    if (value.empty()) return Fail(ErrorCode::kInvalidArgument, "--heartbeat-key-file is empty");
    config.key_file = std::string(value);
  } else if (name == "heartbeat-key-secret") {
    config.key_secret = std::string(value);  // "" turns the Secret off (explicitly)
  } else if (name == "heartbeat-interval") {
    auto d = ParseGoDuration(value);
    if (!d) return Fail(d.error().Wrap("--heartbeat-interval"));
    config.interval = *d;
  } else if (name == "heartbeat-miss-count") {
    auto n = ParseInt(value, 1, 1000, "--heartbeat-miss-count");
    if (!n) return Fail(n.error());
    config.miss_count = static_cast<int>(*n);
  } else if (name == "heartbeat-port") {
    auto n = ParseInt(value, 1, 65535, "--heartbeat-port");
    if (!n) return Fail(n.error());
    config.port = static_cast<std::uint16_t>(*n);
  } else if (name == "heartbeat-interface") {
    config.interface = std::string(value);
  } else {
    return false;
  }
  return true;
}

Status ApplyHeartbeatEnv(const EnvFn& env, HeartbeatConfig& config) {
  for (const auto& v : kVars) {
    auto value = env(v.env);
    if (!value) continue;
    auto applied = ApplyHeartbeatFlag(v.flag, *value, config);
    if (!applied) return Fail(applied.error().Wrap(v.env));
  }
  return Ok();
}

Status ValidateHeartbeatConfig(const HeartbeatConfig& c) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  if (c.interval < milliseconds(10) || c.interval > seconds(10)) {
    return Fail(ErrorCode::kInvalidArgument, "heartbeat interval must be 10ms..10s");
  }
  if (c.interval % milliseconds(1) != Duration::zero()) {
    return Fail(ErrorCode::kInvalidArgument,
                "heartbeat interval must be whole milliseconds (it is sent in ms)");
  }
  if (c.miss_count < 2 || c.miss_count > 20) {
    return Fail(ErrorCode::kInvalidArgument,
                "heartbeat miss count must be 2..20 (1 would declare a peer dead on one lost "
                "datagram)");
  }
  if (c.port == 0) return Fail(ErrorCode::kInvalidArgument, "heartbeat port must be 1..65535");
  if (c.max_datagram_bytes < 256 || c.max_datagram_bytes > 65507) {
    return Fail(ErrorCode::kInvalidArgument, "heartbeat datagram limit must be 256..65507 bytes");
  }
  return Ok();
}

const char* HeartbeatUsage() {
  return "  --heartbeat-key-file FILE  shared key(s), one per line (a mounted Secret); wins over\n"
         "                             --heartbeat-key-secret\n"
         "  --heartbeat-key-secret S   the Secret (install namespace) holding the key: read, or\n"
         "                             created with a random key when absent; \"\" and no key "
         "file:\n"
         "                             heartbeats off, failover follows the leases alone\n"
         "  --heartbeat-interval D     heartbeat period (100ms; 10ms..10s)\n"
         "  --heartbeat-miss-count N   missed intervals before a peer is dead (3; 2..20)\n"
         "  --heartbeat-port P         UDP port (7934)\n"
         "  --heartbeat-interface IF   interface to send on (the announcing interface)\n"
         "  environment: PYLON_HEARTBEAT_KEY_FILE, _KEY_SECRET, _INTERVAL, _MISS_COUNT, _PORT, "
         "_INTERFACE\n";
}

}  // namespace pylon::heartbeat
