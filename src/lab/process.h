// Child processes for the lab and for tests that run Pylon's components for real: spawn a
// command (optionally inside a network namespace), send it signals, wait for it with a deadline.
// A Process kills (SIGKILL) and reaps its child when destroyed, unless it was detached.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace pylon::lab {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is the program path
  std::string netns;              // enter /run/netns/<netns> before exec; empty = current
  std::string log_path;           // stdout+stderr appended here; empty = inherit
  std::vector<std::string> env;   // extra NAME=VALUE entries
  bool new_process_group = true;  // so a signal to the group reaches its children too
};

class Process {
 public:
  Process() = default;
  static Result<Process> Spawn(const SpawnOptions& opts);
  // Adopts an existing pid (e.g. read from a lab state file); not reaped on destruction.
  static Process Adopt(pid_t pid);
  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  bool running();
  Status Signal(int sig);
  // Waits for exit up to `timeout`; returns the exit status (as from waitpid) or kUnavailable.
  Result<int> Wait(std::chrono::milliseconds timeout);
  // SIGTERM (and SIGCONT, in case it was stopped), wait up to `grace`, then SIGKILL and reap.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));
  // Forget the child: it keeps running after this object is destroyed.
  pid_t Detach();

 private:
  explicit Process(pid_t pid, bool owned) : pid_(pid), owned_(owned) {}
  // An owned child: waitpid without blocking, keeping the exit status once it has exited.
  // Returns waitpid's result (the pid: exited; 0: running; -1: error, errno set).
  pid_t Reap();
  pid_t pid_ = -1;
  bool owned_ = false;
  std::optional<int> exit_status_;
};

// Runs a command to completion and returns its exit code, capturing stdout (and stderr if
// `merge_stderr`) into *output when given. Used for `ip`, `kubectl`, `ping` and friends.
Result<int> RunCommand(const std::vector<std::string>& argv, std::string* output = nullptr,
                       const std::string& netns = "", bool merge_stderr = true);
// Like Run, but an exit code other than 0 is an error carrying the command and its output.
Result<std::string> RunCommandChecked(const std::vector<std::string>& argv,
                                      const std::string& netns = "");

// Path of the running executable (/proc/self/exe resolved).
std::string SelfExe();

}  // namespace pylon::lab
