#include "lab/process.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace pylon::lab {
namespace {

TEST(RunCommand, CapturesOutputAndExitCode) {
  std::string out;
  auto rc = RunCommand({"sh", "-c", "echo hello; echo err >&2; exit 3"}, &out);
  ASSERT_TRUE(rc);
  EXPECT_EQ(*rc, 3);
  EXPECT_EQ(out, "hello\nerr\n");
}

TEST(RunCommandChecked, FailureNamesCommandAndOutput) {
  auto r = RunCommandChecked({"sh", "-c", "echo boom; exit 2"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("sh -c echo boom; exit 2 exited 2: boom"), std::string::npos)
      << r.error().message();
  auto ok = RunCommandChecked({"printf", "x"});
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, "x");
}

TEST(RunCommand, MissingProgramIs127) {
  auto rc = RunCommand({"/nonexistent/program"});
  ASSERT_TRUE(rc);
  EXPECT_EQ(*rc, 127);
}

TEST(Process, SpawnWaitAndLog) {
  char tmpl[] = "/tmp/pylon-proc-XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  SpawnOptions o;
  o.argv = {"sh", "-c", "echo started $PYLON_X; exit 5"};
  o.log_path = tmpl;
  o.env = {"PYLON_X=42"};
  auto p = Process::Spawn(o);
  ASSERT_TRUE(p);
  auto st = p->Wait(std::chrono::seconds(10));
  ASSERT_TRUE(st);
  EXPECT_TRUE(WIFEXITED(*st));
  EXPECT_EQ(WEXITSTATUS(*st), 5);
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "started 42\n");
  std::remove(tmpl);
}

TEST(Process, StopEscalatesToKill) {
  SpawnOptions o;
  o.argv = {"sh", "-c", "trap '' TERM; while true; do sleep 0.05; done"};
  auto p = Process::Spawn(o);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->running());
  p->Stop(std::chrono::milliseconds(200));
  EXPECT_FALSE(p->running());
}

TEST(Process, DestructorReapsChild) {
  pid_t pid;
  {
    SpawnOptions o;
    o.argv = {"sleep", "30"};
    auto p = Process::Spawn(o);
    ASSERT_TRUE(p);
    pid = p->pid();
  }
  EXPECT_NE(kill(pid, 0), 0);
}

TEST(Process, BadNetnsIsAnError) {
  SpawnOptions o;
  o.argv = {"true"};
  o.netns = "pylon-no-such-netns";
  auto p = Process::Spawn(o);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("/run/netns/pylon-no-such-netns"), std::string::npos);
}

}  // namespace
}  // namespace pylon::lab
