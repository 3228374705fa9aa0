#include "bgp/bird_control.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "common/text.h"

namespace pylon::bgp {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> out;
  std::istringstream in{std::string(s)};
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

}  // namespace

std::string BirdReply::Text() const {
  std::string out;
  for (const auto& l : lines) {
    if (!out.empty()) out += '\n';
    out += l.text;
  }
  return out;
}

std::optional<BirdReply> ParseBirdReply(std::string_view raw, std::size_t* consumed) {
  BirdReply reply;
  std::size_t pos = 0;
  int code = 0;
  while (true) {
    auto nl = raw.find('\n', pos);
    if (nl == std::string_view::npos) return std::nullopt;
    std::string_view line = raw.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.size() >= 5 && IsDigit(line[0]) && IsDigit(line[1]) && IsDigit(line[2]) &&
        IsDigit(line[3]) && (line[4] == '-' || line[4] == ' ')) {
      code =
          (line[0] - '0') * 1000 + (line[1] - '0') * 100 + (line[2] - '0') * 10 + (line[3] - '0');
      reply.lines.push_back({code, std::string(line.substr(5))});
      if (line[4] == ' ') {
        reply.code = code;
        *consumed = pos;
        return reply;
      }
    } else if (line.size() >= 4 && IsDigit(line[0]) && IsDigit(line[1]) && IsDigit(line[2]) &&
               IsDigit(line[3]) && line.size() == 4) {
      // "0000" alone: an empty last line.
      reply.code = std::stoi(std::string(line));
      *consumed = pos;
      return reply;
    } else if (!line.empty() && line[0] == '+') {
      continue;  // asynchronous message
    } else {
      reply.lines.push_back({code, std::string(line.empty() ? line : line.substr(1))});
    }
  }
}

Result<BirdControl> BirdControl::Connect(const std::string& socket_path,
                                         std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) {
    return Fail(ErrorCode::kInvalidArgument, "BIRD socket path too long: " + socket_path);
  }
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return FailErrno(errno, "socket");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    Error e = Error::FromErrno(errno, "connect to BIRD at " + socket_path);
    return Fail(Error(ErrorCode::kUnavailable, e.message()));
  }
  BirdControl c(std::move(fd), timeout);
  auto greeting = c.ReadReply();
  if (!greeting) return Fail(greeting.error());
  if (greeting->code != 1) {
    return Fail(ErrorCode::kUnavailable,
                "BIRD at " + socket_path + " did not greet: " + greeting->Text());
  }
  return c;
}

Result<BirdReply> BirdControl::ReadReply() {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    std::size_t consumed = 0;
    if (auto r = ParseBirdReply(buffer_, &consumed)) {
      buffer_.erase(0, consumed);
      return *r;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Fail(ErrorCode::kUnavailable, "BIRD did not answer in time");
    pollfd p{fd_.get(), POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailErrno(errno, "poll BIRD socket");
    }
    if (n == 0) continue;
    char buf[8192];
    ssize_t got = ::read(fd_.get(), buf, sizeof buf);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Fail(ErrorCode::kUnavailable, Error::FromErrno(errno, "read BIRD socket").message());
    }
    if (got == 0) return Fail(ErrorCode::kUnavailable, "BIRD closed the control socket");
    buffer_.append(buf, static_cast<std::size_t>(got));
    if (buffer_.size() > (16u << 20)) {
      return Fail(ErrorCode::kInternal, "BIRD reply larger than 16 MiB");
    }
  }
}

Result<BirdReply> BirdControl::Command(const std::string& command) {
  if (command.find('\n') != std::string::npos) {
    return Fail(ErrorCode::kInvalidArgument, "BIRD command with a newline");
  }
  std::string line = command + "\n";
  std::size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::send(fd_.get(), line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(ErrorCode::kUnavailable, Error::FromErrno(errno, "write BIRD socket").message());
    }
    off += static_cast<std::size_t>(n);
  }
  auto reply = ReadReply();
  if (!reply) return reply;
  if (reply->code >= 8000) {
    return Fail(ErrorCode::kInvalidArgument, "BIRD: " + command + ": " + reply->Text());
  }
  return reply;
}

std::vector<ProtocolStatus> ParseProtocols(const BirdReply& reply) {
  std::vector<ProtocolStatus> out;
  for (const auto& l : reply.lines) {
    if (l.code == 1002) {
      auto w = Words(l.text);
      if (w.size() < 4) continue;
      ProtocolStatus p;
      p.name = w[0];
      p.proto = w[1];
      p.state = w[3];
      if (w.size() > 4) p.since = w[4];
      for (std::size_t i = 5; i < w.size(); ++i) p.info += (p.info.empty() ? "" : " ") + w[i];
      out.push_back(std::move(p));
    } else if (l.code == 1006 && !out.empty()) {
      ProtocolStatus& p = out.back();
      std::string t(Trim(l.text, " \t", " \t\r"));
      auto value = [&](std::string_view key) -> std::optional<std::string> {
        if (!t.starts_with(key)) return std::nullopt;
        return std::string(Trim(std::string_view(t).substr(key.size()), " \t", " \t\r"));
      };
      if (auto v = value("BGP state:")) p.bgp_state = *v;
      if (auto v = value("Last error:")) p.last_error = *v;
      if (auto v = value("Routes:")) {
        // "1 imported, 0 exported, 1 preferred"
        auto w = Words(*v);
        for (std::size_t i = 1; i < w.size(); ++i) {
          if (w[i].starts_with("exported")) {
            long n = std::strtol(w[i - 1].c_str(), nullptr, 10);
            p.exported = (p.exported < 0 ? 0 : p.exported) + n;
          }
        }
      }
    }
  }
  return out;
}

std::vector<BfdSessionStatus> ParseBfdSessions(const BirdReply& reply) {
  std::vector<BfdSessionStatus> out;
  for (const auto& l : reply.lines) {
    if (l.code != 1020) continue;
    auto w = Words(l.text);
    // Skip the protocol header ("pylon_bfd:") and the column titles.
    if (w.size() < 3 || w[0] == "IP" || w[0].ends_with(":")) continue;
    out.push_back({w[0], w[1], w[2]});
  }
  return out;
}

}  // namespace pylon::bgp
