// The HTTP server over real loopback sockets: keep-alive, malformed requests, chunked streaming
// with client-disconnect detection, stop while streaming, bad listen addresses.
#include "http/server.h"
#include "support/eventually.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

namespace pylon::http {
namespace {

UniqueFd Connect(std::uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&sin), sizeof(sin)), 0);
  return fd;
}

// Reads until `needle` appears, the peer closes, or 5 s pass.
std::string ReadUntil(int fd, const std::string& needle) {
  std::string out;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < end && out.find(needle) == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

void SendAll(int fd, const std::string& s) {
  ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
}

TEST(Server, KeepAliveAndErrors) {
  std::atomic<int> calls{0};
  auto s = Server::Start({}, [&](const Request& r, ResponseWriter& w) {
    ++calls;
    w.Send(Response::Text(200, r.method + " " + r.path + " " + r.body));
  });
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_NE((*s)->port(), 0);
  UniqueFd fd = Connect((*s)->port());
  SendAll(fd.get(),
          "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi");
  std::string got = ReadUntil(fd.get(), "POST /b hi");
  EXPECT_NE(got.find("HTTP/1.1 200 OK\r\n"), std::string::npos);
  EXPECT_NE(got.find("Content-Length: 7\r\n\r\nGET /a "), std::string::npos) << got;
  EXPECT_NE(got.find("POST /b hi"), std::string::npos) << got;
  // Malformed → 400 and close, never a crash.
  SendAll(fd.get(), "BROKEN\r\n\r\n");
  got = ReadUntil(fd.get(), "\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << got;
  EXPECT_EQ(calls.load(), 2);
}

TEST(Server, StreamingDetectsClientGone) {
  std::atomic<bool> done{false};
  std::atomic<int> chunks{0};
  auto s = Server::Start({}, [&](const Request&, ResponseWriter& w) {
    w.StartStream(200, {{"Content-Type", "application/json"}});
    while (!w.Done()) {
      if (!w.WriteChunk("{\"n\":1}\n")) break;
      ++chunks;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    done = true;
  });
  ASSERT_TRUE(s);
  {
    UniqueFd fd = Connect((*s)->port());
    SendAll(fd.get(), "GET /watch HTTP/1.1\r\n\r\n");
    std::string got = ReadUntil(fd.get(), "{\"n\":1}\n\r\n8\r\n");
    EXPECT_NE(got.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << got;
    EXPECT_NE(got.find("\r\n\r\n8\r\n{\"n\":1}\n\r\n"), std::string::npos) << got;
  }  // client closes
  EXPECT_TRUE(test_support::Eventually([&] { return done.load(); }, std::chrono::seconds(5),
                                       std::chrono::milliseconds(10)));
}

TEST(Server, StopEndsStreams) {
  std::atomic<bool> in_handler{false};
  auto s = Server::Start({}, [&](const Request&, ResponseWriter& w) {
    w.StartStream(200, {});
    in_handler = true;
    while (!w.Done()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  ASSERT_TRUE(s);
  UniqueFd fd = Connect((*s)->port());
  SendAll(fd.get(), "GET / HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(test_support::Eventually([&] { return in_handler.load(); }, std::chrono::seconds(5),
                                       std::chrono::milliseconds(10)));
  (*s)->Stop();  // returns only once the handler has returned
  EXPECT_TRUE((*s)->stopping());
}

TEST(Server, BadListenAddress) {
  ServerOptions o;
  o.address = "not-an-ip";
  EXPECT_FALSE(Server::Start(o, [](const Request&, ResponseWriter&) {}));
  auto first = Server::Start({}, [](const Request&, ResponseWriter&) {});
  ASSERT_TRUE(first);
  o.address = "127.0.0.1";
  o.port = (*first)->port();
  auto taken = Server::Start(o, [](const Request&, ResponseWriter&) {});
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code(), ErrorCode::kSystem);
}

}  // namespace
}  // namespace pylon::http
