// Netlink over the real kernel: one NETLINK_ROUTE request socket, a notification socket per
// Subscribe(), and sysctl files under a root directory (normally /proc/sys).
#pragma once

#include <filesystem>
#include <memory>

#include "netlink/netlink.h"
#include "netlink/socket.h"

namespace pylon::netlink {

class NetlinkImpl final : public Netlink {
 public:
  // Opens the socket in the calling thread's network namespace. IFA_PROTO support is decided
  // from `uname -r` (6.1+).
  static Result<std::unique_ptr<NetlinkImpl>> Create(
      std::filesystem::path sysctl_root = "/proc/sys");

  Result<std::vector<LinkInfo>> ListLinks() override;
  Result<LinkInfo> GetLink(std::string_view name) override;
  Result<std::vector<AddressInfo>> ListAddresses(std::optional<net::Family> family) override;
  Result<std::vector<RouteInfo>> ListRoutes(net::Family family) override;
  Status AddAddress(const AddressSpec& spec) override;
  Status RemoveAddress(int ifindex, const net::Prefix& address) override;
  Result<LinkInfo> CreateLink(std::string_view name, std::string_view kind) override;
  Status SetLinkUp(int ifindex, bool up) override;
  Status DeleteLink(int ifindex) override;
  Result<std::string> ReadSysctl(const SysctlKey& key) override;
  Status WriteSysctl(const SysctlKey& key, std::string_view value) override;
  Result<std::unique_ptr<EventSource>> Subscribe() override;
  bool SupportsAddressProto() const override { return supports_proto_; }

 private:
  NetlinkImpl(NetlinkSocket socket, std::filesystem::path sysctl_root, bool supports_proto)
      : socket_(std::move(socket)),
        sysctl_root_(std::move(sysctl_root)),
        supports_proto_(supports_proto) {}

  NetlinkSocket socket_;
  std::filesystem::path sysctl_root_;
  bool supports_proto_;
};

}  // namespace pylon::netlink
