// The one command-line shape of every command of `pylon` and `pylon-dev`, on CLI11.
//
// Each command builds a `Command` (a CLI11 app named "<binary> <command>"), declares its flags with
// CLI11's own `add_option` / `add_flag` plus the typed helpers below, and calls `Parse`. Every
// command therefore prints the same style of --help and fails the same way:
//   - --help / -h: the usage on stdout, exit 0;
//   - a bad command line (unknown flag, missing or bad value, missing required flag): one line on
//     stderr, "<binary> <command>: <what>; see --help", and exit code kExitUsage (2);
//   - a failure while running: the command logs it and returns kExitFailure (1).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/clock.h"
#include "common/log.h"
#include "common/result.h"
#include "common/text.h"

namespace pylon::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

using App = CLI::App;

// A command's parser: "<binary> <command>" with a one-line description, the common formatter and
// --help. Flags are "--long-name" (and optionally a short alias); values come as "--flag v" or
// "--flag=v".
std::unique_ptr<App> NewCommand(const std::string& name, const std::string& description);

// Parses argv (argv[0] is the command name, it is skipped) into `app`. Returns nullopt when the
// command should go on, else the exit code to return: kExitOk after --help (printed on stdout),
// kExitUsage after a bad command line (one line on stderr).
std::optional<int> Parse(App& app, int argc, const char* const* argv);

// Parses `args` (the flags alone, without the command name) into `app` and prints nothing: what
// Parse does underneath, and what a command's flag tests call. true after a good command line,
// false after --help, kInvalidArgument with CLI11's one-line message after a bad one.
//
// A flag may take its default from an environment variable (CLI11's `->envname(NAME)`, shown in
// --help as "(Env:NAME)"; the flag on the command line wins, an empty variable counts as unset).
// A bad value that came from the variable is reported under its name: "NAME (--flag): what".
Result<bool> ParseArgs(App& app, const std::vector<std::string>& args);

// A bad command line found after parsing (a check across flags or the environment): prints
// "<binary> <command>: <what>; see --help" on stderr and returns kExitUsage.
int UsageError(const App& app, const std::string& what);

// "host:port", "[v6]:port" or ":port" (host ""); port 0..65535. The host is not resolved.
struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};
Result<HostPort> ParseHostPort(std::string_view text);

// A listen address for a server flag (--metrics-addr of every component): ParseHostPort, and
// ":port" (no host) means every IPv4 address, "0.0.0.0:port", as Go's servers read ":port".
// "[::]:port" listens on IPv6 (and on IPv4 too where net.ipv6.bindv6only is 0, the default).
Result<HostPort> ParseListenAddress(std::string_view text);

// A duration flag in Go's syntax ("10s", "500ms", "1m30s"); `*out` keeps its value as the default.
// `allow_zero` false rejects "0".
CLI::Option* AddDuration(App& app, const std::string& flag, Duration* out,
                         const std::string& description, bool allow_zero = false);

// An integer flag in lo..hi; `*out` keeps its value as the default.
template <typename Int>
CLI::Option* AddInteger(App& app, const std::string& flag, Int* out, Int lo, Int hi,
                        const std::string& description) {
  auto* opt = app.add_option_function<std::string>(
      flag,
      [out, lo, hi, flag](const std::string& text) {
        auto value = ParseInteger<Int>(text, lo, hi);
        if (!value) {
          throw CLI::ValidationError(flag, "\"" + text + "\": want an integer in " +
                                               std::to_string(lo) + ".." + std::to_string(hi));
        }
        *out = *value;
      },
      description);
  opt->type_name("N")->default_str(std::to_string(*out));
  return opt;
}

// Checks that a flag's value is not empty.
CLI::Validator NonEmpty();

// --log-level debug|info|warn|error into `*out` (default: its current value).
CLI::Option* AddLogLevel(App& app, log::Level* out);

}  // namespace pylon::cli
