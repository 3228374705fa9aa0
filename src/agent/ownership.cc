#include "agent/ownership.h"

#include <sstream>
#include <vector>

namespace pylon::agent {

std::string FormatOwned(const std::set<OwnedAddress>& owned) {
  std::string out;
  for (const auto& o : owned) out += o.interface + " " + o.address.ToString() + "\n";
  return out;
}

std::set<OwnedAddress> ParseOwned(const std::string& text, std::vector<std::string>* issues) {
  std::set<OwnedAddress> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    auto space = line.find(' ');
    if (space == std::string::npos || space == 0) {
      if (issues) issues->push_back("line " + std::to_string(n) + ": no interface/address pair");
      continue;
    }
    auto prefix = net::Prefix::Parse(line.substr(space + 1));
    if (!prefix) {
      if (issues) issues->push_back("line " + std::to_string(n) + ": " + prefix.error().message());
      continue;
    }
    out.insert(OwnedAddress{line.substr(0, space), *prefix});
  }
  return out;
}

}  // namespace pylon::agent
