// LBNodeAgent (purelb.io/v1 and v2): ParseNodeAgent, InterfacePattern (parse.h).
#include "config/parse.h"

#include <algorithm>
#include <cctype>

#include "common/duration.h"
#include "config/json_util.h"
#include "config/parse_util.h"

namespace pylon::config {

using namespace detail;  // this module's internal helpers (parse_util.h)
using net::Family;

constexpr std::size_t kMaxPatternLength = 256;

namespace {

Result<InterfacePattern> ReadPattern(const Json& parent, std::string_view key,
                                     const std::string& path) {
  auto text = detail::RequiredString(parent, key, path);
  if (!text) return Fail(text.error());
  auto p = InterfacePattern::Compile(*text);
  if (!p) return FieldError(path, p.error().message());
  return p;
}

Status ReadInterfaceName(const Json& l, std::string_view key, const std::string& path,
                         std::string* out) {
  auto ext = detail::OptionalString(l, key, path);
  if (!ext) return Fail(ext.error());
  if (ext->has_value() && !(*ext)->empty()) {
    if (!IsValidInterfaceName(**ext)) {
      return FieldError(path, "\"" + (*ext)->substr(0, 100) +
                                  "\" is not a valid interface name (1-15 characters, no '/', ':' "
                                  "or whitespace, not \".\" or \"..\")");
    }
    *out = **ext;
  }
  return Ok();
}

Status ReadLocalInterface(const Json& l, std::string_view key, const std::string& path,
                          NodeAgentConfig* c) {
  auto li = detail::OptionalString(l, key, path);
  if (!li) return Fail(li.error());
  if (li->has_value() && !(*li)->empty() && **li != "default") {
    auto p = ReadPattern(l, key, path);
    if (!p) return Fail(p.error());
    c->local_interface = std::move(*p);
  }
  return Ok();
}

// `^name$` with every regex metacharacter of `name` escaped: an exact interface name.
std::string ExactNamePattern(std::string_view name) {
  std::string out = "^";
  for (char ch : name) {
    if (std::string_view(R"(\^$.|?*+()[]{}-)").find(ch) != std::string_view::npos) out += '\\';
    out += ch;
  }
  return out + "$";
}

Status ReadInterfaces(const Json& l, bool exact_names, NodeAgentConfig* c) {
  return detail::ForEachString(
      l, "interfaces", "spec.local.interfaces",
      [&](const std::string& text, const std::string& path) -> Status {
        if (text.empty()) return FieldError(path, "required");
        if (exact_names && !IsValidInterfaceName(text)) {
          return FieldError(path, "\"" + text.substr(0, 100) + "\" is not a valid interface name");
        }
        auto p = InterfacePattern::Compile(exact_names ? ExactNamePattern(text) : text);
        if (!p) return FieldError(path, p.error().message());
        c->interfaces.push_back(std::move(*p));
        return Ok();
      });
}

// A garpConfig duration: absent -> `fallback`; unparseable or negative -> `fallback` with a warning
// (PureLB logs and uses its default).
Result<Duration> ReadGarpDuration(const Json& g, std::string_view key, Duration fallback,
                                  std::vector<std::string>& warnings) {
  const std::string path = Child("spec.local.garpConfig", key);
  auto text = detail::OptionalString(g, key, path);
  if (!text) return Fail(text.error());
  if (!text->has_value()) return fallback;
  auto d = ParseGoDuration(**text);
  if (d && *d >= Duration(0)) return *d;
  warnings.push_back(
      path + ": \"" + (*text)->substr(0, 40) + "\" is not a duration; using the default " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(fallback).count()) +
      "ms");
  return fallback;
}

Result<GarpTimings> ReadGarpTimings(const Json& g, std::vector<std::string>& warnings) {
  GarpTimings t;
  auto delay = ReadGarpDuration(g, "initialDelay", t.initial_delay, warnings);
  if (!delay) return Fail(delay.error());
  t.initial_delay = *delay;
  auto interval = ReadGarpDuration(g, "interval", t.interval, warnings);
  if (!interval) return Fail(interval.error());
  t.interval = *interval;
  const std::string count_path = "spec.local.garpConfig.count";
  if (const Json* count = Find(g, {"count"}); count != nullptr) {
    if (!count->is_number_integer()) {
      return FieldError(count_path,
                        "must be an integer, got " + std::string(detail::TypeName(*count)));
    }
    const std::int64_t n = count->get<std::int64_t>();
    t.count = static_cast<int>(std::clamp<std::int64_t>(n, 1, 10));
    if (t.count != n) {
      warnings.push_back(count_path + ": " + std::to_string(n) + " is outside 1..10; using " +
                         std::to_string(t.count));
    }
  }
  auto verify =
      detail::OptionalBool(g, "verifyBeforeSend", "spec.local.garpConfig.verifyBeforeSend");
  if (!verify) return Fail(verify.error());
  t.verify_before_send = verify->value_or(true);
  return t;
}

Result<InterfaceAddressConfig> ReadInterfaceAddressConfig(const Json& o, const std::string& path,
                                                          std::vector<std::string>& warnings) {
  // kForever (0xffffffff) is the kernel's "permanent"; 0 says that here.
  constexpr std::int64_t kMaxSeconds = 4294967294;
  InterfaceAddressConfig out;
  auto seconds = [&](const char* key) -> Result<std::optional<std::uint32_t>> {
    const std::string p = Child(path, key);
    auto v = detail::OptionalNonNegativeInt(o, key, p);
    if (!v) return Fail(v.error());
    if (!v->has_value()) return std::optional<std::uint32_t>();
    if (**v > kMaxSeconds) {
      return FieldError(p, "at most " + std::to_string(kMaxSeconds) + " seconds (0: permanent)");
    }
    return std::optional<std::uint32_t>(static_cast<std::uint32_t>(**v));
  };
  auto valid = seconds("validLifetime");
  if (!valid) return Fail(valid.error());
  out.valid_lifetime = *valid;
  if (out.valid_lifetime && *out.valid_lifetime > 0 && *out.valid_lifetime < 60) {
    warnings.push_back(Child(path, "validLifetime") + ": " + std::to_string(*out.valid_lifetime) +
                       "s raised to 60s (the minimum)");
    out.valid_lifetime = 60;
  }
  auto preferred = seconds("preferredLifetime");
  if (!preferred) return Fail(preferred.error());
  out.preferred_lifetime = *preferred;
  auto npr = detail::OptionalBool(o, "noPrefixRoute", Child(path, "noPrefixRoute"));
  if (!npr) return Fail(npr.error());
  out.no_prefix_route = *npr;
  return out;
}

Status ParseNodeAgentV1Local(const Json& l, NodeAgentConfig& c) {
  if (auto s = ReadLocalInterface(l, "localint", "spec.local.localint", &c); !s) return s;
  if (auto s = ReadInterfaceName(l, "extlbint", "spec.local.extlbint", &c.external_interface); !s) {
    return s;
  }
  auto garp = detail::OptionalBool(l, "sendgarp", "spec.local.sendgarp");
  if (!garp) return Fail(garp.error());
  c.send_garp = garp->value_or(false);
  return ReadInterfaces(l, /*exact_names=*/false, &c);
}

Status ParseNodeAgentV2Local(const Json& l, NodeAgentConfig& c) {
  const std::pair<const char*, const char*> renamed[] = {
      {"localint", "localInterface"}, {"extlbint", "dummyInterface"}, {"sendgarp", "garpConfig"}};
  for (const auto& [old_name, new_name] : renamed) {
    if (Find(l, {old_name}) != nullptr) {
      return FieldError(Child("spec.local", old_name),
                        std::string("is a purelb.io/v1 field; purelb.io/v2 calls it ") + new_name);
    }
  }
  if (auto s = ReadLocalInterface(l, "localInterface", "spec.local.localInterface", &c); !s) {
    return s;
  }
  if (auto s = ReadInterfaceName(l, "dummyInterface", "spec.local.dummyInterface",
                                 &c.external_interface);
      !s) {
    return s;
  }
  if (auto s = ReadInterfaces(l, /*exact_names=*/true, &c); !s) return s;
  auto garp = detail::OptionalObject(l, "garpConfig", "spec.local.garpConfig");
  if (!garp) return Fail(garp.error());
  if (*garp != nullptr) {
    auto enabled = detail::OptionalBool(**garp, "enabled", "spec.local.garpConfig.enabled");
    if (!enabled) return Fail(enabled.error());
    c.send_garp = enabled->value_or(true);
    auto timings = ReadGarpTimings(**garp, c.warnings);
    if (!timings) return Fail(timings.error());
    if (c.send_garp) c.garp = *timings;
  }
  auto ac = detail::OptionalObject(l, "addressConfig", "spec.local.addressConfig");
  if (!ac) return Fail(ac.error());
  if (*ac != nullptr) {
    AddressConfig config;
    for (auto [key, out] :
         {std::pair{"localInterface", &config.local}, std::pair{"dummyInterface", &config.dummy}}) {
      const std::string path = Child("spec.local.addressConfig", key);
      auto one = detail::OptionalObject(**ac, key, path);
      if (!one) return Fail(one.error());
      if (*one == nullptr) continue;
      auto read = ReadInterfaceAddressConfig(**one, path, c.warnings);
      if (!read) return Fail(read.error());
      *out = *read;
    }
    c.address_config = config;
  }
  return Ok();
}

Status ParseNodeAgentSpec(const Json& object, NodeAgentConfig& c) {
  auto read = detail::ReadVersionedSpec(object, detail::SpecPresence::kOptional);
  if (!read) return Fail(read.error());
  c.version = read->version;
  const Json* spec = read->spec;
  if (spec == nullptr) return Ok();
  const bool v2 = c.version == PurelbVersion::kV2;
  if (v2) {
    auto sel = detail::OptionalObject(*spec, "nodeSelector", "spec.nodeSelector");
    if (!sel) return Fail(sel.error());
    if (*sel != nullptr && !(*sel)->empty()) c.node_selector = **sel;
  }
  auto local = detail::OptionalObject(*spec, "local", "spec.local");
  if (!local) return Fail(local.error());
  if (*local == nullptr) return Ok();
  c.has_local = true;
  return v2 ? ParseNodeAgentV2Local(**local, c) : ParseNodeAgentV1Local(**local, c);
}

}  // namespace

