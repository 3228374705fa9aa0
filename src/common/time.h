// RFC 3339 timestamps, the one codec of the project. `Time` (Kubernetes metav1.Time, Pylon's own
// annotations) is UTC with whole seconds ("2025-01-02T03:04:05Z"); `MicroTime` (Lease spec,
// events.k8s.io) has exactly six fractional digits ("2025-01-02T03:04:05.123456Z").
// Pure functions, no I/O.
#pragma once

#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace pylon {

// Formats as RFC 3339, UTC, whole seconds (truncated).
std::string FormatTime(WallTime t);
// Formats as RFC 3339, UTC, exactly 6 fractional digits (truncated to microseconds).
std::string FormatMicroTime(WallTime t);
// Parses RFC 3339 as servers send it: "YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|±HH:MM)" ('t'/'z' too).
// Accepts both Time and MicroTime; precision beyond microseconds is truncated. The date must
// exist (no February 30th).
Result<WallTime> ParseTime(std::string_view text);
// Strict Time: exactly "YYYY-MM-DDTHH:MM:SSZ", as FormatTime writes it.
Result<WallTime> ParseWholeSecondsTime(std::string_view text);
// Strict MicroTime: exactly six fractional digits and a "Z" suffix.
Result<WallTime> ParseMicroTime(std::string_view text);

}  // namespace pylon
