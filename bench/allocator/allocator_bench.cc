// End-to-end allocation latency of `pylon allocator` against the real etcd + kube-apiserver
// (lab::ControlPlane on loopback, the release scripts/k8s-components.sh builds, PYLON_K8S_BIN_DIR):
// time from a Service's creation (the POST returned) to its status showing an address, observed
// with a watch; p50/p99 for Services created one at a time and for a burst, plus the allocator's
// peak RSS (VmHWM). Then (unless --restart 0) a second allocator starts next to the 1+single+burst
// allocated Services: time until it leads with its state rebuilt, and its peak RSS after that
// (initial list of every Service included). With --backlog N, N more Services are then created
// while no allocator runs, and a starting allocator allocates them all: the allocator's own
// throughput, without the API server's creation rate in the figure (its status writes still go
// through the API server). Prints figures; exits non-zero only when Services were not allocated.
//
//   pylon_allocator_bench [--pylon PATH] [--burst N] [--single N] [--creators N] [--restart 0|1]
//                         [--backlog N]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "common/json.h"
#include "k8s/canceller.h"
#include "k8s/client_impl.h"
#include "k8s/rest_config.h"
#include "lab/control_plane.h"
#include "lab/process.h"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
namespace k8s = pylon::k8s;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// CPU time (user + system) a process has used so far, in seconds; 0 if unknown.
double CpuSeconds(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  long ticks = 0;
  for (int i = 3; in >> field && i <= 15; ++i) {
    if (i == 14 || i == 15) ticks += std::atol(field.c_str());  // utime, stime
  }
  return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// VmHWM of a process in kB, 0 if unknown.
long PeakRssKb(pid_t pid) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

json ServiceJson(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"type", "LoadBalancer"},
            {"allocateLoadBalancerNodePorts", false},  // 10^4 Services exceed the NodePort range
            {"ports", {{{"port", 80}, {"protocol", "TCP"}, {"targetPort", 8080}}}},
            {"selector", {{"app", name}}}}}};
}

// Records the first time each Service shows an ingress address.
class Observer {
 public:
  explicit Observer(k8s::Client& client) : client_(client) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Observer() {
    cancel_.Cancel();
    thread_.join();
  }
  void WaitReady() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return ready_; });
  }
  std::map<std::string, Clock::time_point> Seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  size_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_.size();
  }

 private:
  void Run() {
    std::string rv;
    while (!cancel_.Cancelled()) {
      if (rv.empty()) {
        auto l = client_.List(k8s::resources::Services(), "default", {});
        if (!l) continue;
        rv = l->resource_version;
        for (auto& o : l->items) Observe(o);
        std::lock_guard<std::mutex> lock(mu_);
        ready_ = true;
        cv_.notify_all();
      }
      k8s::WatchOptions wo;
      wo.resource_version = rv;
      auto st = client_.Watch(
          k8s::resources::Services(), "default", wo,
          [&](k8s::WatchEvent&& ev) {
            rv = ev.resource_version;
            if (ev.type == k8s::EventType::kAdded || ev.type == k8s::EventType::kModified) {
              Observe(ev.object);
            }
            return true;
          },
          &cancel_);
      if (!st && st.error().code() == pylon::ErrorCode::kGone) rv.clear();
    }
  }
  void Observe(const json& o) {
    const json* lb = pylon::Find(o, {"status", "loadBalancer"});
    if (!lb || !lb->contains("ingress") || (*lb)["ingress"].empty()) return;
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    seen_.try_emplace(k8s::Name(o), now);
  }

  k8s::Client& client_;
  k8s::Canceller cancel_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
  std::map<std::string, Clock::time_point> seen_;
};

