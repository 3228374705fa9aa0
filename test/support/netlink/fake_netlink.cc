#include "support/netlink/fake_netlink.h"

#include <linux/if.h>

#include <algorithm>
#include <deque>

namespace pylon::netlink {
namespace {

constexpr std::uint8_t kOperDown = 2;
constexpr std::uint8_t kOperUnknown = 0;
constexpr std::uint8_t kOperUp = 6;

const std::map<std::string, std::string>& DefaultSysctls() {
  static const std::map<std::string, std::string> kDefaults = {
      {"ipv4/arp_ignore", "0"},   {"ipv4/arp_announce", "0"}, {"ipv4/promote_secondaries", "0"},
      {"ipv4/arp_accept", "0"},   {"ipv4/arp_notify", "0"},   {"ipv6/accept_dad", "1"},
      {"ipv6/ndisc_notify", "0"}, {"ipv6/disable_ipv6", "0"}, {"ipv6/accept_untracked_na", "0"},
  };
  return kDefaults;
}

std::string SysctlPathFor(const std::string& fam, const std::string& ifname, const std::string& n) {
  return "net/" + fam + "/conf/" + ifname + "/" + n;
}

bool SameAddress(const AddressInfo& a, int ifindex, const net::Prefix& p) {
  return a.ifindex == ifindex && a.prefix.address() == p.address() &&
         (p.family() == net::Family::kV6 || a.prefix.length() == p.length());
}

}  // namespace

struct FakeNetlink::Queue {
  std::deque<Event> events;
};

class FakeNetlink::Source final : public EventSource {
 public:
  explicit Source(std::shared_ptr<Queue> q) : queue_(std::move(q)) {}
  Result<std::vector<Event>> Poll(std::chrono::milliseconds) override {
    std::vector<Event> out(queue_->events.begin(), queue_->events.end());
    queue_->events.clear();
    return out;
  }
  int fd() const override { return -1; }

