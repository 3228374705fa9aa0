#include "lab/files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace pylon::lab {

Status WriteTextFile(const std::string& path, const std::string& text, std::optional<mode_t> mode) {
  {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    out.close();
    if (!out) return Fail(ErrorCode::kSystem, "cannot write " + path);
  }
  if (mode && chmod(path.c_str(), *mode) != 0) {
    return Fail(ErrorCode::kSystem, "chmod " + path + ": " + std::strerror(errno));
  }
  return Ok();
}

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace pylon::lab
