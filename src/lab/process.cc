#include "lab/process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "common/fd.h"

namespace pylon::lab {
namespace {

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void ExecChild(const SpawnOptions& opts, int out_fd, const std::vector<char*>& argv,
                            const std::vector<char*>& envp, int netns_fd) {
  if (opts.new_process_group) setpgid(0, 0);
  if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) _exit(126);
  if (out_fd >= 0) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
  }
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  // Nothing else of the parent's reaches the child: a descriptor the lab's caller held (a
  // `flock /tmp/pylon-lab.lock` around `lab up`) would otherwise stay held by every process of the
  // lab until `lab down`.
  close_range(3, ~0U, 0);
  // Reset signal dispositions the parent may have changed.
  signal(SIGPIPE, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(argv[0], argv.data(), envp.data());
  _exit(127);
}

extern "C" char** environ;

// Whether `pid` has exited but is not reaped yet. An adopted process (another `pylon-dev lab`
// process's child) is reaped by whoever inherited it, maybe late: exited is exited.
bool IsZombie(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

}  // namespace

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "pylon";
  return std::string(buf, static_cast<size_t>(n));
}

Result<Process> Process::Spawn(const SpawnOptions& opts) {
  if (opts.argv.empty()) return Fail(ErrorCode::kInvalidArgument, "spawn: empty argv");
  UniqueFd out;
  if (!opts.log_path.empty()) {
    out.reset(open(opts.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (!out) return FailErrno(errno, "open " + opts.log_path);
  }
  UniqueFd ns;
  if (!opts.netns.empty()) {
    std::string path = "/run/netns/" + opts.netns;
    ns.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns) return FailErrno(errno, "open " + path);
  }
  // Resolve the program through PATH here, so the child only needs execve.
  std::string program = opts.argv[0];
  if (program.find('/') == std::string::npos) {
    const char* path_env = getenv("PATH");
    std::string path = path_env ? path_env : "/usr/sbin:/usr/bin:/sbin:/bin";
    size_t start = 0;
    while (start <= path.size()) {
      size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      std::string candidate = path.substr(start, end - start) + "/" + program;
      if (access(candidate.c_str(), X_OK) == 0) {
        program = candidate;
        break;
      }
      start = end + 1;
    }
  }
  std::vector<std::string> args = opts.argv;
  args[0] = program;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  for (const auto& e : opts.env) env_strings.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return FailErrno(errno, "fork");
  if (pid == 0) ExecChild(opts, out.get(), argv, envp, ns.get());
  if (opts.new_process_group) setpgid(pid, pid);  // avoid racing the child's own setpgid
  return Process(pid, true);
}

Process Process::Adopt(pid_t pid) { return Process(pid, false); }

Process::Process(Process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), owned_(o.owned_), exit_status_(o.exit_status_) {}

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    if (owned_ && pid_ > 0 && !exit_status_) Stop(std::chrono::milliseconds(0));
    pid_ = std::exchange(o.pid_, -1);
    owned_ = o.owned_;
    exit_status_ = o.exit_status_;
  }
  return *this;
}

Process::~Process() {
  if (owned_ && pid_ > 0 && !exit_status_) Stop(std::chrono::milliseconds(0));
}

bool Process::running() {
  if (pid_ <= 0 || exit_status_) return false;
  if (owned_) return Reap() == 0;
  return kill(pid_, 0) == 0;
}

pid_t Process::Reap() {
  int st = 0;
  const pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) exit_status_ = st;
  return r;
}

Status Process::Signal(int sig) {
  if (pid_ <= 0) return Fail(ErrorCode::kNotFound, "no process");
  if (kill(pid_, sig) != 0) return FailErrno(errno, "kill " + std::to_string(pid_));
  return Ok();
}

Result<int> Process::Wait(std::chrono::milliseconds timeout) {
  if (exit_status_) return *exit_status_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (owned_) {
      const pid_t r = Reap();
      if (r == pid_) return *exit_status_;
      if (r < 0) return FailErrno(errno, "waitpid");
    } else if (kill(pid_, 0) != 0 || IsZombie(pid_)) {
      exit_status_ = 0;
      return 0;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Fail(ErrorCode::kUnavailable, "process " + std::to_string(pid_) + " still running");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Process::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0 || exit_status_) return;
  if (grace.count() > 0) {
    kill(pid_, SIGTERM);
    kill(pid_, SIGCONT);  // a stopped process (SIGSTOP in a test) handles SIGTERM only once resumed
    if (Wait(grace)) return;
  }
  kill(pid_, SIGKILL);
  (void)Wait(std::chrono::milliseconds(5000));
}

pid_t Process::Detach() {
  owned_ = false;
  return pid_;
}

Result<int> RunCommand(const std::vector<std::string>& argv, std::string* output,
                       const std::string& netns, bool merge_stderr) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return FailErrno(errno, "pipe");
  UniqueFd rd(pipefd[0]);
  UniqueFd wr(pipefd[1]);
  SpawnOptions opts;
  opts.argv = argv;
  opts.netns = netns;
  opts.new_process_group = false;
  // Spawn writes the child's stdout+stderr to log_path; for a pipe we do it by hand here.
  UniqueFd ns;
  if (!netns.empty()) {
    std::string path = "/run/netns/" + netns;
    ns.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns) return FailErrno(errno, "open " + path);
  }
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return FailErrno(errno, "fork");
  if (pid == 0) {
    if (ns && setns(ns.get(), CLONE_NEWNET) != 0) _exit(126);
    dup2(wr.get(), STDOUT_FILENO);
    if (merge_stderr) dup2(wr.get(), STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    close_range(3, ~0U, 0);  // as in ExecChild
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  wr.reset();
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = read(rd.get(), buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (output) *output = std::move(out);
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

Result<std::string> RunCommandChecked(const std::vector<std::string>& argv,
                                      const std::string& netns) {
  std::string out;
  auto rc = RunCommand(argv, &out, netns);
  if (!rc) return Fail(rc.error());
  if (*rc != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    if (!netns.empty()) cmd = "[netns " + netns + "] " + cmd;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return Fail(ErrorCode::kSystem, cmd + " exited " + std::to_string(*rc) + ": " + out);
  }
  return out;
}

}  // namespace pylon::lab
