#include "netlink/ops.h"

namespace pylon::netlink {

std::string_view VirtualLinkKindName(VirtualLinkKind k) {
  switch (k) {
    case VirtualLinkKind::kDummy:
      return "dummy";
    case VirtualLinkKind::kBridge:
      return "bridge";
    case VirtualLinkKind::kOther:
      return "other";
  }
  return "other";
}

Result<VirtualLink> EnsureVirtualLink(Netlink& nl, std::string_view name) {
  VirtualLink out;
  auto existing = nl.GetLink(name);
  if (existing) {
    out.link = std::move(*existing);
    out.kind = out.link.kind == "dummy"    ? VirtualLinkKind::kDummy
               : out.link.kind == "bridge" ? VirtualLinkKind::kBridge
                                           : VirtualLinkKind::kOther;
    if (out.kind == VirtualLinkKind::kOther) {
      out.note =
          "existing link '" + std::string(name) + "' of kind '" + out.link.kind + "' reused as is";
    }
  } else if (existing.error().code() != ErrorCode::kNotFound) {
    return tl::unexpected(existing.error());
  } else {
    auto created = nl.CreateLink(name, "dummy");
    out.kind = VirtualLinkKind::kDummy;
    if (!created && created.error().code() == ErrorCode::kUnsupported) {
      out.note = "kernel has no dummy link kind (" + created.error().message() +
                 "); created a bridge with no ports instead: it may show no carrier, but its "
                 "addresses are local and visible to routing software";
      created = nl.CreateLink(name, "bridge");
      out.kind = VirtualLinkKind::kBridge;
    }
    if (!created) return tl::unexpected(created.error().Wrap("create " + std::string(name)));
    out.link = std::move(*created);
    out.created = true;
  }
  if (!out.link.admin_up()) {
    if (auto st = nl.SetLinkUp(out.link.index, true); !st) {
      if (out.created) (void)nl.DeleteLink(out.link.index);  // not left behind, half made
      return tl::unexpected(st.error());
    }
    auto refreshed = nl.GetLink(name);
    if (!refreshed) return tl::unexpected(refreshed.error());
    out.link = std::move(*refreshed);
  }
  return out;
}

}  // namespace pylon::netlink
