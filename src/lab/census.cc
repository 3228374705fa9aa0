#include "lab/census.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "lab/files.h"
#include "lab/netns.h"
#include "lab/responder.h"

namespace pylon::lab {

namespace {

using Ms = std::chrono::milliseconds;

struct ProcSample {
  double cpu_s = -1;  // user + system, seconds
  double rss_mib = -1;
};

ProcSample ReadProc(int pid) {
  ProcSample s;
  const std::string text = ReadTextFile("/proc/" + std::to_string(pid) + "/stat");
  // Fields after the command (which may hold spaces) start past the last ')'.
  auto close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    std::vector<std::string> f;
    while (rest >> field) f.push_back(field);
    // f[0] is field 3 (state); utime and stime are fields 14 and 15.
    if (f.size() > 13) {
      const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
      s.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / ticks;
    }
  }
  std::istringstream status(ReadTextFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_mib = std::stod(line.substr(6)) / 1024.0;
  }
  return s;
}

std::string Fixed(double v, int digits = 1) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

struct MeanMax {
  double sum = 0, max = 0;
  int n = 0;
  void Add(double v) {
    sum += v;
    max = n == 0 ? v : std::max(max, v);
    ++n;
  }
  std::string Text(int digits = 1) const {
    if (n == 0) return "n/a";
    return "mean " + Fixed(sum / n, digits) + ", max " + Fixed(max, digits);
  }
};

std::uintmax_t FileSize(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  return in ? static_cast<std::uintmax_t>(in.tellg()) : 0;
}

std::string ReadFrom(const std::string& path, std::uintmax_t offset) {
  const std::string all = ReadTextFile(path);
  return offset < all.size() ? all.substr(offset) : std::string();
}

}  // namespace

double AgentMetric(const LabNode& node, const std::string& series) {
  auto r = InNetns(node.netns, [] { return ProbeOnce("127.0.0.1", 7473, Ms(500), "/metrics"); });
  if (!r || !r->ok) return -1;
  const std::string text = "\n" + r->body;
  const std::string key = "\n" + series + " ";
  auto at = text.find(key);
  if (at == std::string::npos) return -1;
  try {
    return std::stod(text.substr(at + key.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

AuditCounts CountAudit(const std::string& lines) {
  AuditCounts c;
  std::istringstream in(lines);
  std::string line;
  while (std::getline(in, line)) {
    auto ev = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!ev.is_object() || ev.value("stage", "") != "ResponseComplete") continue;
    std::string user = "?";
    if (auto u = ev.find("user"); u != ev.end() && u->is_object()) {
      user = u->value("username", "?");
    }
    std::string resource = "?";
    if (auto o = ev.find("objectRef"); o != ev.end() && o->is_object()) {
      resource = o->value("resource", "?");
    }
    c.by_user[user] += 1;
    c.by_user_request[user][ev.value("verb", "?") + " " + resource] += 1;
  }
  return c;
}

std::vector<std::string> Census(const Lab& lab, Duration window) {
  const auto& nodes = lab.topology().nodes();
  const auto pids = lab.Pids();
  const std::string audit = lab.control_plane().AuditLog();
  struct Before {
    double sent = -1, received = -1;
    ProcSample proc;
  };
  std::map<std::string, Before> before;
  const std::uintmax_t audit_at = FileSize(audit);
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& n : nodes) {
    Before& b = before[n.name];
    b.sent = AgentMetric(n, "purelb_heartbeat_datagrams_total{direction=\"sent\"}");
    b.received = AgentMetric(n, "purelb_heartbeat_datagrams_total{direction=\"received\"}");
    if (auto it = pids.find("agent-" + n.name); it != pids.end()) b.proc = ReadProc(it->second);
  }
  std::this_thread::sleep_for(window);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MeanMax sent, received, cpu, rss;
  for (const auto& n : nodes) {
    const Before& b = before[n.name];
    const double s = AgentMetric(n, "purelb_heartbeat_datagrams_total{direction=\"sent\"}");
    const double r = AgentMetric(n, "purelb_heartbeat_datagrams_total{direction=\"received\"}");
    if (b.sent >= 0 && s >= 0) sent.Add((s - b.sent) / seconds);
    if (b.received >= 0 && r >= 0) received.Add((r - b.received) / seconds);
    if (auto it = pids.find("agent-" + n.name); it != pids.end()) {
      ProcSample p = ReadProc(it->second);
      if (p.cpu_s >= 0 && b.proc.cpu_s >= 0) cpu.Add(100.0 * (p.cpu_s - b.proc.cpu_s) / seconds);
      if (p.rss_mib >= 0) rss.Add(p.rss_mib);
    }
  }
  std::vector<std::string> lines;
  lines.push_back("steady state over " + Fixed(seconds, 0) + " s, " + std::to_string(nodes.size()) +
                  " nodes:");
  lines.push_back("  heartbeat datagrams sent per node per second:     " + sent.Text());
  lines.push_back("  heartbeat datagrams received per node per second: " + received.Text());
  lines.push_back("  agent CPU per node (% of one core):               " + cpu.Text(2));
  lines.push_back("  agent RSS per node (MiB):                         " + rss.Text());
  AuditCounts audit_counts = CountAudit(ReadFrom(audit, audit_at));
  lines.push_back("  API requests per second by user (audit log, completed requests):");
  for (const auto& [user, n] : audit_counts.by_user) {
    std::string detail;
    std::vector<std::pair<double, std::string>> top;
    for (const auto& [req, k] : audit_counts.by_user_request[user]) top.emplace_back(k, req);
    std::sort(top.rbegin(), top.rend());
    for (std::size_t i = 0; i < top.size() && i < 3; ++i) {
      detail += (i ? ", " : "") + top[i].second + " " + Fixed(top[i].first / seconds, 2);
    }
    lines.push_back("    " + user + ": " + Fixed(n / seconds, 2) + " (" + detail + ")");
  }
  return lines;
}

}  // namespace pylon::lab
