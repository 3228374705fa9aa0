// BIRD 2's control socket (what `birdc` speaks), and the parsers of the replies the agent reads.
//
// Protocol: one command per line; every reply line is a 4-digit code then '-' (more follows) or
// ' ' (last line); a line starting with a single space continues the previous code. 0xxx means
// success, 8xxx run-time errors, 9xxx parse errors. The daemon greets with 0001 on connect.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace pylon::bgp {

struct BirdLine {
  int code = 0;
  std::string text;
};

struct BirdReply {
  int code = 0;  // of the last line
  std::vector<BirdLine> lines;
  // The text of every line, joined with '\n' (for error messages and logs).
  std::string Text() const;
};

// Splits raw reply text into lines; returns the reply once its last line arrived, nullopt if the
// text ends before that. `consumed` is set to the bytes used. Async lines ('+') are skipped.
std::optional<BirdReply> ParseBirdReply(std::string_view raw, std::size_t* consumed);

class BirdControl {
 public:
  // Connects and reads the greeting. Each later read waits at most `timeout`.
  static Result<BirdControl> Connect(const std::string& socket_path,
                                     std::chrono::milliseconds timeout);
  // Sends one command and reads its reply; an 8xxx/9xxx reply is an error holding its text.
  Result<BirdReply> Command(const std::string& command);

 private:
  BirdControl(UniqueFd fd, std::chrono::milliseconds timeout)
      : fd_(std::move(fd)), timeout_(timeout) {}
  Result<BirdReply> ReadReply();

  UniqueFd fd_;
  std::chrono::milliseconds timeout_;
  std::string buffer_;
};

// One protocol of `show protocols all`.
struct ProtocolStatus {
  std::string name;
  std::string proto;       // "BGP", "Direct", ...
  std::string state;       // "up", "start", "down", ...
  std::string since;       // as BIRD prints it, e.g. "05:49:58.644"
  std::string info;        // "Established", "Active", "Connect", ...
  std::string bgp_state;   // "BGP state:" detail
  std::string last_error;  // "Last error:" detail, "" when none
  long exported = -1;      // "Routes: ... N exported" summed over channels; -1 when unknown
  bool Established() const { return bgp_state == "Established"; }
};
std::vector<ProtocolStatus> ParseProtocols(const BirdReply& reply);

// One line of `show bfd sessions`: neighbour address and state ("Up", "Down", "Init", ...).
struct BfdSessionStatus {
  std::string address;
  std::string interface;
  std::string state;
};
std::vector<BfdSessionStatus> ParseBfdSessions(const BirdReply& reply);

}  // namespace pylon::bgp
