// What ships: `pylon` (the image's binary) holds the product commands only, `pylon-dev` the
// developer tools; every command answers --help and a bad flag the same way; and `pylon` links no
// lab, no fault proxy, no fake. Runs the built binaries (support/binaries.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "lab/process.h"
#include "support/binaries.h"
#include "support/shell.h"

namespace pylon::test_support {
namespace {

struct Outcome {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string Quote(const std::string& s) { return pylon::test_support::ShellQuote(s); }

// Runs `argv` twice through the shell: once for stdout, once for stderr (the commands under test
// only print usage or an error, so both runs behave the same).
Outcome RunBinary(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const auto& a : argv) cmd += Quote(a) + " ";
  Outcome r;
  auto out = lab::RunCommand({"/bin/sh", "-c", cmd + "2>/dev/null"}, &r.out);
  auto err = lab::RunCommand({"/bin/sh", "-c", cmd + "2>&1 >/dev/null"}, &r.err);
  EXPECT_TRUE(out && err);
  if (out && err) {
    EXPECT_EQ(*out, *err);
    r.code = *out;
  }
  return r;
}

// The command names of a binary's --help: the first word of each line under "commands:".
std::vector<std::string> ListedCommands(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  std::string line;
  bool in_commands = false;
  while (std::getline(in, line)) {
    if (line == "commands:") {
      in_commands = true;
    } else if (in_commands && line.rfind("  ", 0) == 0) {
      std::istringstream words(line);
      std::string name;
      words >> name;
      names.push_back(name);
    } else if (in_commands) {
      break;
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(WhatShipsTest, BinariesListTheirCommands) {
  struct Case {
    std::string binary;
    std::vector<std::string> commands;  // sorted
  };
  const Case cases[] = {
      {ProductBinary(), {"agent", "allocator", "prepare-node", "version"}},
      {DevBinary(), {"fault-proxy", "lab", "soak", "version"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.binary);
    Outcome help = RunBinary({c.binary, "--help"});
    EXPECT_EQ(help.code, 0);
    EXPECT_EQ(help.err, "");
    EXPECT_EQ(help.out.rfind("usage: ", 0), 0u) << help.out;
    EXPECT_EQ(ListedCommands(help.out), c.commands) << help.out;

    Outcome version = RunBinary({c.binary, "version"});
    EXPECT_EQ(version.code, 0);
    EXPECT_NE(version.out.find(PYLON_VERSION), std::string::npos) << version.out;

    for (const std::vector<std::string>& bad :
         {std::vector<std::string>{"no-such-command"}, std::vector<std::string>{}}) {
      std::vector<std::string> argv = {c.binary};
      argv.insert(argv.end(), bad.begin(), bad.end());
      Outcome r = RunBinary(argv);
      EXPECT_EQ(r.code, 2);
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
  // The developer tools are not in the product, nor the product's commands in the tools.
  for (const char* dev : {"lab", "fault-proxy", "soak"}) {
    EXPECT_EQ(RunBinary({ProductBinary(), dev, "--help"}).code, 2) << dev;
  }
  for (const char* product : {"allocator", "agent"}) {
    EXPECT_EQ(RunBinary({DevBinary(), product, "--help"}).code, 2) << product;
  }
}

struct CommandCase {
  std::string binary;
  std::string command;
  std::string prefix;  // of the error line
  std::string sub;     // a subcommand the bad flag is given to ("" for none)
};

// `<binary> <command> --help`: usage on stdout, exit 0. `--no-such-flag`: one line on stderr
// naming it, exit 2.
void ExpectHelpAndOneLineError(const CommandCase& c) {
  SCOPED_TRACE(c.command);
  Outcome help = RunBinary({c.binary, c.command, "--help"});
  EXPECT_EQ(help.code, 0) << help.err;
  EXPECT_EQ(help.out.rfind("usage: ", 0), 0u) << help.out;

  std::vector<std::string> bad_args = {c.binary, c.command};
  if (!c.sub.empty()) bad_args.push_back(c.sub);
  bad_args.push_back("--no-such-flag");
  Outcome bad = RunBinary(bad_args);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  EXPECT_EQ(bad.err.rfind(c.prefix, 0), 0u) << bad.err;
  EXPECT_NE(bad.err.find("--no-such-flag"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("; see --help"), std::string::npos) << bad.err;
}

TEST(WhatShipsTest, EveryCommandHasHelpAndRejectsABadFlag) {
  const CommandCase cases[] = {
      {ProductBinary(), "allocator", "pylon allocator: ", ""},
      {ProductBinary(), "agent", "pylon agent: ", ""},
      {DevBinary(), "fault-proxy", "pylon-dev fault-proxy: ", ""},
      {DevBinary(), "soak", "pylon-dev soak: ", ""},
  };
  for (const auto& c : cases) ExpectHelpAndOneLineError(c);
}

// Apart from the others: the lab's command line is src/lab's own (LabCommand).
TEST(WhatShipsTest, LabHasHelpAndRejectsABadFlag) {
  ExpectHelpAndOneLineError({DevBinary(), "lab", "pylon-dev lab: ", "up"});
}

// The symbols `pylon` defines (the build is not stripped): none from the lab, the fault proxy,
// a fake or the removed apiserver command.
TEST(WhatShipsTest, ProductLinksNoDeveloperCode) {
  std::string symbols;
  auto rc = lab::RunCommand({"nm", "-C", "--defined-only", ProductBinary()}, &symbols, "",
                            /*merge_stderr=*/false);
  ASSERT_TRUE(rc);
  ASSERT_EQ(*rc, 0);
  ASSERT_NE(symbols.find("pylon::allocator::"), std::string::npos) << "no symbols to check";
  std::istringstream in(symbols);
  std::string line;
  std::vector<std::string> found;
  while (std::getline(in, line)) {
    std::string lower = line;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (line.find("pylon::lab::") != std::string::npos ||
        line.find("pylon::faultproxy::") != std::string::npos ||
        line.find("Fake") != std::string::npos || line.find("fake_") != std::string::npos ||
        lower.find("apiserver") != std::string::npos) {
      if (found.size() < 20) found.push_back(line);
    }
  }
  EXPECT_TRUE(found.empty()) << "first offending symbols:\n"
                             << [&] {
                                  std::string all;
                                  for (const auto& f : found) all += "  " + f + "\n";
                                  return all;
                                }();
}

}  // namespace
}  // namespace pylon::test_support
