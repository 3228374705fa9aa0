#include "lab/kubelet.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "lab/files.h"

namespace pylon::lab {
namespace {

namespace fs = std::filesystem;

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        std::all_of(s.begin() + static_cast<long>(i) + 1, s.begin() + static_cast<long>(i) + 4,
                    [](char c) { return c >= '0' && c <= '7'; })) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct MountEntry {
  std::string point;
  std::string fstype;
};

std::vector<MountEntry> ParseMountinfo(const std::string& text) {
  std::vector<MountEntry> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::vector<std::string> fields;
    for (std::string w; f >> w;) fields.push_back(w);
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || dash + 1 == fields.end()) continue;
    out.push_back({Unescape(fields[4]), *(dash + 1)});
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

std::string ContainerdConfigToml(const KubeletNode& n) {
  const std::string cri = "[plugins.\"io.containerd.grpc.v1.cri\"";
  return "version = 2\n"
         "root = \"" +
         n.Path("containerd/root") + "\"\nstate = \"" + n.Path("containerd/state") +
         "\"\n"
         "disabled_plugins = [\"io.containerd.snapshotter.v1.aufs\", "
         "\"io.containerd.snapshotter.v1.btrfs\", \"io.containerd.snapshotter.v1.zfs\", "
         "\"io.containerd.snapshotter.v1.devmapper\"]\n\n"
         "[grpc]\n  address = \"" +
         n.ContainerdSocket() + "\"\n\n[ttrpc]\n  address = \"" + n.Path("containerd-ttrpc.sock") +
         "\"\n\n"
         "[plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"" +
         n.Path("containerd/opt") + "\"\n\n" + cri +
         "]\n"
         "  sandbox_image = \"" +
         kPauseImage +
         "\"\n"
         "  restrict_oom_score_adj = true\n"
         "  netns_mounts_under_state_dir = true\n"
         "  stream_server_address = \"127.0.0.1\"\n"
         "  stream_server_port = \"0\"\n\n" +
         cri +
         ".containerd]\n"
         "  snapshotter = \"overlayfs\"\n"
         "  default_runtime_name = \"runc\"\n\n" +
         cri +
         ".containerd.runtimes.runc]\n"
         "  runtime_type = \"io.containerd.runc.v2\"\n\n" +
         cri +
         ".containerd.runtimes.runc.options]\n"
         "  BinaryName = \"" +
         n.runc + "\"\n  Root = \"" + n.Path("runc") +
         "\"\n"
         "  SystemdCgroup = false\n\n" +
         cri + ".cni]\n  bin_dir = \"" + n.cni_bin_dir + "\"\n  conf_dir = \"" +
         n.Path("cni/net.d") + "\"\n  max_conf_num = 1\n";
}

std::string KubeletConfigYaml(const KubeletNode& n) {
  return "apiVersion: kubelet.config.k8s.io/v1beta1\n"
         "kind: KubeletConfiguration\n"
         "failCgroupV1: false\n"
         "cgroupDriver: cgroupfs\n"
         "cgroupRoot: " +
         n.CgroupRoot() +
         "\n"
         "cgroupsPerQOS: true\n"
         "failSwapOn: false\n"
         "localStorageCapacityIsolation: false\n"
         "protectKernelDefaults: false\n"
         "containerRuntimeEndpoint: unix://" +
         n.ContainerdSocket() + "\nimageServiceEndpoint: unix://" + n.ContainerdSocket() +
         "\npodLogsDir: " + n.Path("pod-logs") +
         "\n"
         "address: 0.0.0.0\n"
         "port: " +
         std::to_string(n.kubelet_port) +
         "\n"
         "readOnlyPort: 0\n"
         "healthzBindAddress: 127.0.0.1\n"
         "healthzPort: 10248\n"
         "authentication:\n"
         "  anonymous:\n    enabled: false\n"
         "  webhook:\n    enabled: true\n"
         "  x509:\n    clientCAFile: " +
         n.ca_file +
         "\n"
         "authorization:\n  mode: Webhook\n"
         "rotateCertificates: false\n"
         "serverTLSBootstrap: false\n"
         // Memory only: the eviction manager cannot read the file systems' stats here.
         "evictionHard:\n  memory.available: 1Mi\n"
         "mergeDefaultEvictionSettings: false\n"
         "imageGCHighThresholdPercent: 100\n"
         "imageGCLowThresholdPercent: 99\n"
         "resolvConf: \"\"\n"
         "maxPods: 30\n"
         "serializeImagePulls: false\n"
         "shutdownGracePeriod: 0s\n"
         "containerLogMaxSize: 1Mi\n"
         "containerLogMaxFiles: 2\n";
}

std::string CniConfigJson(const KubeletNode& n) {
  const std::string i = std::to_string(n.index);
  const std::string v4 = "10.244." + i + ".";
  const std::string v6 = "fd00:10:244:" + i + "::";
  return R"({
  "cniVersion": "1.0.0",
  "name": "pylon-lab",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": ")" +
         n.Path("cni/ipam") + R"(",
        "ranges": [
          [{"subnet": ")" +
         v4 + "0/24\", \"rangeStart\": \"" + v4 + "100\", \"rangeEnd\": \"" + v4 +
         "250\", \"gateway\": \"" + v4 + R"(1"}],
          [{"subnet": ")" +
         v6 + "/64\", \"rangeStart\": \"" + v6 + "100\", \"rangeEnd\": \"" + v6 +
         "250\", \"gateway\": \"" + v6 + R"(1"}]
        ],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]
      }
    }
  ]
}
)";
}

