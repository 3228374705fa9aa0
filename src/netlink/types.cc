#include "netlink/types.h"

#include <linux/if.h>

namespace pylon::netlink {

namespace {
constexpr std::uint8_t kOperUnknown = 0;  // IF_OPER_UNKNOWN: drivers without operstate support
constexpr std::uint8_t kOperUp = 6;       // IF_OPER_UP
}  // namespace

bool LinkInfo::admin_up() const { return (flags & IFF_UP) != 0; }
bool LinkInfo::lower_up() const { return (flags & IFF_LOWER_UP) != 0; }
bool LinkInfo::operational() const {
  return admin_up() && lower_up() && (operstate == kOperUp || operstate == kOperUnknown);
}

}  // namespace pylon::netlink
