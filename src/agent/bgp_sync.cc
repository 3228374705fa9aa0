#include "agent/bgp_sync.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>

#include "bgp/bird_control.h"
#include "common/log.h"
#include "common/object_key.h"
#include "common/time.h"
#include "k8s/base64.h"
#include "k8s/object.h"
#include "k8s/resource.h"
#include "k8s/retry.h"

namespace pylon::agent {

namespace {

constexpr auto kBirdTimeout = std::chrono::seconds(5);
constexpr auto kPasswordRefresh = std::chrono::seconds(30);
constexpr auto kPasswordRetry = std::chrono::seconds(5);

// Messages of TCP-MD5 trouble: Linux drops segments whose signature does not verify, so a
// mismatch shows as a session that never leaves Connect/Active, with no error of its own.
constexpr char kPasswordHint[] =
    "a TCP-MD5 password is set: if the router's differs, the session never establishes and "
    "neither side logs a reason";

std::string Quote(const std::string& path) { return "\"" + path + "\""; }

// The objects of one kind, by name: each that `parse` accepts, and for each it refuses its last
// good version in `last` (if any). `note(object, error)` hears of each ("" when accepted).
template <typename T, typename Parse, typename Note>
std::map<std::string, T> KeepLastGood(const std::vector<Json>& objects,
                                      const std::map<std::string, T>& last, Parse parse,
                                      Note note) {
  std::map<std::string, T> out;
  for (const auto& obj : objects) {
    const std::string name = k8s::Name(obj);
    auto parsed = parse(obj);
    note(obj, parsed ? std::string() : parsed.error().message());
    if (parsed) {
      out[name] = std::move(*parsed);
    } else if (auto it = last.find(name); it != last.end()) {
      out[name] = it->second;
    }
  }
  return out;
}

Status WriteFile0600(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) return Fail(ErrorCode::kSystem, "cannot write " + tmp);
    f << text;
    if (!f.flush()) return Fail(ErrorCode::kSystem, "cannot write " + tmp);
  }
  ::chmod(tmp.c_str(), 0600);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return FailErrno(errno, "rename " + tmp + " to " + path);
  }
  return Ok();
}

}  // namespace

BgpSync::BgpSync(BgpOptions options, std::string node_name, std::string ns, k8s::Client* client,
                 k8s::EventRecorder* recorder, metrics::Registry* metrics, const Clock* clock)
    : o_(std::move(options)),
      node_(std::move(node_name)),
      ns_(std::move(ns)),
      client_(client),
      recorder_(recorder),
      metrics_(metrics),
      clock_(clock) {
  if (metrics_) {
    metrics_->Describe(kMetricBgpDaemonUp, "1 while the routing daemon answers on its socket",
                       metrics::Type::kGauge);
    metrics_->Describe(kMetricBgpSessionUp,
                       "1 while this node's session with the peer is "
                       "Established",
                       metrics::Type::kGauge, {}, metrics::Start::kWhenSet);
    metrics_->Describe(kMetricBgpReloads, "routing daemon reconfigurations, by result",
                       metrics::Type::kCounter, {{"result", {"ok", "rejected", "unreachable"}}});
    metrics_->Set(kMetricBgpDaemonUp, {}, 0);
  }
}

