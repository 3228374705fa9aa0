// AddressSync against the real kernel (LABELS root), in a throw-away network namespace whose
// promote_secondaries is 0 (the kernel default; set explicitly, as systemd hosts set 1):
// withdrawing an IPv4 primary of kube-lb0. The agent's pod cannot write
// /proc/sys (EROFS); ReadOnlySysctls plays that part over NetlinkImpl.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../netlink/netns_helper.h"
#include "agent/address_sync.h"
#include "agent/ownership.h"
#include "agent/ownership_file.h"
#include "netlink/netlink_impl.h"
#include "netlink/ops.h"
#include "support/net.h"
#include "support/test_dir.h"

namespace pylon::agent {
namespace {

using pylon::testing::InNetns;
using pylon::testing::Netns;

using test_support::Pfx;

// NetlinkImpl as a non-privileged container sees it: every sysctl write fails with EROFS.
class ReadOnlySysctls final : public netlink::Netlink {
 public:
  explicit ReadOnlySysctls(netlink::Netlink& inner) : inner_(inner) {}
  Result<std::vector<netlink::LinkInfo>> ListLinks() override { return inner_.ListLinks(); }
  Result<netlink::LinkInfo> GetLink(std::string_view n) override { return inner_.GetLink(n); }
  Result<std::vector<netlink::AddressInfo>> ListAddresses(std::optional<net::Family> f) override {
    return inner_.ListAddresses(f);
  }
  Result<std::vector<netlink::RouteInfo>> ListRoutes(net::Family f) override {
    return inner_.ListRoutes(f);
  }
  Status AddAddress(const netlink::AddressSpec& s) override { return inner_.AddAddress(s); }
  Status RemoveAddress(int i, const net::Prefix& a) override { return inner_.RemoveAddress(i, a); }
  Result<netlink::LinkInfo> CreateLink(std::string_view n, std::string_view k) override {
    return inner_.CreateLink(n, k);
  }
  Status SetLinkUp(int i, bool up) override { return inner_.SetLinkUp(i, up); }
  Status DeleteLink(int i) override { return inner_.DeleteLink(i); }
  Result<std::string> ReadSysctl(const netlink::SysctlKey& k) override {
    return inner_.ReadSysctl(k);
  }
  Status WriteSysctl(const netlink::SysctlKey& k, std::string_view) override {
    auto path = netlink::SysctlRelativePath(k);
    return FailErrno(EROFS, "write sysctl /proc/sys/" + (path ? *path : std::string("?")));
  }
  Result<std::unique_ptr<netlink::EventSource>> Subscribe() override { return inner_.Subscribe(); }
  bool SupportsAddressProto() const override { return inner_.SupportsAddressProto(); }

 private:
  netlink::Netlink& inner_;
};

class AddressSyncNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pylon::testing::CanUseNetns()) GTEST_SKIP() << "needs root and ip netns";
    ns_ = std::make_unique<Netns>("pylon-as");
    ASSERT_TRUE(ns_->ok());
    // The kernel default, whatever this host's init namespace has; kube-lb0 inherits `default`.
    for (const char* where : {"all", "default"}) {
      ASSERT_EQ(
          ns_->Exec(std::string("sysctl -qw net.ipv4.conf.") + where + ".promote_secondaries=0"),
          0);
    }
    dir_ = std::filesystem::temp_directory_path() /
           ("pylon-as-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    test_support::RemoveTestDir(dir_);
    ns_.reset();  // deletes the namespace and every link in it, also after a failure
  }

