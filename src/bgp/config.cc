#include "bgp/config.h"

#include <algorithm>
#include <limits>

#include "common/duration.h"
#include "common/text.h"
#include "config/json_util.h"
#include "config/object_meta.h"
#include "k8s/selector.h"

namespace pylon::bgp {

namespace {

using config::detail::Child;
using config::detail::FieldError;
using config::detail::Index;
using config::detail::TypeName;

// Label keys and values as the API server accepts them, so a selector can be written in the
// string grammar without quoting: letters, digits, '-', '_', '.', and '/' (keys only).
bool ValidLabelText(std::string_view s, bool key) {
  if (s.empty() || s.size() > 316) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || (key && c == '/');
  });
}

Result<std::vector<NodeSelector>> ParseNodeSelectors(const Json& spec) {
  std::vector<NodeSelector> out;
  Status read =
      config::detail::ForEachItem(spec, "nodeSelectors", "spec.nodeSelectors",
                                  [&](const Json& item, const std::string& path) -> Status {
                                    auto sel = ParseLabelSelector(item, path);
                                    if (!sel) return Fail(sel.error());
                                    out.push_back(std::move(*sel));
                                    return Ok();
                                  });
  if (!read) return Fail(read.error());
  return out;
}

Result<std::optional<std::int64_t>> OptionalInt(const Json& o, std::string_view key,
                                                const std::string& path, std::int64_t lo,
                                                std::int64_t hi) {
  auto v = config::detail::OptionalNonNegativeInt(o, key, path);
  if (!v) return Fail(v.error());
  if (v->has_value() && (**v < lo || **v > hi)) {
    return FieldError(path, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got " + std::to_string(**v));
  }
  return *v;
}

Result<std::uint32_t> RequiredAsn(const Json& spec, std::string_view key) {
  const std::string path = Child("spec", key);
  auto v = OptionalInt(spec, key, path, 1, std::numeric_limits<std::uint32_t>::max());
  if (!v) return Fail(v.error());
  if (!v->has_value()) return FieldError(path, "required");
  return static_cast<std::uint32_t>(**v);
}

// A Kubernetes Duration ("90s", "1m30s") of whole seconds in [lo, 65535].
Result<std::optional<int>> OptionalSeconds(const Json& spec, std::string_view key, int lo) {
  const std::string path = Child("spec", key);
  auto text = config::detail::OptionalString(spec, key, path);
  if (!text) return Fail(text.error());
  if (!text->has_value()) return std::optional<int>();
  auto d = ParseGoDuration(**text);
  if (!d) return FieldError(path, d.error().message());
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(*d).count();
  if (ns < 0 || ns % 1'000'000'000 != 0) return FieldError(path, "must be whole seconds");
  std::int64_t s = ns / 1'000'000'000;
  if (s != 0 && (s < lo || s > 65535)) {
    return FieldError(path, "must be 0 or in [" + std::to_string(lo) + "s, 65535s], got " +
                                std::to_string(s) + "s");
  }
  return std::optional<int>(static_cast<int>(s));
}

Result<std::optional<net::IpAddress>> OptionalAddress(const Json& spec, std::string_view key) {
  const std::string path = Child("spec", key);
  auto text = config::detail::OptionalString(spec, key, path);
  if (!text) return Fail(text.error());
  if (!text->has_value() || (*text)->empty()) return std::optional<net::IpAddress>();
  auto ip = net::IpAddress::Parse(**text);
  if (!ip) return FieldError(path, "\"" + (*text)->substr(0, 60) + "\" is not an IP address");
  return std::optional<net::IpAddress>(*ip);
}

template <typename T, typename F>
Result<T> WithMeta(const Json& object, config::ObjectKind kind, F&& body) {
  auto meta = config::ParseObjectMeta(object, kind);
  if (!meta) return Fail(meta.error());
  T out;
  out.name = meta->key.name;
  auto s = [&]() -> Status {
    auto spec = config::detail::RequiredObject(object, "spec", "spec");
    if (!spec) return Fail(spec.error());
    return body(**spec, out, *meta);
  }();
  if (!s) return Fail(config::InObject(meta->key, s.error()));
  return out;
}

bool ParseUint(std::string_view s, std::uint32_t max, std::uint32_t* out) {
  auto v = ParseInteger<std::uint32_t>(s, 0, max);
  if (v) *out = *v;
  return v.has_value();
}

}  // namespace

Result<NodeSelector> ParseLabelSelector(const Json& v, const std::string& path) {
  if (auto s = config::detail::ExpectObject(v, path); !s) return Fail(s.error());
  std::vector<std::string> terms;
  auto labels = config::detail::OptionalObject(v, "matchLabels", Child(path, "matchLabels"));
  if (!labels) return Fail(labels.error());
  if (*labels != nullptr) {
    for (const auto& [k, val] : (*labels)->items()) {
      const std::string p = Child(Child(path, "matchLabels"), k);
      if (!ValidLabelText(k, true)) return FieldError(p, "not a valid label key");
      if (!val.is_string())
        return FieldError(p, "must be a string, got " + std::string(TypeName(val)));
      const auto& s = val.get_ref<const std::string&>();
      if (!s.empty() && !ValidLabelText(s, false)) return FieldError(p, "not a valid label value");
      terms.push_back(k + "=" + s);
    }
  }
  auto exprs =
      config::detail::OptionalArray(v, "matchExpressions", Child(path, "matchExpressions"));
  if (!exprs) return Fail(exprs.error());
  if (*exprs != nullptr) {
    std::size_t i = 0;
    for (const Json& e : **exprs) {
      const std::string p = Index(Child(path, "matchExpressions"), i++);
      if (auto s = config::detail::ExpectObject(e, p); !s) return Fail(s.error());
      auto key = config::detail::RequiredString(e, "key", Child(p, "key"));
      if (!key) return Fail(key.error());
      if (!ValidLabelText(*key, true)) return FieldError(Child(p, "key"), "not a valid label key");
      auto op = config::detail::RequiredString(e, "operator", Child(p, "operator"));
      if (!op) return Fail(op.error());
      std::vector<std::string> values;
      auto vals = config::detail::OptionalArray(e, "values", Child(p, "values"));
      if (!vals) return Fail(vals.error());
      if (*vals != nullptr) {
        std::size_t j = 0;
        for (const Json& x : **vals) {
          const std::string vp = Index(Child(p, "values"), j++);
          if (!x.is_string() || !ValidLabelText(x.get_ref<const std::string&>(), false)) {
            return FieldError(vp, "must be a label value");
          }
          values.push_back(x.get<std::string>());
        }
      }
      if (*op == "In" || *op == "NotIn") {
        if (values.empty()) return FieldError(Child(p, "values"), "required for operator " + *op);
        std::string list;
        for (const auto& x : values) list += (list.empty() ? "" : ",") + x;
        terms.push_back(*key + (*op == "In" ? " in (" : " notin (") + list + ")");
      } else if (*op == "Exists" || *op == "DoesNotExist") {
        if (!values.empty()) return FieldError(Child(p, "values"), "must be empty for " + *op);
        terms.push_back((*op == "Exists" ? "" : "!") + *key);
      } else {
        return FieldError(Child(p, "operator"), "unknown operator \"" + op->substr(0, 40) +
                                                    "\" (want In, NotIn, Exists or DoesNotExist)");
      }
    }
  }
  NodeSelector sel;
  for (const auto& t : terms) sel.selector += (sel.selector.empty() ? "" : ",") + t;
  // The one matcher must accept what we built.
  if (auto ok = k8s::MatchesLabelSelector(Json::object(), sel.selector); !ok) {
    return FieldError(path, ok.error().message());
  }
  return sel;
}

bool NodeMatches(const std::vector<NodeSelector>& selectors, const Json& node) {
  if (selectors.empty()) return true;
  return std::any_of(selectors.begin(), selectors.end(), [&](const NodeSelector& s) {
    auto m = k8s::MatchesLabelSelector(node, s.selector);
    return m && *m;
  });
}

Result<Community> ParseCommunity(std::string_view text) {
  Community c;
  static constexpr std::pair<std::string_view, std::uint32_t> kWellKnown[] = {
      {"no-export", 0xFFFFFF01},
      {"no-advertise", 0xFFFFFF02},
      {"no-peer", 0xFFFFFF04},
      {"blackhole", 0xFFFF029A}};
  for (const auto& [name, v] : kWellKnown) {
    if (text == name) {
      c.value = {v >> 16, v & 0xFFFF, 0};
      return c;
    }
  }
  std::string_view rest = text;
  if (rest.starts_with("large:")) {
    c.large = true;
    rest.remove_prefix(6);
  }
  std::vector<std::string_view> parts;
  while (true) {
    auto pos = rest.find(':');
    parts.push_back(rest.substr(0, pos));
    if (pos == std::string_view::npos) break;
    rest.remove_prefix(pos + 1);
  }
  const std::size_t want = c.large ? 3 : 2;
  const std::uint32_t max = c.large ? 0xFFFFFFFF : 0xFFFF;
  bool ok = parts.size() == want;
  for (std::size_t i = 0; ok && i < parts.size(); ++i) ok = ParseUint(parts[i], max, &c.value[i]);
  if (!ok) {
    return Fail(ErrorCode::kInvalidArgument,
                "\"" + std::string(text.substr(0, 60)) +
                    "\" is not a community (want A:B with 16-bit numbers, large:A:B:C with "
                    "32-bit numbers, or no-export, no-advertise, no-peer, blackhole)");
  }
  return c;
}

Result<Peer> ParsePeer(const Json& object) {
  return WithMeta<Peer>(
      object, config::ObjectKind::kBGPPeer,
      [](const Json& spec, Peer& p, const config::ObjectMeta& meta) -> Status {
        p.generation = meta.generation;
        auto addr = OptionalAddress(spec, "peerAddress");
        if (!addr) return Fail(addr.error());
        if (!addr->has_value()) return FieldError("spec.peerAddress", "required");
        p.peer_address = **addr;
        auto peer_asn = RequiredAsn(spec, "peerASN");
        if (!peer_asn) return Fail(peer_asn.error());
        p.peer_asn = *peer_asn;
        auto my_asn = RequiredAsn(spec, "myASN");
        if (!my_asn) return Fail(my_asn.error());
        p.my_asn = *my_asn;
        auto port = OptionalInt(spec, "peerPort", "spec.peerPort", 1, 65535);
        if (!port) return Fail(port.error());
        p.peer_port = static_cast<int>(port->value_or(179));
        auto src = OptionalAddress(spec, "sourceAddress");
        if (!src) return Fail(src.error());
        p.source_address = *src;
        if (p.source_address && p.source_address->family() != p.peer_address.family()) {
          return FieldError("spec.sourceAddress", "must be of the same family as peerAddress");
        }
        auto hold = OptionalSeconds(spec, "holdTime", 3);
        if (!hold) return Fail(hold.error());
        p.hold_time_s = *hold;
        auto keep = OptionalSeconds(spec, "keepaliveTime", 1);
        if (!keep) return Fail(keep.error());
        p.keepalive_time_s = *keep;
        if (p.hold_time_s && p.keepalive_time_s && *p.hold_time_s != 0 &&
            *p.keepalive_time_s >= *p.hold_time_s) {
          return FieldError("spec.keepaliveTime", "must be shorter than holdTime");
        }
        auto connect = OptionalSeconds(spec, "connectTime", 1);
        if (!connect) return Fail(connect.error());
        if (connect->has_value() && **connect == 0) {
          return FieldError("spec.connectTime", "must be at least 1s");
        }
        p.connect_time_s = *connect;
        auto secret = config::detail::OptionalObject(spec, "passwordSecret", "spec.passwordSecret");
        if (!secret) return Fail(secret.error());
        if (*secret != nullptr) {
          SecretKeyRef ref;
          auto n = config::detail::RequiredString(**secret, "name", "spec.passwordSecret.name");
          if (!n) return Fail(n.error());
          ref.name = *n;
          auto k = config::detail::OptionalString(**secret, "key", "spec.passwordSecret.key");
          if (!k) return Fail(k.error());
          if (k->has_value() && !(*k)->empty()) ref.key = **k;
          p.password_secret = ref;
        }
        if (Find(spec, {"password"}) != nullptr) {
          return FieldError("spec.password",
                            "not supported: put the password in a Secret (spec.passwordSecret)");
        }
        auto bfd = config::detail::OptionalString(spec, "bfdProfile", "spec.bfdProfile");
        if (!bfd) return Fail(bfd.error());
        p.bfd_profile = bfd->value_or("");
        auto mh = config::detail::OptionalBool(spec, "ebgpMultiHop", "spec.ebgpMultiHop");
        if (!mh) return Fail(mh.error());
        p.ebgp_multihop = mh->value_or(false);
        if (p.ebgp_multihop && p.ibgp()) {
          return FieldError("spec.ebgpMultiHop", "applies to eBGP only (peerASN equals myASN)");
        }
        auto gr = config::detail::OptionalBool(spec, "enableGracefulRestart",
                                               "spec.enableGracefulRestart");
        if (!gr) return Fail(gr.error());
        p.graceful_restart = gr->value_or(false);
        auto rid = OptionalAddress(spec, "routerID");
        if (!rid) return Fail(rid.error());
        if (rid->has_value() && (*rid)->family() != net::Family::kV4) {
          return FieldError("spec.routerID", "must be an IPv4 address");
        }
        p.router_id = *rid;
        auto sel = ParseNodeSelectors(spec);
        if (!sel) return Fail(sel.error());
        p.node_selectors = std::move(*sel);
        return Ok();
      });
}

Result<BfdProfile> ParseBfdProfile(const Json& object) {
  return WithMeta<BfdProfile>(
      object, config::ObjectKind::kBFDProfile,
      [](const Json& spec, BfdProfile& b, const config::ObjectMeta&) -> Status {
        auto rx = OptionalInt(spec, "receiveInterval", "spec.receiveInterval", 10, 60000);
        if (!rx) return Fail(rx.error());
        b.receive_interval_ms = static_cast<int>(rx->value_or(300));
        auto tx = OptionalInt(spec, "transmitInterval", "spec.transmitInterval", 10, 60000);
        if (!tx) return Fail(tx.error());
        b.transmit_interval_ms = static_cast<int>(tx->value_or(300));
        auto mult = OptionalInt(spec, "detectMultiplier", "spec.detectMultiplier", 2, 255);
        if (!mult) return Fail(mult.error());
        b.detect_multiplier = static_cast<int>(mult->value_or(3));
        auto passive = config::detail::OptionalBool(spec, "passiveMode", "spec.passiveMode");
        if (!passive) return Fail(passive.error());
        b.passive = passive->value_or(false);
        for (const char* unsupported : {"echoMode", "echoInterval", "minimumTtl"}) {
          if (Find(spec, {unsupported}) != nullptr) {
            return FieldError(Child("spec", unsupported),
                              "not supported by the routing daemon (BIRD 2 has no BFD echo mode "
                              "and no multihop TTL setting)");
          }
        }
        return Ok();
      });
}

Result<Advertisement> ParseAdvertisement(const Json& object) {
  return WithMeta<Advertisement>(
      object, config::ObjectKind::kBGPAdvertisement,
      [](const Json& spec, Advertisement& a, const config::ObjectMeta&) -> Status {
        Status communities = config::detail::ForEachString(
            spec, "communities", "spec.communities",
            [&](const std::string& text, const std::string& path) -> Status {
              auto c = ParseCommunity(text);
              if (!c) return FieldError(path, c.error().message());
              if (c->large) {
                a.large_communities.push_back(c->value);
              } else {
                a.communities.push_back({c->value[0], c->value[1]});
              }
              return Ok();
            });
        if (!communities) return communities;
        auto lp = OptionalInt(spec, "localPref", "spec.localPref", 0,
                              std::numeric_limits<std::uint32_t>::max());
        if (!lp) return Fail(lp.error());
        if (lp->has_value()) a.local_pref = static_cast<std::uint32_t>(**lp);
        Status peers = config::detail::ForEachString(
            spec, "peers", "spec.peers",
            [&](const std::string& name, const std::string& path) -> Status {
              if (name.empty()) return FieldError(path, "must be the name of a BGPPeer");
              a.peers.push_back(name);
              return Ok();
            });
        if (!peers) return peers;
        for (const char* unsupported : {"aggregationLength", "aggregationLengthV6"}) {
          if (Find(spec, {unsupported}) != nullptr) {
            return FieldError(Child("spec", unsupported),
                              "not supported: the announced prefix is the address's prefix on "
                              "kube-lb0, set by the pool's aggregation (docs/bgp.md)");
          }
        }
        auto sel = ParseNodeSelectors(spec);
        if (!sel) return Fail(sel.error());
        a.node_selectors = std::move(*sel);
        return Ok();
      });
}

}  // namespace pylon::bgp
