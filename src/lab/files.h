// The lab's small file helpers: configuration texts written whole, /proc and state files read
// whole. One home for what kubelet.cc, control_plane.cc, bgp.cc and install.cc need.
#pragma once

#include <sys/types.h>

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

}  // namespace pylon::lab