  bool Has(const std::string& dev, const std::string& local) {
    std::string out = ns_->IpOut("-4 -o addr show dev " + dev);
    return out.find(" " + local + "/") != std::string::npos;
  }
  std::string StateFile() {
    std::ifstream in(dir_ / "agent-addresses");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // Runs `body(nl, lb0)` in the namespace with kube-lb0 created there (promote_secondaries 0).
  void Run(bool read_only, const std::function<void(netlink::Netlink&, int)>& body) {
    InNetns(*ns_, [&] {
      auto impl = netlink::NetlinkImpl::Create();
      ASSERT_TRUE(impl) << impl.error().message();
      auto vl = netlink::EnsureVirtualLink(**impl, "kube-lb0");
      ASSERT_TRUE(vl) << vl.error().message();
      EXPECT_EQ(*(*impl)->ReadSysctl(netlink::PromoteSecondaries("kube-lb0")), "0");
      ReadOnlySysctls ro(**impl);
      body(read_only ? static_cast<netlink::Netlink&>(ro) : **impl, vl->link.index);
    });
  }

  static DesiredAddress Virtual(int lb0, const std::string& prefix) {
    DesiredAddress d;
    d.interface = "kube-lb0";
    d.ifindex = lb0;
    d.address = Pfx(prefix);
    d.kind = AddressKind::kVirtual;
    return d;
  }

  // Ours, 203.0.113.5/24, added through `sync`; then a foreign 203.0.113.77/24 beside it (so a
  // secondary of ours); then a pass that wants nothing: its report in `r`.
  void WithdrawBesideAForeignSecondary(AddressSync& sync, int lb0, SyncReport* r) {
    ASSERT_TRUE(sync.Load());
    ASSERT_TRUE(sync.Apply({Virtual(lb0, "203.0.113.5/24")}).errors.empty());
    ASSERT_EQ(ns_->Ip("addr add 203.0.113.77/24 dev kube-lb0"), 0);
    *r = sync.Apply({});
    EXPECT_TRUE(r->errors.empty()) << r->errors[0].message();
  }

  std::unique_ptr<Netns> ns_;
  std::filesystem::path dir_;
  FakeClock clock_;
};

// Our primary with our own secondary still wanted: removed; the kernel deletes the secondary with
// it and the same pass adds it back. The state file lists exactly what is there.
TEST_F(AddressSyncNetnsTest, OurPrimaryGoesAndOurSecondaryIsAddedBack) {
  Run(true, [&](netlink::Netlink& nl, int lb0) {
    FileOwnershipStore store(dir_ / "agent-addresses");
    AddressSync sync(nl, store, clock_);
    ASSERT_TRUE(sync.Load());
    auto r = sync.Apply({Virtual(lb0, "203.0.113.5/24"), Virtual(lb0, "203.0.113.6/24")});
    ASSERT_TRUE(r.errors.empty()) << r.errors[0].message();
    ASSERT_TRUE(Has("kube-lb0", "203.0.113.5"));
    ASSERT_NE(ns_->IpOut("-4 -o addr show dev kube-lb0").find("secondary"), std::string::npos);

    r = sync.Apply({Virtual(lb0, "203.0.113.6/24")});
    EXPECT_TRUE(r.errors.empty()) << r.errors[0].message();
    EXPECT_TRUE(r.deferred.empty());
    EXPECT_FALSE(Has("kube-lb0", "203.0.113.5"));
    EXPECT_TRUE(Has("kube-lb0", "203.0.113.6"));
    EXPECT_EQ(StateFile(), "kube-lb0 203.0.113.6/24\n");
    EXPECT_FALSE(sync.NextRetry());

    // Graceful stop: nothing wanted, nothing left, no line left.
    r = sync.Apply({}, AddressSync::Retry::kNow);
    EXPECT_TRUE(r.errors.empty());
    EXPECT_FALSE(Has("kube-lb0", "203.0.113.6"));
    EXPECT_EQ(StateFile(), "");
  });
}

// A secondary that is not ours: the withdrawal is deferred (never forced), retried with a
// backoff, and done once the secondary is gone.
TEST_F(AddressSyncNetnsTest, ForeignSecondaryDefersTheWithdrawal) {
  Run(true, [&](netlink::Netlink& nl, int lb0) {
    FileOwnershipStore store(dir_ / "agent-addresses");
    AddressSync sync(nl, store, clock_);
    SyncReport r;
    ASSERT_NO_FATAL_FAILURE(WithdrawBesideAForeignSecondary(sync, lb0, &r));
    ASSERT_EQ(r.deferred.size(), 1u);
    EXPECT_NE(r.deferred[0].find("203.0.113.77"), std::string::npos) << r.deferred[0];
    EXPECT_NE(r.deferred[0].find("Read-only file system"), std::string::npos) << r.deferred[0];
    EXPECT_TRUE(Has("kube-lb0", "203.0.113.5"));
    EXPECT_TRUE(Has("kube-lb0", "203.0.113.77"));
    ASSERT_TRUE(sync.NextRetry());
    EXPECT_GT(*sync.NextRetry(), clock_.Now());  // a backoff, not the next pass
    EXPECT_FALSE(sync.NextRenewal());            // and never renewed again

    // Before the backoff: the same deferral, nothing tried.
    r = sync.Apply({});
    EXPECT_EQ(r.deferred.size(), 1u);
    EXPECT_TRUE(Has("kube-lb0", "203.0.113.5"));

    // The foreign address leaves: at the next retry ours goes too.
    ASSERT_EQ(ns_->Ip("addr del 203.0.113.77/24 dev kube-lb0"), 0);
    clock_.Advance(std::chrono::seconds(2));
    r = sync.Apply({});
    EXPECT_TRUE(r.deferred.empty());
    EXPECT_FALSE(Has("kube-lb0", "203.0.113.5"));
    EXPECT_EQ(StateFile(), "");
    EXPECT_FALSE(sync.NextRetry());
  });
}

// Where /proc/sys is writable the agent sets promote_secondaries on the interface and the
// foreign secondary is promoted, not deleted.
TEST_F(AddressSyncNetnsTest, WritableProcSysPromotesTheForeignSecondary) {
  Run(false, [&](netlink::Netlink& nl, int lb0) {
    MemoryOwnershipStore store;
    AddressSync sync(nl, store, clock_);
    SyncReport r;
    ASSERT_NO_FATAL_FAILURE(WithdrawBesideAForeignSecondary(sync, lb0, &r));
    EXPECT_TRUE(r.deferred.empty());
    EXPECT_FALSE(Has("kube-lb0", "203.0.113.5"));
    EXPECT_TRUE(Has("kube-lb0", "203.0.113.77"));
    EXPECT_EQ(*nl.ReadSysctl(netlink::PromoteSecondaries("kube-lb0")), "1");
  });
}

}  // namespace
}  // namespace pylon::agent
