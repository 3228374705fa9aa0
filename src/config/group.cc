#include "config/group.h"

#include <algorithm>

#include "common/text.h"
#include "config/json_util.h"

namespace pylon::config {

using net::AddressRange;
using net::Family;
using net::IpAddress;
using net::Prefix;
using net::Uint128;

namespace {

Uint128 SaturatingAdd(Uint128 a, Uint128 b) {
  Uint128 s = a + b;
  return s < a ? ~Uint128{0} : s;
}

std::string FamilyWord(Family f) { return std::string(net::FamilyName(f)); }

// The subnet's addresses that are never handed out: its network address (IPv4 shorter than /31;
// IPv6 shorter than /127, the subnet-router anycast) and its IPv4 broadcast (shorter than /31).
std::vector<IpAddress> Excluded(const Prefix& subnet) {
  std::vector<IpAddress> out;
  if (subnet.family() == Family::kV4) {
    if (subnet.length() < 31) {
      out.push_back(subnet.Network());
      out.push_back(subnet.Broadcast());
    }
  } else if (subnet.length() < 127) {
    out.push_back(subnet.Network());
  }
  return out;
}

std::vector<AddressRange> Subtract(const AddressRange& span, const std::vector<IpAddress>& holes) {
  std::vector<AddressRange> out;
  Uint128 lo = span.first().value();
  const Uint128 hi = span.last().value();
  const Family f = span.family();
  bool done = false;
  std::vector<IpAddress> sorted = holes;
  std::sort(sorted.begin(), sorted.end());
  for (const IpAddress& h : sorted) {
    if (done || h.value() < lo || h.value() > hi) continue;
    if (h.value() > lo) {
      out.push_back(
          *AddressRange::Make(IpAddress::FromValue(f, lo), IpAddress::FromValue(f, h.value() - 1)));
    }
    if (h.value() == hi) {
      done = true;
    } else {
      lo = h.value() + 1;
    }
  }
  if (!done) {
    out.push_back(*AddressRange::Make(IpAddress::FromValue(f, lo), IpAddress::FromValue(f, hi)));
  }
  return out;
}

// Parses a pool text: CIDR, "a-b" or a single address. Sets *host_bits when a CIDR has host bits
// (its span then starts at the written address).
Result<AddressRange> ParsePoolText(std::string_view text, bool* host_bits,
                                   std::optional<Prefix>* as_prefix) {
  *host_bits = false;
  const std::string quoted = "\"" + std::string(text.substr(0, 100)) + "\"";
  if (text.empty()) return Fail(ErrorCode::kInvalidArgument, "required");
  if (text.find('/') != std::string_view::npos) {
    auto p = Prefix::Parse(text);
    if (!p) {
      return Fail(ErrorCode::kInvalidArgument,
                  quoted + " is not a valid CIDR: " + p.error().message());
    }
    *as_prefix = *p;
    if (p->HasHostBits()) {
      *host_bits = true;
      return *AddressRange::Make(p->address(), p->Broadcast());
    }
    return AddressRange::FromPrefix(*p);
  }
  auto dash = text.find('-');
  if (dash == std::string_view::npos) {
    auto a = IpAddress::Parse(text);
    if (!a) {
      return Fail(ErrorCode::kInvalidArgument,
                  quoted + " is not an IP address, an a-b range or a CIDR");
    }
    return *AddressRange::Make(*a, *a);
  }
  auto first = IpAddress::Parse(Trim(text.substr(0, dash)));
  auto last = IpAddress::Parse(Trim(text.substr(dash + 1)));
  if (!first || !last) {
    return Fail(ErrorCode::kInvalidArgument,
                quoted + " is not a valid range: " +
                    (!first ? first.error().message() : last.error().message()));
  }
  if (first->family() != last->family()) {
    return Fail(ErrorCode::kInvalidArgument, std::string(text) + " mixes IPv4 and IPv6");
  }
  if (*last < *first) {
    return Fail(ErrorCode::kInvalidArgument, std::string(text) + ": start " + first->ToString() +
                                                 " is after end " + last->ToString());
  }
  return *AddressRange::Make(*first, *last);
}

}  // namespace

int PoolEntry::AggregationLength() const {
  if (aggregation) return *aggregation;
  if (subnet) return subnet->length();
  return net::FamilyBits(family());
}

Uint128 PoolEntry::Size() const {
  Uint128 n = 0;
  for (const auto& r : ranges) n = SaturatingAdd(n, r.Size());
  return n;
}

std::vector<AddressRange> Group::Ranges(Family f) const {
  std::vector<AddressRange> out;
  for (const auto& e : entries(f)) out.insert(out.end(), e.ranges.begin(), e.ranges.end());
  return out;
}

Uint128 Group::Size(Family f) const {
  Uint128 n = 0;
  for (const auto& e : entries(f)) n = SaturatingAdd(n, e.Size());
  return n;
}

bool Group::SameContent(const Group& other) const {
  return mode == other.mode && v4 == other.v4 && v6 == other.v6 && version == other.version &&
         skip_ipv6_dad == other.skip_ipv6_dad && multi_pool == other.multi_pool &&
         balance_pools == other.balance_pools && namespaces == other.namespaces &&
         enforce_namespaces == other.enforce_namespaces &&
         namespace_default == other.namespace_default;
}

bool Group::ListsNamespace(std::string_view ns) const {
  return std::binary_search(namespaces.begin(), namespaces.end(), ns);
}

std::string_view AnnounceModeName(AnnounceMode mode) {
  switch (mode) {
    case AnnounceMode::kLocalOrVirtual:
      return "local-or-virtual";
    case AnnounceMode::kL2:
      return "l2";
    case AnnounceMode::kL3:
      return "l3";
    case AnnounceMode::kLocal:
      return "local";
    case AnnounceMode::kRemote:
      return "remote";
  }
  return "?";
}

namespace detail {

Result<std::optional<int>> ParseAggregation(std::string_view text, Family family) {
  if (text.empty() || text == "default") return std::optional<int>();
  const int max = net::FamilyBits(family);
  auto bad = [&] {
    return Fail(ErrorCode::kInvalidArgument,
                "\"" + std::string(text.substr(0, 100)) + "\" is not a valid aggregation for " +
                    FamilyWord(family) + " (want default or /8 to /" + std::to_string(max) + ")");
  };
  if (text.size() < 2 || text.size() > 4 || text[0] != '/') return bad();
  std::string_view digits = text.substr(1);
  if (digits.size() > 1 && digits[0] == '0') return bad();
  auto n = ParseInteger<int>(digits, 8, max);
  if (!n) return bad();
  return std::optional<int>(*n);
}

Result<PoolEntry> BuildPoolEntry(const PoolSpec& spec, std::vector<std::string>* warnings) {
  PoolEntry e;
  std::optional<Prefix> pool_prefix;
  bool host_bits = false;

  if (spec.is_start_end) {
    e.path = spec.entry_path;
    auto first = IpAddress::Parse(Trim(spec.start));
    if (!first) return FieldError(Child(spec.entry_path, "start"), first.error().message());
    auto last = IpAddress::Parse(Trim(spec.end));
    if (!last) return FieldError(Child(spec.entry_path, "end"), last.error().message());
    e.written = first->ToString() + "-" + last->ToString();
    if (first->family() != last->family()) {
      return FieldError(e.path, "start " + first->ToString() + " and end " + last->ToString() +
                                    " mix IPv4 and IPv6");
    }
    if (*last < *first) {
      return FieldError(e.path, "start " + first->ToString() + " is after end " + last->ToString());
    }
    e.span = *AddressRange::Make(*first, *last);
  } else {
    e.path = spec.pool_path;
    e.written = std::string(Trim(spec.pool));
    auto span = ParsePoolText(e.written, &host_bits, &pool_prefix);
    if (!span) return FieldError(e.path, span.error().message());
    e.span = *span;
  }
  const Family family = e.span.family();
  if (spec.list_family && *spec.list_family != family) {
    return FieldError(e.path, e.written + " is " + FamilyWord(family) + " in an " +
                                  FamilyWord(*spec.list_family) + " list");
  }
  if (host_bits) {
    warnings->push_back(e.path + ": " + spec.noun + " " + e.written + " has host bits set; using " +
                        e.span.ToString());
  }

  if (spec.pool_is_subnet) {
    if (!pool_prefix) return FieldError(e.path, "\"" + e.written + "\" is not a CIDR");
    e.subnet = pool_prefix->Masked();
  } else if (spec.subnet) {
    auto sn = Prefix::Parse(*spec.subnet);
    if (!sn) {
      return FieldError(spec.subnet_path, "\"" + spec.subnet->substr(0, 100) +
                                              "\" is not a valid CIDR: " + sn.error().message());
    }
    if (sn->family() != family) {
      return FieldError(spec.subnet_path, "subnet " + sn->ToString() + " is " +
                                              FamilyWord(sn->family()) + " but pool " + e.written +
                                              " is " + FamilyWord(family));
    }
    if (sn->HasHostBits()) {
      warnings->push_back(spec.subnet_path + ": subnet " + sn->ToString() +
                          " has host bits set; using " + sn->Masked().ToString());
    }
    e.subnet = sn->Masked();
    if (!AddressRange::FromPrefix(*e.subnet).Contains(e.span)) {
      return FieldError(e.path, e.written + " is outside subnet " + e.subnet->ToString());
    }
  }

  if (spec.aggregation) {
    auto ag = ParseAggregation(*spec.aggregation, family);
    if (!ag) return FieldError(spec.aggregation_path, ag.error().message());
    e.aggregation = *ag;
  }

  e.ranges = e.subnet ? Subtract(e.span, Excluded(*e.subnet)) : std::vector{e.span};
  if (e.ranges.empty()) {
    return FieldError(e.path, e.written + " has no allocatable address (the network address" +
                                  std::string(family == Family::kV4 ? " and broadcast" : "") +
                                  " of subnet " + e.subnet->ToString() + " are never handed out)");
  }
  return e;
}

Status CheckNoInternalOverlap(const Group& group) {
  struct Item {
    AddressRange range;
    std::size_t order;  // position in listing order across both families
    const PoolEntry* entry;
  };
  std::vector<Item> items;
  std::size_t order = 0;
  for (const auto* list : {&group.v4, &group.v6}) {
    for (const auto& e : *list) {
      for (const auto& r : e.ranges) items.push_back({r, order, &e});
      ++order;
    }
  }
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.range.first() < b.range.first(); });
  // Sweep keeping the item that reaches furthest: any later item starting before its end
  // overlaps it.
  const Item* reach = nullptr;
  for (const auto& it : items) {
    if (reach != nullptr && reach->range.family() == it.range.family() &&
        it.range.first() <= reach->range.last()) {
      const Item& later = reach->order > it.order ? *reach : it;
      const Item& earlier = reach->order > it.order ? it : *reach;
      return FieldError(later.entry->path, later.entry->written + " overlaps " +
                                               earlier.entry->path + " (" + earlier.entry->written +
                                               ")");
    }
    if (reach == nullptr || reach->range.family() != it.range.family() ||
        it.range.last() > reach->range.last()) {
      reach = &it;
    }
  }
  return Ok();
}

}  // namespace detail
}  // namespace pylon::config
