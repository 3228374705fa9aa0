#include "heartbeat/config.h"

namespace pylon::heartbeat {

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

}  // namespace pylon::heartbeat
