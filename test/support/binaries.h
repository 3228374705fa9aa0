// The binaries under test, found one way. Both live in one build directory: this build's
// (PYLON_DEFAULT_BUILD_DIR, set by pylon_test in the root CMakeLists), or $PYLON_BUILD_DIR when
// set (e.g. to test another build's binaries).
//   ProductBinary(): `pylon`, what the image ships (allocator, agent).
//   DevBinary():     `pylon-dev`, the developer and test tools (lab, fault-proxy).
#pragma once

#include <cstdlib>
#include <string>

namespace pylon::test_support {

inline std::string BuildDir() {
  const char* dir = std::getenv("PYLON_BUILD_DIR");
  return dir != nullptr && *dir != '\0' ? std::string(dir) : std::string(PYLON_DEFAULT_BUILD_DIR);
}

inline std::string ProductBinary() { return BuildDir() + "/pylon"; }

inline std::string DevBinary() { return BuildDir() + "/pylon-dev"; }

}  // namespace pylon::test_support
