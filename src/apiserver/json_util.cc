#include "apiserver/json_util.h"

#include <cctype>
#include <cstdio>
#include <ctime>

namespace pylon::apiserver {

std::optional<Json> ParseJson(std::string_view text, std::string* error) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

const Json* Find(const Json& j, std::initializer_list<std::string_view> path) {
  const Json* cur = &j;
  for (auto key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string GetString(const Json& j, std::initializer_list<std::string_view> path) {
  const Json* v = Find(j, path);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

bool BoolOr(const Json& j, std::string_view key, bool def) {
  const Json* v = Find(j, {key});
  return v && v->is_boolean() ? v->get<bool>() : def;
}
long long IntOr(const Json& j, std::string_view key, long long def) {
  const Json* v = Find(j, {key});
  return v && v->is_number_integer() ? v->get<long long>() : def;
}
std::string StrOr(const Json& j, std::string_view key, std::string def) {
  const Json* v = Find(j, {key});
  return v && v->is_string() ? v->get<std::string>() : def;
}

Json& ObjectAt(Json& j, std::string_view key) {
  if (!j.is_object()) j = Json::object();
  Json& v = j[std::string(key)];
  if (!v.is_object()) v = Json::object();
  return v;
}

std::string FormatTime(WallTime t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string FormatMicroTime(WallTime t) {
  auto secs = std::chrono::time_point_cast<std::chrono::seconds>(t);
  if (secs > t) secs -= std::chrono::seconds(1);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  std::string base = FormatTime(secs);
  char frac[32];
  std::snprintf(frac, sizeof(frac), ".%06lld", static_cast<long long>(micros));
  return base.substr(0, base.size() - 1) + frac + "Z";
}

std::optional<WallTime> ParseTime(std::string_view s, bool micro_exact) {
  auto digits = [&](std::size_t pos, std::size_t n, int* out) {
    if (pos + n > s.size()) return false;
    int v = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
      v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
  };
  int Y, M, D, h, m, sec;
  if (!digits(0, 4, &Y) || s.size() < 20 || s[4] != '-' || !digits(5, 2, &M) || s[7] != '-' ||
      !digits(8, 2, &D) || (s[10] != 'T' && s[10] != 't') || !digits(11, 2, &h) || s[13] != ':' ||
      !digits(14, 2, &m) || s[16] != ':' || !digits(17, 2, &sec))
    return std::nullopt;
  if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return std::nullopt;
  std::size_t pos = 19;
  long long micros = 0;
  std::size_t frac_digits = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      if (frac_digits < 6) micros = micros * 10 + (s[pos] - '0');
      ++frac_digits;
      ++pos;
    }
    if (frac_digits == 0) return std::nullopt;
    for (std::size_t i = frac_digits; i < 6; ++i) micros *= 10;
  }
  if (micro_exact && frac_digits != 6) return std::nullopt;
  long offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!digits(pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !digits(pos + 4, 2, &om))
      return std::nullopt;
    offset = (s[pos] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  std::time_t tt = timegm(&tm);
  return std::chrono::system_clock::from_time_t(tt - offset) + std::chrono::microseconds(micros);
}

namespace {
constexpr std::string_view kMetaOrder[] = {"name",
                                           "generateName",
                                           "namespace",
                                           "selfLink",
                                           "uid",
                                           "resourceVersion",
                                           "generation",
                                           "creationTimestamp",
                                           "deletionTimestamp",
                                           "deletionGracePeriodSeconds",
                                           "labels",
                                           "annotations",
                                           "ownerReferences",
                                           "finalizers",
                                           "managedFields"};
}

Json CanonicalOrder(const Json& obj, bool custom) {
  if (!obj.is_object()) return obj;
  Json out = Json::object();
  auto copy = [&](std::string_view k) {
    auto it = obj.find(k);
    if (it != obj.end()) out[std::string(k)] = *it;
  };
  if (custom) {
    copy("apiVersion");
    copy("kind");
  } else {
    copy("kind");
    copy("apiVersion");
  }
  if (auto it = obj.find("metadata"); it != obj.end()) {
    if (it->is_object()) {
      Json meta = Json::object();
      for (auto k : kMetaOrder)
        if (auto m = it->find(k); m != it->end()) meta[std::string(k)] = *m;
      for (auto m = it->begin(); m != it->end(); ++m)
        if (!meta.contains(m.key())) meta[m.key()] = m.value();
      out["metadata"] = std::move(meta);
    } else {
      out["metadata"] = *it;
    }
  }
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!out.contains(it.key()) && it.key() != "status") out[it.key()] = it.value();
  copy("status");
  return out;
}

std::string Base64Encode(std::string_view data) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(data[i]) << 16) |
                 (static_cast<unsigned char>(data[i + 1]) << 8) |
                 static_cast<unsigned char>(data[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < data.size()) {
    unsigned v = static_cast<unsigned char>(data[i]) << 16;
    if (i + 1 < data.size()) v |= static_cast<unsigned char>(data[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < data.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  unsigned buf = 0;
  int bits = 0;
  for (char c : text) {
    int v = val(c);
    if (v < 0) return std::nullopt;
    buf = (buf << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xff));
    }
  }
  return out;
}

bool SemanticEqual(const Json& a, const Json& b) {
  if (a.type() != b.type()) {
    if (a.is_number() && b.is_number()) return a == b;
    return false;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto o = b.find(it.key());
      if (o == b.end() || !SemanticEqual(it.value(), *o)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!SemanticEqual(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

void OrderKeys(Json& obj, std::initializer_list<std::string_view> order) {
  if (!obj.is_object()) return;
  Json out = Json::object();
  for (auto k : order)
    if (auto it = obj.find(k); it != obj.end()) out[std::string(k)] = std::move(*it);
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!out.contains(it.key())) out[it.key()] = std::move(it.value());
  obj = std::move(out);
}

std::string HumanDuration(std::chrono::seconds d) {
  long long s = d.count();
  char buf[32];
  if (s < -1) return "<invalid>";
  if (s < 0) return "0s";
  if (s < 120) {
    std::snprintf(buf, sizeof(buf), "%llds", s);
    return buf;
  }
  long long minutes = s / 60;
  if (minutes < 10) {
    if (s % 60 == 0)
      std::snprintf(buf, sizeof(buf), "%lldm", minutes);
    else
      std::snprintf(buf, sizeof(buf), "%lldm%llds", minutes, s % 60);
    return buf;
  }
  if (minutes < 180) {
    std::snprintf(buf, sizeof(buf), "%lldm", minutes);
    return buf;
  }
  long long hours = s / 3600;
  if (hours < 8) {
    if (minutes % 60 == 0)
      std::snprintf(buf, sizeof(buf), "%lldh", hours);
    else
      std::snprintf(buf, sizeof(buf), "%lldh%lldm", hours, minutes % 60);
  } else if (hours < 48) {
    std::snprintf(buf, sizeof(buf), "%lldh", hours);
  } else if (hours < 24 * 8) {
    if (hours % 24 == 0)
      std::snprintf(buf, sizeof(buf), "%lldd", hours / 24);
    else
      std::snprintf(buf, sizeof(buf), "%lldd%lldh", hours / 24, hours % 24);
  } else if (hours < 24 * 365 * 2) {
    std::snprintf(buf, sizeof(buf), "%lldd", hours / 24);
  } else if (hours < 24 * 365 * 8) {
    long long days = (hours / 24) % 365;
    if (days == 0)
      std::snprintf(buf, sizeof(buf), "%lldy", hours / 24 / 365);
    else
      std::snprintf(buf, sizeof(buf), "%lldy%lldd", hours / 24 / 365, days);
  } else {
    std::snprintf(buf, sizeof(buf), "%lldy", hours / 24 / 365);
  }
  return buf;
}

}  // namespace pylon::apiserver
