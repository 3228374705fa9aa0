#include "netlink/netlink_impl.h"

#include <fcntl.h>
#include <linux/rtnetlink.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>

#include "common/log.h"
#include "netlink/select.h"

namespace pylon::netlink {
namespace {

template <typename T, typename ParseFn>
Result<std::vector<T>> ParseAll(const Replies& replies, std::uint16_t type, ParseFn parse,
                                std::string_view context) {
  std::vector<T> out;
  for (const Message& m : replies) {
    auto views = SplitMessages(m);
    if (!views) return tl::unexpected(views.error().Wrap(std::string(context)));
    for (const MessageView& v : *views) {
      if (v.type != type) continue;
      auto item = parse(v);
      if (!item) {
        if (item.error().code() == ErrorCode::kUnsupported) continue;  // other families
        return tl::unexpected(item.error().Wrap(std::string(context)));
      }
      out.push_back(std::move(*item));
    }
  }
  return out;
}

class NotificationSource final : public EventSource {
 public:
  explicit NotificationSource(NotificationSocket s) : socket_(std::move(s)) {}
  Result<std::vector<Event>> Poll(std::chrono::milliseconds timeout) override {
    return socket_.Poll(timeout);
  }
  int fd() const override { return socket_.fd(); }

 private:
  NotificationSocket socket_;
};

}  // namespace

Result<std::unique_ptr<NetlinkImpl>> NetlinkImpl::Create(std::filesystem::path sysctl_root) {
  auto socket = NetlinkSocket::Open();
  if (!socket) return tl::unexpected(socket.error());
  bool proto = false;
  utsname u{};
  if (::uname(&u) == 0) {
    auto v = ParseKernelRelease(u.release);
    proto = v && KernelSupportsAddressProto(*v);
    if (!proto) {
      log::Warn("kernel lacks IFA_PROTO (needs 6.1+): own addresses are not tagged",
                {{"release", u.release}});
    }
  }
  return std::unique_ptr<NetlinkImpl>(
      new NetlinkImpl(std::move(*socket), std::move(sysctl_root), proto));
}

Result<std::vector<LinkInfo>> NetlinkImpl::ListLinks() {
  auto r = socket_.RoundTrip(BuildGetLinks(), "list links");
  if (!r) return tl::unexpected(r.error());
  return ParseAll<LinkInfo>(*r, RTM_NEWLINK, ParseLink, "list links");
}

Result<LinkInfo> NetlinkImpl::GetLink(std::string_view name) {
  auto req = BuildGetLinkByName(name);
  if (!req) return tl::unexpected(req.error());
  const std::string context = "get link " + std::string(name);
  auto r = socket_.RoundTrip(*req, context);
  if (!r) {
    if (r.error().sys_errno() == ENODEV) {
      return Fail(ErrorCode::kNotFound, context + ": no such interface");
    }
    return tl::unexpected(r.error());
  }
  auto links = ParseAll<LinkInfo>(*r, RTM_NEWLINK, ParseLink, context);
  if (!links) return tl::unexpected(links.error());
  if (links->empty()) return Fail(ErrorCode::kNotFound, context + ": no such interface");
  return links->front();
}

Result<std::vector<AddressInfo>> NetlinkImpl::ListAddresses(std::optional<net::Family> family) {
  auto r = socket_.RoundTrip(BuildGetAddresses(family), "list addresses");
  if (!r) return tl::unexpected(r.error());
  return ParseAll<AddressInfo>(*r, RTM_NEWADDR, ParseAddress, "list addresses");
}

Result<std::vector<RouteInfo>> NetlinkImpl::ListRoutes(net::Family family) {
  auto r = socket_.RoundTrip(BuildGetRoutes(family), "list routes");
  if (!r) return tl::unexpected(r.error());
  return ParseAll<RouteInfo>(*r, RTM_NEWROUTE, ParseRoute, "list routes");
}

Status NetlinkImpl::AddAddress(const AddressSpec& spec) {
  auto req = BuildNewAddress(spec);
  if (!req) return tl::unexpected(req.error());
  auto r = socket_.RoundTrip(*req, "add address " + spec.address.ToString() + " on ifindex " +
                                       std::to_string(spec.ifindex));
  if (!r) return tl::unexpected(r.error());
  return Ok();
}

Status NetlinkImpl::RemoveAddress(int ifindex, const net::Prefix& address) {
  if (ifindex <= 0) return Fail(ErrorCode::kInvalidArgument, "remove address: ifindex must be > 0");
  auto r = socket_.RoundTrip(
      BuildDeleteAddress(ifindex, address),
      "remove address " + address.ToString() + " from ifindex " + std::to_string(ifindex));
  if (!r) return tl::unexpected(r.error());
  return Ok();
}

Result<LinkInfo> NetlinkImpl::CreateLink(std::string_view name, std::string_view kind) {
  auto req = BuildNewLink(name, kind);
  if (!req) return tl::unexpected(req.error());
  auto r = socket_.RoundTrip(*req, "create " + std::string(kind) + " link " + std::string(name));
  if (!r) return tl::unexpected(r.error());
  return GetLink(name);
}

Status NetlinkImpl::SetLinkUp(int ifindex, bool up) {
  auto r = socket_.RoundTrip(
      BuildSetLinkUp(ifindex, up),
      std::string("set link ") + (up ? "up" : "down") + " ifindex " + std::to_string(ifindex));
  if (!r) return tl::unexpected(r.error());
  return Ok();
}

Status NetlinkImpl::DeleteLink(int ifindex) {
  auto r =
      socket_.RoundTrip(BuildDeleteLink(ifindex), "delete link ifindex " + std::to_string(ifindex));
  if (!r) return tl::unexpected(r.error());
  return Ok();
}

Result<std::string> NetlinkImpl::ReadSysctl(const SysctlKey& key) {
  auto rel = SysctlRelativePath(key);
  if (!rel) return tl::unexpected(rel.error());
  const std::string path = (sysctl_root_ / *rel).string();
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return FailErrno(errno, "read sysctl " + path);
  std::string out;
  char buf[256];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailErrno(errno, "read sysctl " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

Status NetlinkImpl::WriteSysctl(const SysctlKey& key, std::string_view value) {
  auto rel = SysctlRelativePath(key);
  if (!rel) return tl::unexpected(rel.error());
  const std::string path = (sysctl_root_ / *rel).string();
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_TRUNC));
  if (!fd) return FailErrno(errno, "write sysctl " + path);
  std::string text(value);
  text += '\n';
  ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n < 0) return FailErrno(errno, "write sysctl " + path);
  if (static_cast<std::size_t>(n) != text.size()) {
    return Fail(ErrorCode::kSystem, "write sysctl " + path + ": short write");
  }
  return Ok();
}

Result<std::unique_ptr<EventSource>> NetlinkImpl::Subscribe() {
  auto s = NotificationSocket::Open();
  if (!s) return tl::unexpected(s.error());
  return std::unique_ptr<EventSource>(new NotificationSource(std::move(*s)));
}

}  // namespace pylon::netlink
