// Drives this node's BIRD 2 (--bird-socket, --bird-config; docs/bgp.md): renders its
// configuration from the BGPPeer, BFDProfile and BGPAdvertisement objects (bgp/bird_config.h),
// applies it over the control socket only when it changed, and reports what BIRD says.
//
// - An object that does not parse keeps its last good version in force (for as long as this
//   agent runs); the object gets a Valid=False condition and a Warning event.
// - A configuration BIRD refuses (`configure check`) is not applied: the previous one stays.
// - The daemon unreachable: log and Warning event on the Node once, purelb_bgp_daemon_up 0, and
//   the agent reports not ready (/readyz) until it answers again. Retried every poll.
// - Every poll (--bgp-status-interval) reads `show protocols all` and `show bfd sessions` and
//   writes this node's entry of each peer's status.nodes[] (read-modify-write with the
//   resourceVersion, so agents of every node share the list), with events on session changes.
// - Drain(): graceful shutdown. Re-renders with every export rejected, so the router withdraws
//   this node's routes by UPDATE while the sessions stay up, waits until BIRD reports nothing
//   exported (at most --bgp-drain-timeout) and then the margin for the router's FIB.
//
// Loop thread only (Agent's), except DaemonReachable().
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/options.h"
#include "bgp/bird_config.h"
#include "bgp/config.h"
#include "common/clock.h"
#include "k8s/client.h"
#include "k8s/event_recorder.h"
#include "metrics/registry.h"

namespace pylon::agent {

inline constexpr char kMetricBgpDaemonUp[] = "purelb_bgp_daemon_up";
inline constexpr char kMetricBgpSessionUp[] = "purelb_bgp_session_up";
inline constexpr char kMetricBgpReloads[] = "purelb_bgp_reloads_total";

struct BgpInputs {
  std::vector<Json> peers;
  std::vector<Json> profiles;
  std::vector<Json> advertisements;
  std::optional<Json> node;  // this node's Node object
  std::optional<net::IpAddress> node_ipv4;
  std::string virtual_interface = "kube-lb0";
};

class BgpSync {
 public:
  BgpSync(BgpOptions options, std::string node_name, std::string ns, k8s::Client* client,
          k8s::EventRecorder* recorder, metrics::Registry* metrics, const Clock* clock);

  // Parses, renders, applies when changed; polls BIRD's state when a poll is due.
  void Sync(const BgpInputs& in);
  // When the next poll is due (for the agent loop's wait).
  SteadyTime NextPoll() const { return next_poll_; }
  bool DaemonReachable() const { return reachable_.load(); }
  void Drain();

 private:
  void ParseObjects(const BgpInputs& in);
  void ResolvePasswords();
  // Writes `text` to the config path and makes BIRD load it; false when BIRD refused it or is
  // unreachable (the previous configuration stays).
  bool Apply(const std::string& text);
  void Poll();
  void SetReachable(bool reachable, const std::string& why);
  Status WriteStatus(const std::string& peer, const Json& entry,
                     const std::optional<std::string>& invalid);

  BgpOptions o_;
  std::string node_;
  std::string ns_;
  k8s::Client* client_;
  k8s::EventRecorder* recorder_;
  metrics::Registry* metrics_;
  const Clock* clock_;

  std::map<std::string, bgp::Peer> peers_;      // last good, by name
  std::map<std::string, std::string> invalid_;  // peer name -> why its current spec is refused
  std::map<std::string, Json> peer_objects_;
  std::map<std::string, bgp::BfdProfile> profiles_;
  std::vector<bgp::Advertisement> ads_;
  std::map<std::string, bgp::Advertisement> ads_by_name_;
  std::map<std::string, std::string> passwords_;
  std::optional<SteadyTime> passwords_read_;
  std::map<std::string, std::string> warned_;  // object key -> last message evented

  std::optional<bgp::RenderInput> last_input_;
  std::optional<bgp::Rendered> rendered_;
  std::string applied_;  // text BIRD last accepted
  bool draining_ = false;
  std::atomic<bool> reachable_{true};
  bool reachable_reported_ = true;
  SteadyTime next_poll_{};
  std::map<std::string, Json> written_;      // peer -> this node's status entry last written
  std::map<std::string, bool> established_;  // peer -> last seen
};

}  // namespace pylon::agent
