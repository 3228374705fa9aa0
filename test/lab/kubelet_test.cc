// The kubelet lab's pure parts: configuration texts, kernel settings files, mountinfo parsing and
// shim recognition (no root, no processes; a temporary directory stands in for /proc/sys).
#include "lab/kubelet.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace pylon::lab {
namespace {

KubeletNode Node() {
  KubeletNode n;
  n.lab = "k1";
  n.node = "node2";
  n.index = 2;
  n.dir = "/tmp/pylon-lab/k1/kubelet-node2";
  n.ipv4 = "192.0.2.12";
  n.ipv6 = "2001:db8:1::12";
  n.kubelet_port = 41000;
  n.ca_file = "/tmp/pylon-lab/k1/pki/ca.crt";
  n.kubeconfig = "/tmp/pylon-lab/k1/kubeconfig-kubelet";
  return n;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(KubeletConfig, ContainerdOwnsItsPathsAndTheSettingsThisMachineNeeds) {
  const std::string t = ContainerdConfigToml(Node());
  for (const char* want :
       {"root = \"/tmp/pylon-lab/k1/kubelet-node2/containerd/root\"",
        "state = \"/tmp/pylon-lab/k1/kubelet-node2/containerd/state\"",
        "address = \"/tmp/pylon-lab/k1/kubelet-node2/containerd.sock\"",
        "address = \"/tmp/pylon-lab/k1/kubelet-node2/containerd-ttrpc.sock\"",
        "sandbox_image = \"registry.k8s.io/pause:3.10\"", "restrict_oom_score_adj = true",
        "netns_mounts_under_state_dir = true", "snapshotter = \"overlayfs\"",
        "SystemdCgroup = false", "Root = \"/tmp/pylon-lab/k1/kubelet-node2/runc\"",
        "bin_dir = \"/usr/lib/cni\"", "conf_dir = \"/tmp/pylon-lab/k1/kubelet-node2/cni/net.d\""}) {
    EXPECT_TRUE(Has(t, want)) << want << "\n" << t;
  }
}

TEST(KubeletConfig, KubeletRunsOnCgroupV1UnderItsOwnRoot) {
  const std::string y = KubeletConfigYaml(Node());
  for (const char* want :
       {"failCgroupV1: false", "cgroupDriver: cgroupfs", "cgroupRoot: /pylon-k1-node2",
        "failSwapOn: false", "localStorageCapacityIsolation: false",
        "containerRuntimeEndpoint: unix:///tmp/pylon-lab/k1/kubelet-node2/containerd.sock",
        "port: 41000", "clientCAFile: /tmp/pylon-lab/k1/pki/ca.crt", "mode: Webhook",
        "memory.available: 1Mi", "mergeDefaultEvictionSettings: false",
        "podLogsDir: /tmp/pylon-lab/k1/kubelet-node2/pod-logs"}) {
    EXPECT_TRUE(Has(y, want)) << want << "\n" << y;
  }
  EXPECT_FALSE(Has(y, "protectKernelDefaults: true"));
  const auto argv = KubeletArgv("/bin/kubelet", Node());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--node-ip=192.0.2.12,2001:db8:1::12"), argv.end());
  EXPECT_NE(
      std::find(argv.begin(), argv.end(), "--root-dir=/tmp/pylon-lab/k1/kubelet-node2/kubelet"),
      argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--hostname-override=node2"), argv.end());
}

TEST(KubeletConfig, CniBridgeOnTheNodesPodCidrsAboveTheLabPods) {
  const std::string j = CniConfigJson(Node());
  for (const char* want :
       {"\"type\": \"bridge\"", "\"type\": \"host-local\"", "\"subnet\": \"10.244.2.0/24\"",
        "\"rangeStart\": \"10.244.2.100\"", "\"gateway\": \"10.244.2.1\"",
        "\"subnet\": \"fd00:10:244:2::/64\"", "\"rangeStart\": \"fd00:10:244:2::100\"",
        "\"dataDir\": \"/tmp/pylon-lab/k1/kubelet-node2/cni/ipam\""}) {
    EXPECT_TRUE(Has(j, want)) << want << "\n" << j;
  }
}

TEST(KernelSettings, SavedTextRoundTripsAndRestoresOnlyWhatChanged) {
  const std::vector<KernelSetting> saved = {{"vm/overcommit_memory", "0"}, {"kernel/panic", "1"}};
  auto parsed = ParseKernelSettings(FormatKernelSettings(saved));
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(*parsed, saved);
  EXPECT_FALSE(ParseKernelSettings("no equals sign\n"));
  EXPECT_FALSE(ParseKernelSettings("../etc/passwd=x\n"));

  // A fake /proc/sys: what the kubelet wrote, then the restore.
  const std::string root = ::testing::TempDir() + "/proc-sys-" + std::to_string(getpid());
  std::filesystem::create_directories(root + "/vm");
  std::filesystem::create_directories(root + "/kernel");
  std::ofstream(root + "/vm/overcommit_memory") << "1\n";
  std::ofstream(root + "/kernel/panic") << "10\n";
  auto now = ReadKernelSettings({"vm/overcommit_memory", "kernel/panic"}, root);
  ASSERT_TRUE(now);
  EXPECT_EQ((*now)[0].value, "1");
  ASSERT_TRUE(WriteKernelSettings(saved, root));
  auto restored = ReadKernelSettings({"vm/overcommit_memory", "kernel/panic"}, root);
  ASSERT_TRUE(restored);
  EXPECT_EQ(*restored, saved);
  EXPECT_FALSE(ReadKernelSettings({"vm/missing"}, root));
  std::filesystem::remove_all(root);
}

constexpr const char* kMountinfo =
    "22 1 0:21 / / rw - ext4 /dev/vda rw\n"
    "30 22 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "31 22 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "32 22 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:5 - cgroup cgroup rw,cpu\n"
    "40 22 0:30 /x /tmp/pylon-lab/k1/kubelet-node2/kubelet rw shared:9 - ext4 /dev/vda rw\n"
    "41 40 0:31 / /tmp/pylon-lab/k1/kubelet-node2/kubelet/pods/u/volumes/a\\040b rw - tmpfs "
    "tmpfs rw\n"
    "42 22 0:32 / /tmp/pylon-lab/k1/kubelet-node20/x rw - tmpfs tmpfs rw\n"
    "43 22 0:33 / /tmp/pylon-lab/k1/kubelet-node2/containerd/state/netns/cni-1 rw - nsfs nsfs "
    "rw\n";

TEST(KubeletTeardown, MountsUnderADirectoryDeepestFirst) {
  const auto m = MountPointsUnder(kMountinfo, "/tmp/pylon-lab/k1/kubelet-node2/");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], "/tmp/pylon-lab/k1/kubelet-node2/kubelet/pods/u/volumes/a b");
  EXPECT_EQ(m.back(), "/tmp/pylon-lab/k1/kubelet-node2/kubelet");
  EXPECT_TRUE(MountPointsUnder(kMountinfo, "/tmp/pylon-lab/k2").empty());
}

TEST(KubeletTeardown, CgroupHierarchiesOfBothVersions) {
  EXPECT_EQ(CgroupHierarchies(kMountinfo),
            (std::vector<std::string>{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified",
                                      "/sys/fs/cgroup/cpu"}));
}

TEST(KubeletTeardown, ShimOfOneContainerdOnly) {
  using namespace std::string_literals;
  const std::string sock = "/tmp/pylon-lab/k1/kubelet-node2/containerd.sock";
  EXPECT_TRUE(IsShimOf(
      "/usr/bin/containerd-shim-runc-v2\0-namespace\0k8s.io\0-id\0abc\0-address\0"s + sock + "\0"s,
      sock));
  EXPECT_FALSE(IsShimOf("/usr/bin/containerd-shim-runc-v2\0-address\0"s + sock + "x\0"s, sock));
  EXPECT_FALSE(IsShimOf("/usr/bin/containerd\0-address\0"s + sock + "\0"s, sock));
  EXPECT_FALSE(IsShimOf("", sock));
}

}  // namespace
}  // namespace pylon::lab
