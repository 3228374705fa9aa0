// Checking a metrics exposition (metrics::Registry::Render) in tests: the families a component
// exports and their series before anything happened.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pylon::test_support {

// The sample lines of an exposition, by family: name → {"{labels} value", ...}.
inline std::map<std::string, std::set<std::string>> Samples(const std::string& text) {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto end = line.find_first_of("{ ");
    out[line.substr(0, end)].insert(line.substr(end));
  }
  return out;
}

struct MetricFamily {
  const char* name;
  const char* type;                // as in "# TYPE"
  std::set<std::string> at_start;  // "{labels} 0" lines; empty: no series yet
};

// `text` has exactly `families`, each with its type and its series at start, and no other.
inline void ExpectFamiliesAtStart(const std::string& text,
                                  const std::vector<MetricFamily>& families) {
  const auto samples = Samples(text);
  std::set<std::string> names;
  for (const MetricFamily& f : families) {
    SCOPED_TRACE(f.name);
    names.insert(f.name);
    EXPECT_NE(text.find(std::string("# TYPE ") + f.name + " " + f.type + "\n"), std::string::npos)
        << text;
    auto it = samples.find(f.name);
    EXPECT_EQ(it == samples.end() ? std::set<std::string>{} : it->second, f.at_start) << text;
  }
  for (const auto& [name, lines] : samples) EXPECT_TRUE(names.count(name)) << "unlisted " << name;
}

}  // namespace pylon::test_support