void BgpSync::ParseObjects(const BgpInputs& in) {
  // Per kind: an accepted object clears its warning; a refused one is warned about once per
  // message (log and a Warning event on the object).
  auto note = [this](const k8s::Resource& kind) {
    return [this, res = &kind](const Json& obj, const std::string& error) {
      const std::string key = res->kind + "/" + k8s::Name(obj);
      if (error.empty()) {
        warned_.erase(key);
        return;
      }
      if (warned_[key] == error) return;
      warned_[key] = error;
      log::Warn("BGP object refused; its last good version stays in force",
                {{"object", key}, {"error", error}});
      if (recorder_) {
        recorder_->Event(k8s::ObjectReference::For(*res, obj), k8s::EventLevel::kWarning,
                         "InvalidConfig",
                         error + " (node " + node_ + " keeps the last good version)");
      }
    };
  };
  peer_objects_.clear();
  invalid_.clear();
  for (const auto& obj : in.peers) peer_objects_[k8s::Name(obj)] = obj;
  auto note_peer = note(k8s::resources::BGPPeers());
  peers_ = KeepLastGood(in.peers, peers_, bgp::ParsePeer,
                        [&](const Json& obj, const std::string& error) {
                          if (!error.empty()) invalid_[k8s::Name(obj)] = error;
                          note_peer(obj, error);
                        });
  profiles_ = KeepLastGood(in.profiles, profiles_, bgp::ParseBfdProfile,
                           note(k8s::resources::BFDProfiles()));
  ads_by_name_ = KeepLastGood(in.advertisements, ads_by_name_, bgp::ParseAdvertisement,
                              note(k8s::resources::BGPAdvertisements()));
  ads_.clear();
  for (const auto& [name, a] : ads_by_name_) ads_.push_back(a);
}

void BgpSync::ResolvePasswords() {
  const SteadyTime now = clock_->Now();
  std::set<std::pair<std::string, std::string>> wanted;
  for (const auto& [name, p] : peers_) {
    if (p.password_secret) wanted.insert({p.password_secret->name, p.password_secret->key});
  }
  bool missing = false;
  for (const auto& [name, p] : peers_) {
    if (p.password_secret && !passwords_.count(name)) missing = true;
  }
  // Re-read every 30 s (a rotated password), or every 5 s while one is missing.
  if (passwords_read_ && now < *passwords_read_ + (missing ? kPasswordRetry : kPasswordRefresh)) {
    return;
  }
  passwords_read_ = now;
  std::map<std::string, std::string> by_ref;  // "secret/key" -> password
  std::map<std::string, Json> secrets;
  for (const auto& [secret, key] : wanted) {
    if (!secrets.count(secret)) {
      auto s = client_->Get(k8s::resources::Secrets(), ns_, secret);
      if (!s) {
        log::Warn("cannot read a BGP password Secret",
                  {{"secret", ObjectKey{ns_, secret}.String()}, {"error", s.error().message()}});
        continue;
      }
      secrets[secret] = *s;
    }
    const Json* data = Find(secrets[secret], {"data", key});
    if (!data || !data->is_string()) continue;
    auto decoded = k8s::Base64Decode(data->get<std::string>());
    if (decoded) by_ref[secret + "/" + key] = *decoded;
  }
  passwords_.clear();
  for (const auto& [name, p] : peers_) {
    if (!p.password_secret) continue;
    auto it = by_ref.find(p.password_secret->name + "/" + p.password_secret->key);
    if (it != by_ref.end()) passwords_[name] = it->second;
  }
}

void BgpSync::SetReachable(bool reachable, const std::string& why) {
  reachable_.store(reachable);
  if (metrics_) metrics_->Set(kMetricBgpDaemonUp, {}, reachable ? 1 : 0);
  if (reachable == reachable_reported_) return;
  reachable_reported_ = reachable;
  if (reachable) {
    log::Info("routing daemon answers again", {{"socket", o_.bird_socket}});
  } else {
    log::Error("routing daemon unreachable: BGP announcements of this node are not managed",
               {{"socket", o_.bird_socket}, {"error", why}});
  }
  if (recorder_) {
    k8s::ObjectReference ref{"Node", "", node_, "", "v1"};
    recorder_->Event(ref, reachable ? k8s::EventLevel::kNormal : k8s::EventLevel::kWarning,
                     reachable ? "RoutingDaemonUp" : "RoutingDaemonUnreachable",
                     reachable ? "BIRD answers on " + o_.bird_socket
                               : "BIRD does not answer on " + o_.bird_socket + ": " + why);
  }
}

