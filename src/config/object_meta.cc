#include "config/object_meta.h"

#include "config/json_util.h"

namespace pylon::config {
namespace {

using detail::Json;

bool Digits(std::string_view s, std::size_t pos, std::size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

}  // namespace

std::string_view KindName(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kServiceGroup:
      return "ServiceGroup";
    case ObjectKind::kLoadBalancerClass:
      return "LoadBalancerClass";
    case ObjectKind::kLBNodeAgent:
      return "LBNodeAgent";
    case ObjectKind::kBGPPeer:
      return "BGPPeer";
    case ObjectKind::kBFDProfile:
      return "BFDProfile";
    case ObjectKind::kBGPAdvertisement:
      return "BGPAdvertisement";
  }
  return "?";
}

std::string_view KindApiVersion(ObjectKind kind) {
  return KindIsNamespaced(kind) ? "purelb.io/v1" : "lace-cni.io/v1alpha1";
}

bool KindAcceptsApiVersion(ObjectKind kind, std::string_view api_version) {
  if (!KindIsNamespaced(kind)) return api_version == KindApiVersion(kind);
  return api_version == "purelb.io/v1" || api_version == "purelb.io/v2";
}

bool KindIsNamespaced(ObjectKind kind) {
  return kind == ObjectKind::kServiceGroup || kind == ObjectKind::kLBNodeAgent;
}

std::string ObjectKey::ToString() const {
  std::string out(KindName(kind));
  out += ' ';
  if (name.empty()) {
    out += "(unnamed)";
  } else if (namespace_.empty()) {
    out += name;
  } else {
    out += namespace_ + "/" + name;
  }
  return out;
}

Result<Timestamp> ParseTimestamp(std::string_view s) {
  auto bad = [&] {
    return Fail(ErrorCode::kInvalidArgument,
                "\"" + std::string(s.substr(0, 64)) + "\" is not an RFC 3339 time");
  };
  int year, month, day, hour, minute, second;
  if (s.size() < 20 || !Digits(s, 0, 4, &year) || s[4] != '-' || !Digits(s, 5, 2, &month) ||
      s[7] != '-' || !Digits(s, 8, 2, &day) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, &hour) || s[13] != ':' || !Digits(s, 14, 2, &minute) || s[16] != ':' ||
      !Digits(s, 17, 2, &second)) {
    return bad();
  }
  if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month) || hour > 23 ||
      minute > 59 || second > 60) {
    return bad();
  }
  std::size_t pos = 19;
  std::int32_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    std::size_t digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 9) nanos = nanos * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return bad();
    for (std::size_t i = digits; i < 9; ++i) nanos *= 10;
  }
  std::int64_t offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om) || oh > 23 || om > 59) {
      return bad();
    }
    offset = (oh * 60 + om) * 60;
    if (s[pos] == '-') offset = -offset;
    pos += 6;
  } else {
    return bad();
  }
  if (pos != s.size()) return bad();
  std::int64_t days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  Timestamp t;
  t.seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset;
  t.nanos = nanos;
  return t;
}

Error InObject(const ObjectKey& key, const Error& e) { return e.Wrap(key.ToString()); }

Result<ObjectMeta> ParseObjectMeta(const nlohmann::json& object, ObjectKind kind) {
  ObjectMeta meta;
  meta.key.kind = kind;
  if (!object.is_object()) {
    return Fail(InObject(
        meta.key, Error(ErrorCode::kInvalidArgument,
                        "must be a JSON object, got " + std::string(detail::TypeName(object)))));
  }
  // Read the name first so that every later error names the object.
  const Json* md = detail::Find(object, "metadata");
  if (md != nullptr && md->is_object()) {
    const Json* n = detail::Find(*md, "name");
    if (n != nullptr && n->is_string()) meta.key.name = n->get_ref<const std::string&>();
    const Json* ns = detail::Find(*md, "namespace");
    if (KindIsNamespaced(kind) && ns != nullptr && ns->is_string()) {
      meta.key.namespace_ = ns->get_ref<const std::string&>();
    }
  }
  auto fail = [&](const Error& e) { return Fail(InObject(meta.key, e)); };

  auto k = detail::OptionalString(object, "kind", "kind");
  if (!k) return fail(k.error());
  if (k->has_value() && **k != KindName(kind)) {
    return fail(detail::FieldError("kind", "\"" + **k + "\" is not " + std::string(KindName(kind)))
                    .value());
  }
  auto av = detail::OptionalString(object, "apiVersion", "apiVersion");
  if (!av) return fail(av.error());
  if (av->has_value() && !KindAcceptsApiVersion(kind, **av)) {
    const std::string want = kind == ObjectKind::kLoadBalancerClass
                                 ? std::string(KindApiVersion(kind))
                                 : "purelb.io/v1 or purelb.io/v2";
    return fail(
        detail::FieldError("apiVersion", "\"" + **av + "\" is not supported (want " + want + ")")
            .value());
  }

  auto m = detail::RequiredObject(object, "metadata", "metadata");
  if (!m) return fail(m.error());
  const Json& mdo = **m;
  auto name = detail::RequiredString(mdo, "name", "metadata.name");
  if (!name) return fail(name.error());
  if (KindIsNamespaced(kind)) {
    auto ns = detail::RequiredString(mdo, "namespace", "metadata.namespace");
    if (!ns) return fail(ns.error());
  }
  auto uid = detail::OptionalString(mdo, "uid", "metadata.uid");
  if (!uid) return fail(uid.error());
  meta.uid = uid->value_or("");
  auto rv = detail::OptionalString(mdo, "resourceVersion", "metadata.resourceVersion");
  if (!rv) return fail(rv.error());
  meta.resource_version = rv->value_or("");
  auto gen = detail::OptionalNonNegativeInt(mdo, "generation", "metadata.generation");
  if (!gen) return fail(gen.error());
  meta.generation = gen->value_or(0);
  auto ct = detail::OptionalString(mdo, "creationTimestamp", "metadata.creationTimestamp");
  if (!ct) return fail(ct.error());
  if (ct->has_value()) {
    auto t = ParseTimestamp(**ct);
    if (!t) return fail(t.error().Wrap("metadata.creationTimestamp"));
    meta.created = *t;
  }
  return meta;
}

}  // namespace pylon::config