Result<NodeAgentConfig> ParseNodeAgent(const Json& object) {
  return detail::ParseKind<NodeAgentConfig>(object, ObjectKind::kLBNodeAgent, ParseNodeAgentSpec);
}

Result<InterfacePattern> InterfacePattern::Compile(std::string_view text) {
  if (text.empty()) return Fail(ErrorCode::kInvalidArgument, "empty pattern");
  if (text.size() > kMaxPatternLength) {
    return Fail(ErrorCode::kInvalidArgument,
                "pattern is longer than " + std::to_string(kMaxPatternLength) + " characters");
  }
  InterfacePattern p;
  p.text_ = std::string(text);
  try {
    p.regex_ = std::make_shared<const std::regex>(p.text_, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Fail(ErrorCode::kInvalidArgument,
                "\"" + p.text_ + "\" is not a valid regular expression: " + e.what());
  }
  return p;
}

bool InterfacePattern::Matches(std::string_view ifname) const {
  if (!regex_) return false;
  try {
    return std::regex_search(ifname.begin(), ifname.end(), *regex_);
  } catch (const std::regex_error&) {
    return false;  // complexity limits: treat as no match
  }
}

bool IsValidInterfaceName(std::string_view name) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
  for (char c : name) {
    if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) != 0 || c == '\0') {
      return false;
    }
  }
  return true;
}

}  // namespace pylon::config