bool BgpSync::Apply(const std::string& text) {
  const std::string next = o_.bird_config + ".next";
  if (auto st = WriteFile0600(next, text); !st) {
    log::Error("cannot write the BIRD configuration", {{"error", st.error().message()}});
    return false;
  }
  auto c = bgp::BirdControl::Connect(o_.bird_socket, kBirdTimeout);
  if (!c) {
    // Leave the file in place: a BIRD that starts later reads it.
    std::rename(next.c_str(), o_.bird_config.c_str());
    SetReachable(false, c.error().message());
    if (metrics_) metrics_->Add(kMetricBgpReloads, {{"result", "unreachable"}});
    return false;
  }
  SetReachable(true, "");
  if (auto check = c->Command("configure check " + Quote(next)); !check) {
    const std::string msg = check.error().message();
    log::Error("BIRD refused the rendered configuration; the previous one stays", {{"error", msg}});
    if (metrics_) metrics_->Add(kMetricBgpReloads, {{"result", "rejected"}});
    if (recorder_) {
      recorder_->Event(k8s::ObjectReference{"Node", "", node_, "", "v1"}, k8s::EventLevel::kWarning,
                       "RoutingConfigRejected", msg);
    }
    return false;
  }
  if (std::rename(next.c_str(), o_.bird_config.c_str()) != 0) {
    log::Error("cannot install the BIRD configuration", {{"path", o_.bird_config}});
    return false;
  }
  auto r = c->Command("configure " + Quote(o_.bird_config));
  if (!r) {
    log::Error("BIRD reconfiguration failed", {{"error", r.error().message()}});
    if (metrics_) metrics_->Add(kMetricBgpReloads, {{"result", "rejected"}});
    return false;
  }
  applied_ = text;
  if (metrics_) metrics_->Add(kMetricBgpReloads, {{"result", "ok"}});
  std::string peers;
  if (rendered_) {
    for (const auto& p : rendered_->peers) peers += (peers.empty() ? "" : ",") + p.peer;
  }
  log::Info("BIRD reconfigured", {{"peers", peers}, {"withdraw_all", draining_ ? "yes" : "no"}});
  return true;
}

void BgpSync::Sync(const BgpInputs& in) {
  ParseObjects(in);
  ResolvePasswords();
  bgp::RenderInput ri;
  ri.node_name = node_;
  ri.node = in.node.value_or(Json{{"metadata", {{"name", node_}}}});
  ri.node_ipv4 = in.node_ipv4;
  ri.virtual_interface = in.virtual_interface;
  for (const auto& [name, p] : peers_) ri.peers.push_back(p);
  ri.profiles = profiles_;
  ri.advertisements = ads_;
  ri.passwords = passwords_;
  ri.withdraw_all = draining_;
  last_input_ = ri;
  auto r = bgp::RenderBirdConfig(ri);
  if (!r) {
    if (warned_["render"] != r.error().message()) {
      warned_["render"] = r.error().message();
      log::Error("cannot render the BIRD configuration", {{"error", r.error().message()}});
      if (recorder_) {
        recorder_->Event(k8s::ObjectReference{"Node", "", node_, "", "v1"},
                         k8s::EventLevel::kWarning, "InvalidConfig", r.error().message());
      }
    }
  } else {
    warned_.erase("render");
    rendered_ = std::move(*r);
    if (rendered_->text != applied_) Apply(rendered_->text);
  }
  if (clock_->Now() >= next_poll_) {
    Poll();
    next_poll_ = clock_->Now() + o_.status_interval;
  }
}

