#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "common/mutex.h"

namespace pylon::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
Mutex g_mu;
std::string& ComponentName() PYLON_REQUIRES(g_mu) {
  static std::string name = "pylon";
  return name;
}

void AppendValue(std::string& out, std::string_view v) {
  bool quote = v.empty();
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      quote = true;
      break;
    }
  }
  if (!quote) {
    out.append(v);
    return;
  }
  out.push_back('"');
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

}  // namespace

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

bool ParseLevel(std::string_view text, Level* out) {
  if (text == "debug")
    *out = Level::kDebug;
  else if (text == "info")
    *out = Level::kInfo;
  else if (text == "warn" || text == "warning")
    *out = Level::kWarn;
  else if (text == "error")
    *out = Level::kError;
  else
    return false;
  return true;
}

void SetLevel(Level level) { g_level.store(static_cast<int>(level)); }

void SetComponent(std::string component) {
  MutexLock lock(g_mu);
  ComponentName() = std::move(component);
}

bool Enabled(Level level) { return static_cast<int>(level) >= g_level.load(); }

void Write(Level level, std::string_view msg, std::initializer_list<Field> fields) {
  if (!Enabled(level)) return;
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long>(micros));
  std::string line;
  line.reserve(128);
  line.append("ts=").append(ts).append(" level=").append(LevelName(level));
  MutexLock lock(g_mu);
  line.append(" component=").append(ComponentName()).append(" msg=");
  AppendValue(line, msg);
  for (const auto& [k, v] : fields) {
    line.push_back(' ');
    line.append(k).push_back('=');
    AppendValue(line, v);
  }
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace pylon::log