std::vector<std::string> ContainerdArgv(const KubeletNode& n) {
  return {"containerd", "--config", n.ContainerdConfig(), "--log-level", "warn"};
}

std::vector<std::string> KubeletArgv(const std::string& binary, const KubeletNode& n) {
  return {binary,
          "--config=" + n.KubeletConfig(),
          "--kubeconfig=" + n.kubeconfig,
          "--root-dir=" + n.RootDir(),
          "--cert-dir=" + n.Path("pki"),
          "--hostname-override=" + n.node,
          "--node-ip=" + n.ipv4 + "," + n.ipv6,
          "--v=1"};
}

Status PrepareKubeletNode(const KubeletNode& n) {
  std::error_code ec;
  for (const char* d : {"containerd/root", "containerd/state", "containerd/opt", "runc", "kubelet",
                        "pki", "pod-logs", "cni/net.d", "cni/ipam"}) {
    fs::create_directories(n.Path(d), ec);
    if (ec) return Fail(ErrorCode::kSystem, "create " + n.Path(d) + ": " + ec.message());
  }
  if (auto s = WriteTextFile(n.ContainerdConfig(), ContainerdConfigToml(n)); !s) return s;
  if (auto s = WriteTextFile(n.KubeletConfig(), KubeletConfigYaml(n)); !s) return s;
  if (auto s = WriteTextFile(n.Path("cni/net.d/10-pylon-lab.conflist"), CniConfigJson(n)); !s)
    return s;
  for (const auto& h : CgroupHierarchies(ReadTextFile("/proc/self/mountinfo"))) {
    fs::create_directories(h + n.CgroupRoot(), ec);
    if (ec)
      return Fail(ErrorCode::kSystem, "create cgroup " + h + n.CgroupRoot() + ": " + ec.message());
  }
  return Ok();
}

const std::vector<std::string>& KubeletKernelSettingKeys() {
  static const std::vector<std::string> keys = {
      "vm/overcommit_memory", "vm/panic_on_oom",          "kernel/panic",
      "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"};
  return keys;
}

Result<std::vector<KernelSetting>> ReadKernelSettings(const std::vector<std::string>& keys,
                                                      const std::string& proc_sys) {
  std::vector<KernelSetting> out;
  for (const auto& k : keys) {
    std::ifstream in(proc_sys + "/" + k);
    std::string v;
    if (!std::getline(in, v)) return Fail(ErrorCode::kSystem, "cannot read " + proc_sys + "/" + k);
    out.push_back({k, v});
  }
  return out;
}

Status WriteKernelSettings(const std::vector<KernelSetting>& settings,
                           const std::string& proc_sys) {
  Status first = Ok();
  for (const auto& s : settings) {
    const std::string path = proc_sys + "/" + s.key;
    std::ifstream cur_in(path);
    std::string cur;
    if (std::getline(cur_in, cur) && cur == s.value) continue;
    std::ofstream out(path);
    out << s.value << "\n";
    out.close();
    if (!out && first)
      first = Fail(ErrorCode::kSystem, "cannot restore " + path + " to " + s.value);
  }
  return first;
}

std::string FormatKernelSettings(const std::vector<KernelSetting>& settings) {
  std::string out;
  for (const auto& s : settings) out += s.key + "=" + s.value + "\n";
  return out;
}

Result<std::vector<KernelSetting>> ParseKernelSettings(const std::string& text) {
  std::vector<KernelSetting> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos || eq == 0 || line.find("..") != std::string::npos ||
        line[0] == '/') {
      return Fail(ErrorCode::kInvalidArgument, "bad kernel setting line \"" + line + "\"");
    }
    out.push_back({line.substr(0, eq), line.substr(eq + 1)});
  }
  return out;
}