 private:
  std::shared_ptr<Queue> queue_;
};

FakeNetlink::FakeNetlink(const Clock& clock) : clock_(clock) {
  for (const char* n : {"all", "default"}) {
    for (const auto& [k, v] : DefaultSysctls()) {
      auto slash = k.find('/');
      sysctls_[SysctlPathFor(k.substr(0, slash), n, k.substr(slash + 1))] = v;
    }
  }
}

FakeNetlink::~FakeNetlink() = default;

int FakeNetlink::AddTestLink(const std::string& name, const std::string& kind, bool up) {
  LinkInfo l;
  l.index = next_index_++;
  l.name = name;
  l.kind = kind;
  l.mtu = 1500;
  l.hwaddr = {0x02,
              0,
              0,
              0,
              static_cast<std::uint8_t>(l.index >> 8),
              static_cast<std::uint8_t>(l.index & 0xff)};
  l.flags = IFF_BROADCAST | IFF_MULTICAST;
  if (up) l.flags |= IFF_UP | IFF_RUNNING | IFF_LOWER_UP;
  l.operstate = up ? kOperUp : kOperDown;
  l.carrier = up;
  links_.push_back(l);
  for (const auto& [k, v] : DefaultSysctls()) {
    auto slash = k.find('/');
    sysctls_[SysctlPathFor(k.substr(0, slash), name, k.substr(slash + 1))] = v;
  }
  EmitLink(l, ChangeKind::kNew);
  return l.index;
}

void FakeNetlink::AddTestRoute(const RouteInfo& route) { routes_.push_back(route); }
void FakeNetlink::ClearRoutes() { routes_.clear(); }

void FakeNetlink::SetCarrier(int ifindex, bool carrier) {
  LinkInfo* l = FindLink(ifindex);
  if (l == nullptr) return;
  l->carrier = carrier;
  if (carrier && l->admin_up()) {
    l->flags |= IFF_LOWER_UP | IFF_RUNNING;
    l->operstate = kOperUp;
  } else {
    l->flags &= ~static_cast<std::uint32_t>(IFF_LOWER_UP | IFF_RUNNING);
    l->operstate = kOperDown;
  }
  EmitLink(*l, ChangeKind::kNew);
}

void FakeNetlink::SetKindSupported(const std::string& kind, bool supported) {
  if (supported) {
    unsupported_kinds_.erase(kind);
  } else {
    unsupported_kinds_.insert(kind);
  }
}

void FakeNetlink::FailNext(const std::string& operation, Error error) {
  failures_.insert_or_assign(operation, std::move(error));
}

Status FakeNetlink::TakeFailure(const std::string& op) {
  auto it = failures_.find(op);
  if (it == failures_.end()) return Ok();
  Error e = it->second;
  failures_.erase(it);
  return tl::unexpected(std::move(e));
}

LinkInfo* FakeNetlink::FindLink(int ifindex) {
  for (LinkInfo& l : links_) {
    if (l.index == ifindex) return &l;
  }
  return nullptr;
}

void FakeNetlink::Emit(const Event& e) {
  std::erase_if(queues_, [](const std::weak_ptr<Queue>& q) { return q.expired(); });
  for (auto& weak : queues_) {
    if (auto q = weak.lock()) q->events.push_back(e);
  }
}

void FakeNetlink::EmitLink(const LinkInfo& l, ChangeKind kind) { Emit(LinkEvent{kind, l}); }

AddressInfo FakeNetlink::Snapshot(const StoredAddress& a) const {
  AddressInfo info = a.info;
  const SteadyTime now = clock_.Now();
  auto remaining = [now](const std::optional<SteadyTime>& until) {
    if (!until) return kForever;
    if (*until <= now) return Seconds{0};
    return std::chrono::ceil<Seconds>(*until - now);
  };
  info.lifetimes.valid = remaining(a.valid_until);
  info.lifetimes.preferred = remaining(a.preferred_until);
  if (a.preferred_until && *a.preferred_until <= now) info.flags |= addr_flags::kDeprecated;
  return info;
}

void FakeNetlink::Expire() {
  const SteadyTime now = clock_.Now();
  std::vector<StoredAddress> keep;
  for (StoredAddress& a : addresses_) {
    if (a.valid_until && *a.valid_until <= now) {
      Emit(AddressEvent{ChangeKind::kDeleted, Snapshot(a)});
    } else {
      keep.push_back(std::move(a));
    }
  }
  addresses_ = std::move(keep);
}

Result<std::vector<LinkInfo>> FakeNetlink::ListLinks() {
  if (auto st = TakeFailure("ListLinks"); !st) return tl::unexpected(st.error());
  return links_;
}

Result<LinkInfo> FakeNetlink::GetLink(std::string_view name) {
  if (auto st = TakeFailure("GetLink"); !st) return tl::unexpected(st.error());
  for (const LinkInfo& l : links_) {
    if (l.name == name) return l;
  }
  return Fail(ErrorCode::kNotFound, "get link " + std::string(name) + ": no such interface");
}

Result<std::vector<AddressInfo>> FakeNetlink::ListAddresses(std::optional<net::Family> family) {
  if (auto st = TakeFailure("ListAddresses"); !st) return tl::unexpected(st.error());
  Expire();
  std::vector<AddressInfo> out;
  for (const StoredAddress& a : addresses_) {
    if (!family || a.info.family() == *family) out.push_back(Snapshot(a));
  }
  return out;
}

Result<std::vector<RouteInfo>> FakeNetlink::ListRoutes(net::Family family) {
  if (auto st = TakeFailure("ListRoutes"); !st) return tl::unexpected(st.error());
  std::vector<RouteInfo> out;
  for (const RouteInfo& r : routes_) {
    if (r.family == family) out.push_back(r);
  }
  return out;
}

Status FakeNetlink::AddAddress(const AddressSpec& spec) {
  if (auto st = TakeFailure("AddAddress"); !st) return st;
  if (auto st = ValidateAddressSpec(spec); !st) return st;
  Expire();
  const std::string context =
      "add address " + spec.address.ToString() + " on ifindex " + std::to_string(spec.ifindex);
  if (FindLink(spec.ifindex) == nullptr) return FailErrno(ENODEV, context);
  const SteadyTime now = clock_.Now();
  auto until = [now](Seconds s) -> std::optional<SteadyTime> {
    if (s == kForever) return std::nullopt;
    return now + s;
  };
  std::uint32_t flags = 0;
  if (spec.dad == Dad::kSkip) flags |= addr_flags::kNoDad;
  if (spec.prefix_route == PrefixRoute::kSuppress) flags |= addr_flags::kNoPrefixRoute;
  if (spec.lifetimes.valid == kForever) flags |= addr_flags::kPermanent;

  auto existing = std::find_if(addresses_.begin(), addresses_.end(), [&](const StoredAddress& a) {
    return SameAddress(a.info, spec.ifindex, spec.address);
  });
  if (existing != addresses_.end()) {
    if (spec.mode == AddMode::kCreateExclusive) return FailErrno(EEXIST, context);
    existing->valid_until = until(spec.lifetimes.valid);
    existing->preferred_until = until(spec.lifetimes.preferred);
    existing->info.lifetimes = spec.lifetimes;
    const std::uint32_t keep =
        existing->info.flags &
        (addr_flags::kSecondary | addr_flags::kTentative | addr_flags::kDadFailed);
    existing->info.flags = flags | keep;
    if (supports_proto_) existing->info.proto = spec.proto;
    ++mutations_;
    Emit(AddressEvent{ChangeKind::kNew, Snapshot(*existing)});
    return Ok();
  }

  StoredAddress a;
  a.info.ifindex = spec.ifindex;
  a.info.prefix = spec.address;
  a.info.flags = flags;
  a.info.scope = 0;
  a.info.lifetimes = spec.lifetimes;
  if (supports_proto_) a.info.proto = spec.proto;
  a.valid_until = until(spec.lifetimes.valid);
  a.preferred_until = until(spec.lifetimes.preferred);
  if (spec.address.family() == net::Family::kV4) {
    a.info.label = FindLink(spec.ifindex)->name;
    for (const StoredAddress& other : addresses_) {
      const AddressInfo& o = other.info;
      if (o.ifindex == spec.ifindex && o.family() == net::Family::kV4 &&
          !o.has_flag(addr_flags::kSecondary) && o.prefix.length() == spec.address.length() &&
          o.prefix.Masked().Contains(spec.address.address())) {
        a.info.flags |= addr_flags::kSecondary;
        break;
      }
    }
  } else if (spec.dad == Dad::kPerform && dad_failures_.erase(spec.address.address()) > 0) {
    a.info.flags |= addr_flags::kTentative | addr_flags::kDadFailed;
  }
  addresses_.push_back(a);
  ++mutations_;
  Emit(AddressEvent{ChangeKind::kNew, Snapshot(a)});
  return Ok();
}

Status FakeNetlink::RemoveAddress(int ifindex, const net::Prefix& address) {
  if (auto st = TakeFailure("RemoveAddress"); !st) return st;
  Expire();
  const std::string context =
      "remove address " + address.ToString() + " from ifindex " + std::to_string(ifindex);
  auto it = std::find_if(addresses_.begin(), addresses_.end(), [&](const StoredAddress& a) {
    return a.info.ifindex == ifindex && a.info.prefix == address;
  });
  if (it == addresses_.end()) return FailErrno(EADDRNOTAVAIL, context);
  StoredAddress removed = *it;
  addresses_.erase(it);
  ++mutations_;
  Emit(AddressEvent{ChangeKind::kDeleted, Snapshot(removed)});

  const AddressInfo& r = removed.info;
  if (r.family() != net::Family::kV4 || r.has_flag(addr_flags::kSecondary)) return Ok();
  const LinkInfo* link = FindLink(ifindex);
  const bool promote = SysctlIs(PromoteSecondaries("all"), "1") ||
                       (link != nullptr && SysctlIs(PromoteSecondaries(link->name), "1"));
  bool promoted = false;
  std::vector<StoredAddress> keep;
  for (StoredAddress& a : addresses_) {
    AddressInfo& o = a.info;
    bool same_subnet = o.ifindex == ifindex && o.family() == net::Family::kV4 &&
                       o.has_flag(addr_flags::kSecondary) &&
                       o.prefix.length() == r.prefix.length() &&
                       r.prefix.Masked().Contains(o.prefix.address());
    if (!same_subnet) {
      keep.push_back(std::move(a));
    } else if (promote && !promoted) {
      o.flags &= ~addr_flags::kSecondary;
      promoted = true;
      Emit(AddressEvent{ChangeKind::kNew, Snapshot(a)});
      keep.push_back(std::move(a));
    } else if (promote) {
      keep.push_back(std::move(a));
    } else {
      Emit(AddressEvent{ChangeKind::kDeleted, Snapshot(a)});
    }
  }
  addresses_ = std::move(keep);
  return Ok();
}

Result<LinkInfo> FakeNetlink::CreateLink(std::string_view name, std::string_view kind) {
  if (auto st = TakeFailure("CreateLink"); !st) return tl::unexpected(st.error());
  if (auto msg = BuildNewLink(name, kind); !msg) return tl::unexpected(msg.error());
  const std::string context = "create " + std::string(kind) + " link " + std::string(name);
  if (unsupported_kinds_.count(std::string(kind)) > 0) {
    return tl::unexpected(Error::FromErrno(EOPNOTSUPP, context + " (Unknown device type)"));
  }
  for (const LinkInfo& l : links_) {
    if (l.name == name) return FailErrno(EEXIST, context);
  }
  ++mutations_;
  int index = AddTestLink(std::string(name), std::string(kind), false);
  return *FindLink(index);
}

Status FakeNetlink::SetLinkUp(int ifindex, bool up) {
  if (auto st = TakeFailure("SetLinkUp"); !st) return st;
  LinkInfo* l = FindLink(ifindex);
  if (l == nullptr) return FailErrno(ENODEV, "set link ifindex " + std::to_string(ifindex));
  ++mutations_;
  if (up) {
    l->flags |= IFF_UP;
    if (l->carrier.value_or(true) || !l->kind.empty()) {
      // Software links (dummy, bridge without ports) report carrier as soon as they are up.
      l->carrier = true;
      l->flags |= IFF_LOWER_UP | IFF_RUNNING;
      l->operstate = l->kind.empty() ? kOperUp : kOperUnknown;
    }
  } else {
    l->flags &= ~static_cast<std::uint32_t>(IFF_UP | IFF_LOWER_UP | IFF_RUNNING);
    l->operstate = kOperDown;
  }
  EmitLink(*l, ChangeKind::kNew);
  return Ok();
}

Status FakeNetlink::DeleteLink(int ifindex) {
  if (auto st = TakeFailure("DeleteLink"); !st) return st;
  auto it = std::find_if(links_.begin(), links_.end(),
                         [&](const LinkInfo& l) { return l.index == ifindex; });
  if (it == links_.end())
    return FailErrno(ENODEV, "delete link ifindex " + std::to_string(ifindex));
  ++mutations_;
  LinkInfo gone = *it;
  links_.erase(it);
  std::erase_if(addresses_, [&](const StoredAddress& a) { return a.info.ifindex == ifindex; });
  std::erase_if(routes_, [&](const RouteInfo& r) {
    return std::any_of(r.nexthops.begin(), r.nexthops.end(),
                       [&](const Nexthop& nh) { return nh.ifindex == ifindex; });
  });
  std::erase_if(sysctls_, [&](const auto& kv) {
    return kv.first.find("/conf/" + gone.name + "/") != std::string::npos;
  });
  EmitLink(gone, ChangeKind::kDeleted);
  return Ok();
}

bool FakeNetlink::SysctlIs(const SysctlKey& key, const std::string& value) const {
  auto path = SysctlRelativePath(key);
  if (!path) return false;
  auto it = sysctls_.find(*path);
  return it != sysctls_.end() && it->second == value;
}

Result<std::string> FakeNetlink::ReadSysctl(const SysctlKey& key) {
  if (auto st = TakeFailure("ReadSysctl"); !st) return tl::unexpected(st.error());
  auto path = SysctlRelativePath(key);
  if (!path) return tl::unexpected(path.error());
  auto it = sysctls_.find(*path);
  if (it == sysctls_.end()) return FailErrno(ENOENT, "read sysctl " + *path);
  return it->second;
}

Status FakeNetlink::WriteSysctl(const SysctlKey& key, std::string_view value) {
  ++sysctl_write_attempts_;
  if (auto st = TakeFailure("WriteSysctl"); !st) return st;
  auto path = SysctlRelativePath(key);
  if (!path) return tl::unexpected(path.error());
  auto it = sysctls_.find(*path);
  if (it == sysctls_.end()) return FailErrno(ENOENT, "write sysctl " + *path);
  if (sysctls_read_only_) return FailErrno(EROFS, "write sysctl /proc/sys/" + *path);
  it->second = std::string(value);
  ++mutations_;
  return Ok();
}

Result<std::unique_ptr<EventSource>> FakeNetlink::Subscribe() {
  if (auto st = TakeFailure("Subscribe"); !st) return tl::unexpected(st.error());
  auto q = std::make_shared<Queue>();
  queues_.push_back(q);
  return std::unique_ptr<EventSource>(new Source(std::move(q)));
}

}  // namespace pylon::netlink
