#include "lab/files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

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

std::string LogTail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += "\n    " + all[i];
  }
  return out;
}

bool WaitForPath(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace pylon::lab