void BgpSync::Poll() {
  std::map<std::string, bgp::ProtocolStatus> protos;
  std::map<std::string, std::string> bfd_by_address;
  auto c = bgp::BirdControl::Connect(o_.bird_socket, kBirdTimeout);
  if (!c) {
    SetReachable(false, c.error().message());
  } else {
    SetReachable(true, "");
    if (applied_.empty() && rendered_) Apply(rendered_->text);
    if (auto rep = c->Command("show protocols all")) {
      for (auto& p : bgp::ParseProtocols(*rep)) protos[p.name] = p;
    }
    if (auto rep = c->Command("show bfd sessions")) {
      for (auto& s : bgp::ParseBfdSessions(*rep)) bfd_by_address[s.address] = s.state;
    }
  }
  std::map<std::string, std::string> protocol_of;
  if (rendered_) {
    for (const auto& p : rendered_->peers) protocol_of[p.peer] = p.protocol;
  }
  std::map<std::string, std::string> skipped;
  if (rendered_) {
    for (const auto& [peer, why] : rendered_->skipped) skipped[peer] = why;
  }
  for (const auto& [name, obj] : peer_objects_) {
    std::optional<std::string> invalid;
    if (auto it = invalid_.find(name); it != invalid_.end()) invalid = it->second;
    Json entry = nullptr;  // null: this node has no session with the peer
    bool up = false;
    auto proto = protocol_of.find(name);
    if (proto != protocol_of.end()) {
      entry = {{"node", node_}, {"protocol", proto->second}};
      if (!c) {
        entry["session"] = "Unknown";
        entry["message"] = "the routing daemon does not answer: " + c.error().message();
      } else if (auto it = protos.find(proto->second); it != protos.end()) {
        const auto& st = it->second;
        up = st.Established();
        entry["session"] = st.bgp_state.empty() ? st.state : st.bgp_state;
        if (!st.last_error.empty()) entry["lastError"] = st.last_error;
        const auto& peer = peers_.at(name);
        if (!peer.bfd_profile.empty()) {
          auto b = bfd_by_address.find(peer.peer_address.ToString());
          entry["bfd"] = b == bfd_by_address.end() ? "None" : b->second;
        }
        if (!up && peer.password_secret) entry["message"] = kPasswordHint;
      } else {
        entry["session"] = "Pending";
        entry["message"] = "not loaded by the routing daemon yet";
      }
      entry["established"] = up;
    } else if (auto it = skipped.find(name); it != skipped.end()) {
      entry = {{"node", node_},
               {"session", "NotConfigured"},
               {"established", false},
               {"message", it->second}};
    } else if (invalid && !peers_.count(name)) {
      entry = {{"node", node_},
               {"session", "NotConfigured"},
               {"established", false},
               {"message", "no valid version of this peer yet"}};
    }
    if (metrics_) {
      if (entry.is_null()) {
        metrics_->Remove(kMetricBgpSessionUp, {{"peer", name}});
      } else {
        metrics_->Set(kMetricBgpSessionUp, {{"peer", name}}, up ? 1 : 0);
      }
    }
    auto was = established_.find(name);
    if (!entry.is_null() && (was == established_.end() || was->second != up)) {
      if (was != established_.end() || up) {
        log::Info(up ? "BGP session established" : "BGP session down",
                  {{"peer", name}, {"session", FindString(entry, {"session"}).value_or("")}});
        if (recorder_) {
          const std::optional<std::string> last_error = FindString(entry, {"lastError"});
          recorder_->Event(k8s::ObjectReference::For(k8s::resources::BGPPeers(), obj),
                           up ? k8s::EventLevel::kNormal : k8s::EventLevel::kWarning,
                           up ? "SessionEstablished" : "SessionDown",
                           "node " + node_ + ": " + FindString(entry, {"session"}).value_or("") +
                               (last_error ? " (" + *last_error + ")" : ""));
        }
      }
      established_[name] = up;
    }
    if (entry.is_null()) established_.erase(name);
    Json key = {{"entry", entry}, {"invalid", invalid ? Json(*invalid) : Json()}};
    auto w = written_.find(name);
    if (w != written_.end() && w->second == key) continue;
    if (WriteStatus(name, entry, invalid)) written_[name] = key;
  }
  for (auto it = written_.begin(); it != written_.end();) {
    it = peer_objects_.count(it->first) ? std::next(it) : written_.erase(it);
  }
}