std::vector<std::string> MountPointsUnder(const std::string& mountinfo, const std::string& dir) {
  std::string prefix = dir;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  std::vector<std::string> out;
  for (const auto& m : ParseMountinfo(mountinfo)) {
    if (m.point == prefix || m.point.rfind(prefix + "/", 0) == 0) out.push_back(m.point);
  }
  std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
  });
  return out;
}

std::vector<std::string> CgroupHierarchies(const std::string& mountinfo) {
  std::vector<std::string> out;
  for (const auto& m : ParseMountinfo(mountinfo)) {
    if ((m.fstype == "cgroup" || m.fstype == "cgroup2") &&
        std::find(out.begin(), out.end(), m.point) == out.end()) {
      out.push_back(m.point);
    }
  }
  return out;
}

bool IsShimOf(const std::string& cmdline, const std::string& socket) {
  std::vector<std::string> args;
  std::string cur;
  for (char c : cmdline) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) args.push_back(cur);
  if (args.empty() || fs::path(args[0]).filename().string().rfind("containerd-shim", 0) != 0) {
    return false;
  }
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "-address" && args[i + 1] == socket) return true;
  }
  return false;
}

Status UnmountUnder(const std::string& dir) {
  std::vector<std::string> left;
  for (int round = 0; round < 5; ++round) {
    left = MountPointsUnder(ReadTextFile("/proc/self/mountinfo"), dir);
    if (left.empty()) return Ok();
    for (const auto& m : left) umount2(m.c_str(), MNT_DETACH);
  }
  left = MountPointsUnder(ReadTextFile("/proc/self/mountinfo"), dir);
  if (left.empty()) return Ok();
  return Fail(ErrorCode::kSystem, "mounts left under " + dir + ": " + Join(left, " "));
}

Status RemoveCgroupTree(const std::string& cgroup, int timeout_ms) {
  std::vector<std::string> dirs;
  for (const auto& h : CgroupHierarchies(ReadTextFile("/proc/self/mountinfo"))) {
    const std::string top = h + cgroup;
    std::error_code ec;
    if (!fs::is_directory(top, ec)) continue;
    dirs.push_back(top);
    for (auto it = fs::recursive_directory_iterator(top, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec)) dirs.push_back(it->path().string());
    }
  }
  std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) {
    return a.size() > b.size();  // children before parents
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<std::string> left = dirs;
  while (true) {
    std::vector<std::string> still;
    for (const auto& d : left) {
      std::istringstream procs(ReadTextFile(d + "/cgroup.procs"));
      for (pid_t pid; procs >> pid;) kill(pid, SIGKILL);
      if (rmdir(d.c_str()) != 0 && errno != ENOENT) still.push_back(d);
    }
    if (still.empty()) return Ok();
    if (std::chrono::steady_clock::now() > deadline) {
      return Fail(ErrorCode::kSystem, "cgroups left: " + Join(still, " "));
    }
    left = still;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<pid_t> ShimPids(const std::string& socket) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (IsShimOf(ReadTextFile(std::string("/proc/") + e->d_name + "/cmdline"), socket)) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(d);
  return out;
}

Status TearDownKubeletNode(const KubeletNode& n) {
  Status first = Ok();
  auto note = [&first](Status s) {
    if (!s && first) first = s;
  };
  // The containers first (their processes are in the node's cgroups), then their shims.
  note(RemoveCgroupTree(n.CgroupRoot()));
  for (pid_t pid : ShimPids(n.ContainerdSocket())) kill(pid, SIGKILL);
  for (int i = 0; i < 100 && !ShimPids(n.ContainerdSocket()).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Pods' network namespaces (under containerd's state), volumes, the root dir's bind mount,
  // rootfs overlays.
  note(UnmountUnder(n.dir));
  // The kubelet links every container's log into /var/log/containers.
  std::error_code ec;
  for (auto it = fs::directory_iterator("/var/log/containers", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code lec;
    if (!it->is_symlink(lec)) continue;
    const std::string target = fs::read_symlink(it->path(), lec).string();
    if (!lec && target.rfind(n.dir + "/", 0) == 0) fs::remove(it->path(), lec);
  }
  // The runtime's state, unless something is still mounted there (never delete through a mount).
  if (MountPointsUnder(ReadTextFile("/proc/self/mountinfo"), n.dir).empty()) {
    for (const char* d : {"containerd", "runc", "kubelet", "cni/ipam"}) {
      fs::remove_all(n.Path(d), ec);
      if (ec) note(Fail(ErrorCode::kSystem, "remove " + n.Path(d) + ": " + ec.message()));
    }
  }
  return first;
}

}  // namespace pylon::lab
