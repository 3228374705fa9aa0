// The soak's runner (soak.h), internal to src/soak: the Soak class, whose members are
// implemented by concept in soak.cc (the run and its table), setup.cc (the lab, the fault proxy,
// supervision), actions.cc (the seeded decisions and faults) and observe.cc (the invariants
// checked against the API and the wire; their pure judges are in checks.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "faultproxy/proxy.h"
#include "lab/lab.h"
#include "lab/neighbor_probe.h"
#include "lab/process.h"
#include "soak/checks.h"
#include "soak/scenario.h"
#include "soak/soak.h"

namespace pylon::soak {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// The port in every node where the agents reach the fault proxy (the lab's own forwarder, to the
// API server directly, is on Lab::kNodeApiPort).
inline constexpr int kNodeProxyPort = 6444;

struct Violation {
  double t_s;
  std::string what;
};

class Soak {
 public:
  explicit Soak(const SoakOptions& o) : o_(o), rng_(o.seed) {}
  ~Soak() { TearDown(); }

  int Run();

 private:
  // --- decisions (deterministic from the seed) ---
  std::uint64_t Draw(std::uint64_t n) { return rng_() % n; }
  void Decide();
  void Log(const std::string& line);
  void Count(const std::string& kind) { ++faults_[kind]; }
  // The initial Services: each name exists with probability 3/4.
  // A Service's parameters, drawn in this order whatever they are used for (the draws are the
  // seed's sequence).
  ServiceState DrawService();
  void CreateServices();
  // One fault phase: a fixed number of steps of decisions (the same on every run of a seed),
  // then every fault undone and every config object valid again.
  void FaultPhase();
  struct QuietOutcome {
    bool converged = false;
    std::vector<std::string> left;  // the settled checks' failures at the end
    double took_s = 0;
  };
  // Waits up to --bound (or until a stop signal) for every settled check to pass. Logs what it
  // still waits for to soak-quiet.log whenever that changes.
  QuietOutcome QuietPhase();

  // --- set-up and tear-down ---
  Status SetUp();
  Status StartProxyPath();
  Status StartReplica2();
  void TearDown();

  // --- actions ---
  void ServiceChurn();
  void ConfigEdit();
  void ProxyFault();
  void ApplyService(int i, const std::string& why, bool ask);
  void DeleteService(int i);
  void ApplyConfig(int c, bool valid);
  void DeleteConfig(int c);
  void Schedule(int after_steps, const std::string& what, std::function<void()> undo);
  // A fault on `node` for `hold` steps (unless another node is disrupted: `busy`): `set(true)`
  // now, `set(false)` then; logged as `what` and undone as `undo`.
  void NodeDown(int node, int hold, bool busy, const std::string& what, const std::string& undo,
                const std::function<void(bool down)>& set);
  void RunDue(bool all);
  // What a Deployment and a DaemonSet do: restart a component that exited on its own (an
  // allocator exits when it loses its lease) and that the soak did not stop.
  void Supervise();
  bool ApiUsable() const { return !apiserver_stopped_ && !apiserver_hung_; }
  int DisruptedNode() const;

  // --- checks ---
  Result<ApiView> ReadApi();
  void ContinuousCheck();
  // One pass of every check that must hold once the faults have stopped; the failures.
  std::vector<std::string> SettledCheck();
  // The soak's pool addresses on every node's interfaces (kube-lb0 apart); a node whose
  // addresses cannot be read is a failure.
  NodeAddresses ReadNodeAddresses(std::vector<std::string>& fail);
  // Every Service served (its local addresses on the announcer's eth0 alone, an HTTP answer) or
  // explained; the local addresses and their announcers, for CheckWire.
  std::vector<std::pair<std::string, std::string>> CheckServed(const ApiView& view,
                                                               NodeAddresses& on,
                                                               std::vector<std::string>& fail);
  // Who answers ARP / NS for each local address (ip, announcer): the announcer's MAC alone.
  std::vector<std::string> CheckWire(const std::vector<std::pair<std::string, std::string>>& local);
  void Violate(const std::string& what);
  double Elapsed() const { return std::chrono::duration<double>(SteadyClock::now() - t0_).count(); }
  void PrintTable(double setup_s);

  SoakOptions o_;
  std::mt19937_64 rng_;
  std::unique_ptr<lab::Lab> lab_;
  std::unique_ptr<faultproxy::FaultProxy> proxy_;
  std::vector<lab::Process> forwarders_;
  std::ofstream decisions_;
  // What each quiet phase still waits for, each time that changes (not part of the digest).
  std::ofstream quiet_log_;
  std::uint64_t digest_ = 1469598103934665603ull;  // FNV-1a of the decision log
  int decision_count_ = 0;
  int step_ = 0;

  ConfigState configs_[kConfigCount];
  ServiceState services_[kServices];
  AddressBook book_;
  std::map<std::string, packet::MacAddress> node_mac_;
  std::map<std::string, std::string> mac_node_;

  struct Pending {
    int due_step;
    std::string what;
    std::function<void()> undo;
  };
  std::vector<Pending> pending_;
  bool allocator_down_[2] = {false, false};
  lab::Process replica2_;  // the second allocator replica (the lab runs the first)
  bool apiserver_stopped_ = false;
  bool apiserver_hung_ = false;
  std::set<int> node_down_;  // nodes with a fault in force (agent down, frozen, link down)

  std::map<std::string, int> faults_;
  std::map<std::string, int> restarts_;  // by the soak as Kubernetes would, not decisions
  std::map<std::string, long> checks_;
  std::vector<Violation> violations_;
  std::map<std::string, double> duplicate_since_;  // address -> first seen unshared (s)
  int phases_ = 0, converged_phases_ = 0;
  std::vector<double> convergence_s_;
  SteadyClock::time_point t0_;
  std::string first_failure_;
};

}  // namespace pylon::soak
