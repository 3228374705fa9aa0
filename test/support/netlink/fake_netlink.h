// An in-memory model of the kernel's links, addresses, routes and interface sysctls with the
// semantics the agent relies on, for unit tests of agent logic without root:
//  - AddAddress: EEXIST for a duplicate (IPv4: same address and prefix length; IPv6: same
//    address), kReplace renews lifetimes; NODAD rejected on IPv4; an IPv4 address inside the
//    subnet of an existing address with the same prefix length becomes `secondary`;
//    preferred_lft 0 sets `deprecated`; valid_lft forever sets `permanent`; IFA_PROTO kept only
//    when SupportsAddressProto(); an injected DAD failure leaves an IPv6 address
//    tentative|dadfailed unless added with NODAD.
//  - Lifetimes count down on the injected Clock; an address whose valid lifetime ran out
//    disappears (with an address-deleted event), as the kernel's dead-man switch does.
//  - RemoveAddress matches address and prefix length on the given interface only; removing an
//    IPv4 primary removes its secondaries unless promote_secondaries (interface or "all") is "1",
//    in which case the first secondary is promoted.
//  - WriteSysctl fails with EROFS while SetSysctlsReadOnly(true) (a non-privileged pod).
//  - CreateLink: kUnsupported "Unknown device type" for kinds made unsupported (by default
//    "dummy", as on the project's test machines); links start down; SetLinkUp brings carrier
//    with it unless SetCarrier(false) was called.
//  - Every change is queued to every subscribed EventSource.
// Threading: single-threaded, like the agent loop that uses it.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "netlink/netlink.h"

namespace pylon::netlink {

class FakeNetlink final : public Netlink {
 public:
  explicit FakeNetlink(const Clock& clock);
  ~FakeNetlink() override;

  // --- Test setup ------------------------------------------------------------------------
  // Adds a link (admin up with carrier by default) and returns its ifindex (from 1 upwards; "lo"
  // is not created implicitly).
  int AddTestLink(const std::string& name, const std::string& kind = "", bool up = true);
  void AddTestRoute(const RouteInfo& route);
  void ClearRoutes();
  // Simulates cable pull / plug: clears or sets IFF_LOWER_UP, operstate down/up; emits an event.
  void SetCarrier(int ifindex, bool carrier);
  void SetKindSupported(const std::string& kind, bool supported);
  void SetSupportsAddressProto(bool supported) { supports_proto_ = supported; }
  // The next DAD for `address` (added without NODAD) fails.
  void InjectDadFailure(const net::IpAddress& address) { dad_failures_.insert(address); }
  // The next call of the named operation ("AddAddress", "RemoveAddress", "ListAddresses",
  // "ListRoutes", "ListLinks", "GetLink", "CreateLink", "SetLinkUp", "DeleteLink",
  // "ReadSysctl", "WriteSysctl", "Subscribe") fails with `error`.
  void FailNext(const std::string& operation, Error error);
  // /proc/sys as a non-privileged container sees it, even with hostNetwork: every WriteSysctl
  // fails with EROFS (reads work).
  void SetSysctlsReadOnly(bool read_only) { sysctls_read_only_ = read_only; }
  // WriteSysctl calls, successful or not.
  int sysctl_write_attempts() const { return sysctl_write_attempts_; }
  // Number of successful state-changing calls (AddAddress, RemoveAddress, link changes, sysctl
  // writes): lets tests assert that nothing was written.
  int mutation_count() const { return mutations_; }

  // --- Netlink --------------------------------------------------------------------------
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
  struct StoredAddress {
    AddressInfo info;  // lifetimes here are the configured ones
    std::optional<SteadyTime> valid_until;
    std::optional<SteadyTime> preferred_until;
  };
  struct Queue;
  class Source;

  Status TakeFailure(const std::string& op);
  void Expire();
  AddressInfo Snapshot(const StoredAddress& a) const;
  LinkInfo* FindLink(int ifindex);
  void Emit(const Event& e);
  void EmitLink(const LinkInfo& l, ChangeKind kind);
  bool SysctlIs(const SysctlKey& key, const std::string& value) const;

  const Clock& clock_;
  std::vector<LinkInfo> links_;
  std::vector<StoredAddress> addresses_;
  std::vector<RouteInfo> routes_;
  std::map<std::string, std::string> sysctls_;  // relative path -> value
  std::set<std::string> unsupported_kinds_{"dummy"};
  std::set<net::IpAddress> dad_failures_;
  std::map<std::string, Error> failures_;
  std::vector<std::weak_ptr<Queue>> queues_;
  bool supports_proto_ = true;
  bool sysctls_read_only_ = false;
  int sysctl_write_attempts_ = 0;
  int next_index_ = 1;
  int mutations_ = 0;
};

}  // namespace pylon::netlink
