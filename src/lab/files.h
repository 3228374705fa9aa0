// The lab's small file helpers: configuration texts written whole, /proc and state files read
// whole. One home for what the lab's files (kubelet, control plane, BGP, install, kube-proxy)
// need.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "common/result.h"

namespace pylon::lab {

// Writes `text` to `path` (truncating; a new file gets the umask's mode), then sets `mode` if
// given.
Status WriteTextFile(const std::string& path, const std::string& text,
                     std::optional<mode_t> mode = std::nullopt);
// The whole file; "" when it cannot be read.
std::string ReadTextFile(const std::string& path);
// The last `lines` lines of a log, each on its own indented line, for an error message.
std::string LogTail(const std::string& path, size_t lines = 8);
// Waits (polling every 20 ms) up to `timeout` for `path` to exist (a socket, say).
bool WaitForPath(const std::string& path, std::chrono::milliseconds timeout);

}  // namespace pylon::lab
