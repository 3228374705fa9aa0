// Runs a function on a thread that has entered a network namespace (setns affects only the
// calling thread), so the lab can probe from the client host without spawning a process.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>
#include <thread>

#include "common/fd.h"
#include "common/result.h"

namespace pylon::lab {

template <typename Fn>
auto InNetns(const std::string& netns, Fn fn) -> Result<decltype(fn())> {
  using T = decltype(fn());
  Result<T> out = Fail(ErrorCode::kInternal, "netns thread did not run");
  std::thread t([&] {
    std::string path = "/run/netns/" + netns;
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
      out = FailErrno(errno, "open " + path);
      return;
    }
    if (setns(fd.get(), CLONE_NEWNET) != 0) {
      out = FailErrno(errno, "setns " + netns);
      return;
    }
    out = fn();
  });
  t.join();
  return out;
}

}  // namespace pylon::lab
