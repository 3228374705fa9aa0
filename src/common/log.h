// Structured logs: one line per record, `ts=... level=... component=... msg="..." key=value ...`
// (logfmt), written to stderr. The level is set once at start from `--log-level`.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace pylon::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Parses "debug|info|warn|error"; returns false on anything else.
bool ParseLevel(std::string_view text, Level* out);
// The name ParseLevel reads ("debug", "info", "warn", "error"), as log lines write it.
std::string_view LevelName(Level level);
void SetLevel(Level level);
void SetComponent(std::string component);
bool Enabled(Level level);

using Field = std::pair<std::string_view, std::string>;
void Write(Level level, std::string_view msg, std::initializer_list<Field> fields = {});

inline void Debug(std::string_view msg, std::initializer_list<Field> f = {}) {
  if (Enabled(Level::kDebug)) Write(Level::kDebug, msg, f);
}
inline void Info(std::string_view msg, std::initializer_list<Field> f = {}) {
  Write(Level::kInfo, msg, f);
}
inline void Warn(std::string_view msg, std::initializer_list<Field> f = {}) {
  Write(Level::kWarn, msg, f);
}
inline void Error(std::string_view msg, std::initializer_list<Field> f = {}) {
  Write(Level::kError, msg, f);
}

}  // namespace pylon::log
