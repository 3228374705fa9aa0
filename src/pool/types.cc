#include "pool/types.h"

#include <algorithm>
#include <cctype>

#include "common/text.h"

namespace pylon::pool {

Result<ServiceKey> ServiceKey::Parse(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos || text.find('/', slash + 1) != std::string_view::npos) {
    return Fail(ErrorCode::kInvalidArgument,
                "service key \"" + std::string(text) + "\" is not namespace/name");
  }
  return Make(text.substr(0, slash), text.substr(slash + 1));
}

Result<ServiceKey> ServiceKey::Make(std::string_view ns, std::string_view name) {
  if (ns.empty() || name.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "service key needs a namespace and a name, got \"" +
                                                 std::string(ns) + "/" + std::string(name) + "\"");
  }
  return ServiceKey(std::string(ns), std::string(name));
}

std::string_view ProtocolName(Protocol p) {
  switch (p) {
    case Protocol::kTCP:
      return "TCP";
    case Protocol::kUDP:
      return "UDP";
    case Protocol::kSCTP:
      return "SCTP";
  }
  return "?";
}

Result<Protocol> ParseProtocol(std::string_view text) {
  std::string upper(text);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (upper.empty() || upper == "TCP") return Protocol::kTCP;
  if (upper == "UDP") return Protocol::kUDP;
  if (upper == "SCTP") return Protocol::kSCTP;
  return Fail(ErrorCode::kInvalidArgument,
              "unknown protocol \"" + std::string(text) + "\" (want TCP, UDP or SCTP)");
}

std::string PortKey::ToString() const {
  return std::string(ProtocolName(protocol)) + "/" + std::to_string(port);
}

Result<PortKey> ParsePortKey(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return Fail(ErrorCode::kInvalidArgument, "port \"" + std::string(text) + "\" is not PROTO/N");
  }
  auto proto = ParseProtocol(text.substr(0, slash));
  if (!proto) return Fail(proto.error());
  auto digits = text.substr(slash + 1);
  auto value = ParsePort(digits);
  if (!value) {
    return Fail(ErrorCode::kInvalidArgument,
                "port \"" + std::string(text) + "\" needs a number in 1..65535");
  }
  return PortKey{*proto, *value};
}

std::vector<PortKey> NormalizePorts(std::vector<PortKey> ports) {
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  return ports;
}

const PortKey* FirstCommonPort(std::span<const PortKey> a, std::span<const PortKey> b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      return &*i;
    }
  }
  return nullptr;
}

}  // namespace pylon::pool
