// Go's time.ParseDuration syntax, for the PURELB_* environment variables: a sequence of decimal
// numbers, each with an optional fraction and a unit ("ns", "us", "µs", "ms", "s", "m", "h"),
// optionally signed, e.g. "10s", "500ms", "1m30s", "1.5h". "0" alone is allowed. Pure.
#pragma once

#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace pylon {

Result<Duration> ParseGoDuration(std::string_view text);

}  // namespace pylon
