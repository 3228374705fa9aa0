// Tiny network tools for the lab: a responder that answers every HTTP request with a fixed text
// (the node's name), and a prober that measures, from the client host, which node answers for an
// address and how long the answers stop during a failover.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"

namespace pylon::lab {

// Serves "HTTP/1.1 200" with `text` on [::]:port (IPv4 and IPv6) until `*stop` becomes true
// (checked every 200 ms; a signal handler may set it).
// With `report_peer`, the body is `text` followed by " client=<address>": the source address
// the connection came from as this host sees it (an IPv4 peer without the ::ffff: prefix), so a
// pod behind kube-proxy shows whether the client's address was kept or masqueraded.
Status ServeText(int port, const std::string& text, const std::atomic<bool>* stop,
                 bool report_peer = false);

// Echoes every byte it reads, on every connection to [::]:port, until `*stop` (checked every
// 200 ms): the far end of StreamSet's long-lived flows.
Status ServeEcho(int port, const std::atomic<bool>* stop);

struct StreamStats {
  int opened = 0;   // connections established by Open
  int broken = 0;   // connections that saw a reset, an end of file or a failed write
  int stalled = 0;  // connections whose echo was once late by more than 1 s (a flow blackholed)
  double longest_wait_ms = 0;  // the longest wait for an echo, over every connection
};

// Long-lived TCP flows from the client: `count` connections to address:port (a ServeEcho behind
// it), each sending a short line every `period` and reading its echo. What an established
// connection through an address sees while the address moves or stays: a reset (the new holder
// has no conntrack entry for it), a stall, or nothing.
class StreamSet {
 public:
  // Connects from the calling thread's network namespace; fails unless every connection opens.
  static Result<std::unique_ptr<StreamSet>> Open(const std::string& address, int port, int count,
                                                 std::chrono::milliseconds period);
  ~StreamSet();
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;
  // Stops the flows' thread and closes them; what they saw.
  StreamStats Stop();

 private:
  struct Flow;
  StreamSet() = default;
  void Run(std::chrono::milliseconds period);
  std::vector<Flow> flows_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  StreamStats stats_;
};

struct ProbeResult {
  bool ok = false;
  std::string body;  // the responder's text (node name) when ok; the body of any HTTP answer
  std::string error;
  int status = 0;  // the HTTP status code when an answer came (200, 503, ...), else 0
};

// One HTTP GET of `path` to address:port with a total timeout.
ProbeResult ProbeOnce(const std::string& address, int port, std::chrono::milliseconds timeout,
                      const std::string& path = "/");

struct ProbeSample {
  double t_ms = 0;  // since the start of the run
  bool ok = false;
  std::string node;
};

// Probes every `interval` for `duration` (or until `*stop`, when given), one attempt at a time.
std::vector<ProbeSample> ProbeLoop(const std::string& address, int port,
                                   std::chrono::milliseconds interval,
                                   std::chrono::milliseconds timeout,
                                   std::chrono::milliseconds duration,
                                   const std::atomic<bool>* stop = nullptr);

// The words "key=value" of a reply, e.g. a pod's "pod=web-a node=node1 client=192.0.2.2" →
// {pod: web-a, node: node1, client: 192.0.2.2}; words without '=' are skipped.
std::map<std::string, std::string> ReplyFields(const std::string& body);
// The node a reply came from: its "node=" field (a pod's reply), else the whole body (a node's
// responder answers with its name).
std::string AnsweringNode(const std::string& body);

// The longest stretch without a successful answer, from the last success before a failure to
// the first success after it (ms); 0 when no probe failed.
double LongestOutageMs(const std::vector<ProbeSample>& samples);

}  // namespace pylon::lab
