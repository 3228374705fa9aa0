#include "agent/ownership_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "common/fd.h"
#include "common/log.h"

namespace pylon::agent {

Result<std::set<OwnedAddress>> FileOwnershipStore::Load() {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return std::set<OwnedAddress>{};
  std::ifstream in(path_);
  if (!in) return Fail(ErrorCode::kSystem, "cannot read " + path_.string());
  std::stringstream buf;
  buf << in.rdbuf();
  std::vector<std::string> issues;
  auto owned = ParseOwned(buf.str(), &issues);
  for (const auto& i : issues)
    log::Warn("skipping a bad state file entry", {{"file", path_.string()}, {"issue", i}});
  return owned;
}

Status FileOwnershipStore::Save(const std::set<OwnedAddress>& owned) {
  std::error_code ec;
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), ec);
  if (ec)
    return Fail(ErrorCode::kSystem,
                "creating " + path_.parent_path().string() + ": " + ec.message());
  const std::string tmp = path_.string() + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return FailErrno(errno, "creating " + tmp);
  const std::string text = FormatOwned(owned);
  std::size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailErrno(errno, "writing " + tmp);
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return FailErrno(errno, "fsync " + tmp);
  fd.reset();
  if (::rename(tmp.c_str(), path_.c_str()) != 0) return FailErrno(errno, "renaming " + tmp);
  return Ok();
}

}  // namespace pylon::agent