struct Figures {
  double p50 = 0, p99 = 0, max = 0;
};
Figures Percentiles(std::vector<double> ms) {
  Figures f;
  if (ms.empty()) return f;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(ms.size() - 1) + 0.5);
    return ms[std::min(i, ms.size() - 1)];
  };
  f.p50 = at(0.50);
  f.p99 = at(0.99);
  f.max = ms.back();
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::string pylon = PYLON_BINARY;
  int burst = 10000, single = 100, creators = 8, restart = 1, backlog = 0;
  auto app = pylon::cli::NewCommand(
      "pylon_allocator_bench",
      "pylon allocator on kube-apiserver + etcd: allocation latency, burst, restart, backlog");
  app->add_option("--pylon", pylon, "the pylon binary")->capture_default_str();
  app->add_option("--burst", burst, "Services created at once by the creators")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--single", single, "Services created one at a time")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--creators", creators, "threads creating the burst")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--restart", restart, "1: time a second allocator next to every Service")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  app->add_option("--backlog", backlog,
                  "Services created with no allocator running, then allocated by one")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  if (auto code = pylon::cli::Parse(*app, argc, argv)) return *code;
  char templ[] = "/tmp/pylon-alloc-bench-XXXXXX";
  const std::string dir = mkdtemp(templ);
  pylon::lab::ControlPlaneConfig cpc;
  cpc.dir = dir + "/cp";
  cpc.audit = false;
  pylon::lab::ControlPlane plane(cpc);
  if (auto st = plane.Start(); !st) {
    std::fprintf(stderr, "control plane: %s\n", st.error().message().c_str());
    return 1;
  }
  // The admin (system:masters) for the bench's client and the allocator alike.
  const std::string kubeconfig = plane.AdminKubeconfig();
  auto rc = k8s::LoadKubeconfig(kubeconfig);
  if (!rc) {
    std::fprintf(stderr, "%s\n", rc.error().message().c_str());
    return 1;
  }
  auto client = k8s::NewClient(*rc, "pylon-allocator-bench/0");
  if (!client) return 1;
  const std::string deploy = std::string(PYLON_SOURCE_DIR) + "/deploy";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"apply", "-f", deploy + "/namespace.yaml", "-f", deploy + "/crds"},
        std::vector<std::string>{"wait", "--for=condition=Established", "--timeout=60s", "crd",
                                 "--all"}}) {
    if (auto r = plane.Kubectl(args); !r) {
      std::fprintf(stderr, "kubectl: %s\n", r.error().message().c_str());
      return 1;
    }
  }
  json group = {
      {"apiVersion", "purelb.io/v1"},
      {"kind", "ServiceGroup"},
      {"metadata", {{"name", "default"}, {"namespace", "purelb-system"}}},
      {"spec",
       {{"local", {{"v4pools", {{{"pool", "198.18.0.0/16"}, {"subnet", "198.18.0.0/16"}}}}}}}}};
  static const k8s::Resource groups{"purelb.io", "v1", "servicegroups", "ServiceGroup", true};
  if (auto r = (*client)->Create(groups, group); !r) {
    std::fprintf(stderr, "group: %s\n", r.error().message().c_str());
    return 1;
  }
  auto alloc = pylon::lab::Process::Spawn({{pylon, "allocator", "--kubeconfig", kubeconfig,
                                            "--metrics-addr", "127.0.0.1:0", "--identity", "bench"},
                                           "",
                                           dir + "/allocator.log",
                                           {},
                                           true});
  if (!alloc) return 1;

  Observer obs(**client);
  obs.WaitReady();
  // Wait until the allocator leads (the first Service gets its address).
  auto create = [&](const std::string& name) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto r = (*client)->Create(k8s::resources::Services(), ServiceJson(name));
      if (r) return true;
      std::fprintf(stderr, "create %s: %s\n", name.c_str(), r.error().message().c_str());
    }
    return false;
  };
  create("warmup");
  while (obs.Seen().count("warmup") == 0) std::this_thread::sleep_for(5ms);

  // One at a time.
  std::vector<double> single_ms;
  for (int i = 0; i < single; ++i) {
    const std::string name = "one-" + std::to_string(i);
    create(name);
    const auto t0 = Clock::now();
    while (true) {
      auto seen = obs.Seen();
      auto it = seen.find(name);
      if (it != seen.end()) {
        single_ms.push_back(std::chrono::duration<double, std::milli>(it->second - t0).count());
        break;
      }
      std::this_thread::sleep_for(200us);
    }
  }
  // `count` Services "<prefix><i>" by `creators` threads, as fast as the server takes them;
  // `created` (if given) gets each one's creation time.
  auto create_many = [&](const std::string& prefix, int count,
                         std::vector<Clock::time_point>* created) {
    std::vector<std::thread> threads;
    for (int t = 0; t < creators; ++t) {
      threads.emplace_back([&, t] {
        for (int i = t; i < count; i += creators) {
          create(prefix + std::to_string(i));
          if (created) (*created)[static_cast<size_t>(i)] = Clock::now();
        }
      });
    }
    for (auto& t : threads) t.join();
  };
  std::vector<Clock::time_point> created(static_cast<size_t>(burst));
  const auto burst_start = Clock::now();
  create_many("b-", burst, &created);
  const auto created_all = Clock::now();
  const size_t want = static_cast<size_t>(1 + single + burst);
  // Creating 10^4 Services can itself take minutes on a loaded machine: the wait is counted
  // from the last creation, and "all allocated" is the last status seen.
  while (obs.Count() < want && Clock::now() - created_all < 120s) {
    std::this_thread::sleep_for(10ms);
  }
  auto seen = obs.Seen();
  auto burst_end = burst_start;
  for (const auto& [n, t] : seen) burst_end = std::max(burst_end, t);
  std::vector<double> burst_ms;
  for (int i = 0; i < burst; ++i) {
    auto it = seen.find("b-" + std::to_string(i));
    if (it == seen.end()) continue;
    burst_ms.push_back(
        std::chrono::duration<double, std::milli>(it->second - created[static_cast<size_t>(i)])
            .count());
  }
  const long rss = PeakRssKb(alloc->pid());
  Figures fs = Percentiles(single_ms), fb = Percentiles(burst_ms);
  std::printf(
      "single Service, %d sequential: creation -> status p50 %.2f ms, p99 %.2f ms, max "
      "%.2f ms\n",
      single, fs.p50, fs.p99, fs.max);
  std::printf(
      "burst of %d (%d creators): created in %.2f s; all allocated %.2f s after the first "
      "creation, %.0f ms after the last; %zu allocated\n",
      burst, creators, std::chrono::duration<double>(created_all - burst_start).count(),
      std::chrono::duration<double>(burst_end - burst_start).count(),
      std::chrono::duration<double, std::milli>(burst_end - created_all).count(), burst_ms.size());
  std::printf("burst creation -> status p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", fb.p50, fb.p99,
              fb.max);
  std::printf("allocator peak RSS (VmHWM): %.1f MB\n", static_cast<double>(rss) / 1024.0);
  std::fflush(stdout);
  alloc->Stop(std::chrono::milliseconds(3000));
  bool restarted_ok = true;
  if (restart != 0) {
    // A fresh replica: lists every Service, rebuilds, leads (the old one released the Lease).
    const std::string log2 = dir + "/allocator2.log";
    const auto t0 = Clock::now();
    auto again =
        pylon::lab::Process::Spawn({{pylon, "allocator", "--kubeconfig", kubeconfig,
                                     "--metrics-addr", "127.0.0.1:0", "--identity", "bench2"},
                                    "",
                                    log2,
                                    {},
                                    true});
    if (!again) return 1;
    bool leading = false;
    while (Clock::now() - t0 < 120s) {
      if (ReadFile(log2).find("leading: workers started") != std::string::npos) {
        leading = true;
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    const auto led = Clock::now();
    // One more Service proves the restarted replica allocates next to everything it rebuilt.
    create("after-restart");
    while (obs.Seen().count("after-restart") == 0 && Clock::now() - led < 60s) {
      std::this_thread::sleep_for(1ms);
    }
    const auto allocated = Clock::now();
    restarted_ok = leading && obs.Seen().count("after-restart") == 1;
    std::printf(
        "restart next to %zu Services: leading with state rebuilt after %.2f s; a new Service "
        "allocated %.1f ms later%s\n",
        want, std::chrono::duration<double>(led - t0).count(),
        std::chrono::duration<double, std::milli>(allocated - led).count(),
        restarted_ok ? "" : " (FAILED)");
    std::printf("restarted allocator peak RSS (VmHWM): %.1f MB\n",
                static_cast<double>(PeakRssKb(again->pid())) / 1024.0);
    std::fflush(stdout);
    again->Stop(std::chrono::milliseconds(3000));
  }
  bool backlog_ok = true;
  if (backlog > 0) {
    // No allocator runs now: the backlog waits unallocated, then one allocator starts.
    const auto c0 = Clock::now();
    create_many("q-", backlog, nullptr);
    const double create_s = std::chrono::duration<double>(Clock::now() - c0).count();
    const size_t before = obs.Count();
    std::map<std::string, double> cpu_before;
    for (const auto& [name, pid] : plane.Pids()) cpu_before[name] = CpuSeconds(pid);
    const std::string log3 = dir + "/allocator3.log";
    const auto t0 = Clock::now();
    auto third =
        pylon::lab::Process::Spawn({{pylon, "allocator", "--kubeconfig", kubeconfig,
                                     "--metrics-addr", "127.0.0.1:0", "--identity", "bench3"},
                                    "",
                                    log3,
                                    {},
                                    true});
    if (!third) return 1;
    const size_t target = before + static_cast<size_t>(backlog);
    while (obs.Count() < target && Clock::now() - t0 < 600s) {
      std::this_thread::sleep_for(10ms);
    }
    auto all = obs.Seen();
    Clock::time_point last = t0;
    size_t done = 0;
    for (const auto& [n, t] : all) {
      if (n.rfind("q-", 0) != 0) continue;
      ++done;
      last = std::max(last, t);
    }
    backlog_ok = done == static_cast<size_t>(backlog);
    std::printf(
        "backlog of %d Services created with no allocator running (%.1f s); a starting "
        "allocator allocated %zu of them %.2f s after it started%s\n",
        backlog, create_s, done, std::chrono::duration<double>(last - t0).count(),
        backlog_ok ? "" : " (FAILED)");
    std::printf("that allocator's peak RSS (VmHWM): %.1f MB\n",
                static_cast<double>(PeakRssKb(third->pid())) / 1024.0);
    // Where the time went: CPU seconds each process used while the backlog was allocated.
    std::printf("CPU time during it: allocator %.1f s", CpuSeconds(third->pid()));
    for (const auto& [name, pid] : plane.Pids()) {
      std::printf(", %s %.1f s", name.c_str(), CpuSeconds(pid) - cpu_before[name]);
    }
    std::printf("\n");
    std::fflush(stdout);
    third->Stop(std::chrono::milliseconds(3000));
  }
  plane.Stop();
  std::filesystem::remove_all(dir);
  return burst_ms.size() == static_cast<size_t>(burst) && restarted_ok && backlog_ok ? 0 : 1;
}
