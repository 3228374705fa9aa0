#include "common/cli.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/duration.h"
#include "common/text.h"

namespace pylon::cli {

namespace {

// --help output: "usage: <name> [flags]", the description, then "flags:" with one line per flag
// ("--name TYPE=default  what it does").
class Formatter : public CLI::Formatter {
 public:
  Formatter() {
    column_width(36);
    label("REQUIRED", "(required)");
  }
  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string out = "usage: " + name;
    if (!app->get_subcommands({}).empty()) out += " <command>";
    out += " [flags]\n";
    if (!app->get_description().empty()) out += "\n" + app->get_description() + "\n";
    return out;
  }
  std::string make_description(const CLI::App* /*app*/) const override { return {}; }
};

// Whether `flag` ("--name") is on the command line, as "--name", "--name=v" or "-x".
bool OnCommandLine(const CLI::Option& flag, const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    const std::string name = arg.substr(0, arg.find('='));
    if (name.size() > 1 && name[0] == '-' && flag.check_name(name)) return true;
  }
  return false;
}

// CLI11 names the flag in a bad value's message ("--flag: what"). When the value came from the
// flag's environment variable, the message names the variable, which is what the user set.
std::string NameTheVariable(App& app, const std::vector<std::string>& args, std::string what) {
  const auto colon = what.find(": ");
  if (colon == std::string::npos) return what;
  const CLI::Option* flag = app.get_option_no_throw(what.substr(0, colon));
  if (!flag || flag->get_envname().empty() || OnCommandLine(*flag, args)) return what;
  return flag->get_envname() + " (" + what.substr(0, colon) + ")" + what.substr(colon);
}

}  // namespace

std::unique_ptr<App> NewCommand(const std::string& name, const std::string& description) {
  auto app = std::make_unique<App>(description, name);
  app->formatter(std::make_shared<Formatter>());
  // A flag given twice takes its last value, as Go's flag package does (scripts and harnesses
  // append overrides to a default command line).
  app->option_defaults()->always_capture_default()->group("flags")->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  app->set_help_flag("-h,--help", "show this help and exit");
  app->allow_windows_style_options(false);
  return app;
}

Result<bool> ParseArgs(App& app, const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return false;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    return Fail(ErrorCode::kInvalidArgument, NameTheVariable(app, args, what));
  }
  return true;
}

int UsageError(const App& app, const std::string& what) {
  std::fprintf(stderr, "%s: %s; see --help\n", app.get_name().c_str(), what.c_str());
  return kExitUsage;
}

std::optional<int> Parse(App& app, int argc, const char* const* argv) {
  auto parsed = ParseArgs(app, std::vector<std::string>(argv + std::min(argc, 1), argv + argc));
  if (!parsed) return UsageError(app, parsed.error().message());
  if (!*parsed) {
    std::fputs(app.help().c_str(), stdout);
    return kExitOk;
  }
  return std::nullopt;
}

Result<HostPort> ParseHostPort(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return Fail(ErrorCode::kInvalidArgument, "\"" + std::string(text) + "\": want HOST:PORT");
  }
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  auto value = ParseInteger<std::uint16_t>(port);  // 0: an ephemeral port
  if (!value) return Fail(ErrorCode::kInvalidArgument, "\"" + std::string(text) + "\": bad port");
  return HostPort{std::string(host), *value};
}

Result<HostPort> ParseListenAddress(std::string_view text) {
  auto hp = ParseHostPort(text);
  if (hp && hp->host.empty()) hp->host = "0.0.0.0";
  return hp;
}

CLI::Option* AddDuration(App& app, const std::string& flag, Duration* out,
                         const std::string& description, bool allow_zero) {
  auto* opt = app.add_option_function<std::string>(
      flag,
      [out, allow_zero, flag](const std::string& text) {
        auto d = ParseGoDuration(text);
        if (!d) throw CLI::ValidationError(flag, d.error().message());
        if (*d < Duration::zero() || (!allow_zero && *d == Duration::zero())) {
          throw CLI::ValidationError(flag, "\"" + text + "\" must be positive");
        }
        *out = *d;
      },
      description);
  opt->type_name("DURATION");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*out).count();
  opt->default_str(ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms");
  return opt;
}

CLI::Validator NonEmpty() {
  return CLI::Validator(
      [](const std::string& v) { return v.empty() ? std::string("must not be empty") : ""; }, "",
      "non-empty");
}

CLI::Option* AddLogLevel(App& app, log::Level* out) {
  auto* opt = app.add_option_function<std::string>(
      "--log-level",
      [out](const std::string& text) {
        if (!log::ParseLevel(text, out)) {
          throw CLI::ValidationError("--log-level",
                                     "\"" + text + "\" is not one of debug, info, warn, error");
        }
      },
      "log level: debug|info|warn|error");
  opt->type_name("LEVEL");
  opt->default_str(std::string(log::LevelName(*out)));
  return opt;
}

}  // namespace pylon::cli