Status BgpSync::WriteStatus(const std::string& peer, const Json& entry,
                            const std::optional<std::string>& invalid) {
  bool gone = false;
  Status st = k8s::RetryOnConflict([&]() -> Status {
    auto obj = client_->Get(k8s::resources::BGPPeers(), "", peer);
    if (!obj) {
      gone = obj.error().code() == ErrorCode::kNotFound;
      return gone ? Ok() : Fail(obj.error().Wrap("read"));
    }
    Json& status = (*obj)["status"];
    if (!status.is_object()) status = Json::object();
    Json nodes = Json::array();
    if (status.contains("nodes") && status["nodes"].is_array()) {
      for (const auto& n : status["nodes"]) {
        if (n.is_object() && FindString(n, {"node"}).value_or("") != node_) nodes.push_back(n);
      }
    }
    if (!entry.is_null()) nodes.push_back(entry);
    std::sort(nodes.begin(), nodes.end(), [](const Json& a, const Json& b) {
      return FindString(a, {"node"}).value_or("") < FindString(b, {"node"}).value_or("");
    });
    status["nodes"] = nodes;
    // The Valid condition: every agent writes the same content, so their writes agree.
    const std::string want = invalid ? "False" : "True";
    Json conds = Json::array();
    std::string since = FormatTime(clock_->WallNow());
    if (status.contains("conditions") && status["conditions"].is_array()) {
      for (const auto& cnd : status["conditions"]) {
        if (!cnd.is_object()) continue;
        if (FindString(cnd, {"type"}).value_or("") == "Valid") {
          if (FindString(cnd, {"status"}).value_or("") == want)
            since = FindString(cnd, {"lastTransitionTime"}).value_or(since);
        } else {
          conds.push_back(cnd);
        }
      }
    }
    conds.push_back(
        {{"type", "Valid"},
         {"status", want},
         {"reason", invalid ? "InvalidSpec" : "Accepted"},
         {"message",
          invalid ? *invalid + " (the last good version stays in force)" : "spec accepted"},
         {"lastTransitionTime", since},
         {"observedGeneration",
          Find(*obj, {"metadata", "generation"}) ? (*obj)["metadata"]["generation"] : Json(0)}});
    status["conditions"] = conds;
    auto r = client_->UpdateStatus(k8s::resources::BGPPeers(), *obj);
    return r ? Ok() : Fail(r.error());
  });
  if (!st) {
    // Not remembered as written: the next pass writes it again (it used to be dropped after one
    // failure until the content changed).
    log::Warn("cannot write a BGPPeer status; retried on the next pass",
              {{"peer", peer}, {"error", st.error().message()}});
  }
  return st;
}

void BgpSync::Drain() {
  if (!last_input_ || !rendered_) return;
  draining_ = true;
  bgp::RenderInput ri = *last_input_;
  ri.withdraw_all = true;
  auto r = bgp::RenderBirdConfig(ri);
  if (!r) return;
  const auto start = clock_->Now();
  if (!Apply(r->text)) return;
  const auto deadline = start + o_.drain_timeout;
  while (clock_->Now() < deadline) {
    auto c = bgp::BirdControl::Connect(o_.bird_socket, kBirdTimeout);
    if (!c) break;
    auto rep = c->Command("show protocols all");
    if (!rep) break;
    long exported = 0;
    for (const auto& p : bgp::ParseProtocols(*rep)) {
      if (p.proto == "BGP" && p.exported > 0) exported += p.exported;
    }
    if (exported == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(o_.drain_margin);
  log::Info(
      "BGP routes withdrawn",
      {{"took_ms",
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(clock_->Now() - start)
                           .count())}});
}

}  // namespace pylon::agent
