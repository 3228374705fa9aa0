// Tiny network tools for the lab: a responder that answers every HTTP request with a fixed text
// (the node's name), and a prober that measures, from the client host, which node answers for an
// address and how long the answers stop during a failover.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <string>
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
