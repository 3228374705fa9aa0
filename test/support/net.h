// Addresses from literals, for tests: the text must parse (a typo in a test aborts it at once).
#pragma once

#include <string_view>

#include "net/ip.h"
#include "net/mac.h"

namespace pylon::test_support {

inline net::IpAddress Ip(std::string_view s) { return *net::IpAddress::Parse(s); }
inline net::Prefix Pfx(std::string_view s) { return *net::Prefix::Parse(s); }
inline net::MacAddress Mac(std::string_view s) { return *net::MacAddress::Parse(s); }

}  // namespace pylon::test_support
