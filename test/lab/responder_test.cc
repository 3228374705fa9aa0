#include "lab/responder.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

namespace pylon::lab {
namespace {

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  close(fd);
  return ntohs(sa.sin_port);
}

TEST(Responder, AnswersWithItsTextOverIPv4AndIPv6) {
  int port = FreePort();
  std::atomic<bool> stop{false};
  std::thread server([&] { ASSERT_TRUE(ServeText(port, "node7", &stop)); });
  ProbeResult r;
  for (int i = 0; i < 100 && !r.ok; ++i) {
    r = ProbeOnce("127.0.0.1", port, std::chrono::milliseconds(200));
    if (!r.ok) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.body, "node7");
  auto r6 = ProbeOnce("::1", port, std::chrono::milliseconds(500));
  EXPECT_TRUE(r6.ok) << r6.error;
  EXPECT_EQ(r6.body, "node7");
  stop = true;
  server.join();
  auto closed = ProbeOnce("127.0.0.1", port, std::chrono::milliseconds(200));
  EXPECT_FALSE(closed.ok);
  EXPECT_FALSE(ProbeOnce("not-an-ip", port, std::chrono::milliseconds(10)).ok);
}

TEST(LongestOutage, Table) {
  auto S = [](double t, bool ok) { return ProbeSample{t, ok, ok ? "n" : ""}; };
  EXPECT_EQ(LongestOutageMs({S(0, true), S(10, true), S(20, true)}), 0);
  EXPECT_EQ(LongestOutageMs({S(0, true), S(10, false), S(20, false), S(30, true)}), 30);
  EXPECT_EQ(LongestOutageMs({S(0, true), S(10, false), S(20, true), S(30, false), S(40, false),
                             S(50, false), S(60, true)}),
            40);
  // Failures before the first success are not an outage we can bound.
  EXPECT_EQ(LongestOutageMs({S(0, false), S(10, true)}), 0);
}

}  // namespace
}  // namespace pylon::lab
