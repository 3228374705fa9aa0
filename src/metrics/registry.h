// A small thread-safe Prometheus registry rendering the text exposition format (0.0.4).
// A component owns its Registry and registers its own families; values are doubles.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pylon::metrics {

enum class Type { kCounter, kGauge };

// Label pairs, e.g. {{"pool","localdual"},{"family","IPv4"}}. Order does not matter.
using Labels = std::vector<std::pair<std::string, std::string>>;

class Registry {
 public:
  // Declares a family. Calling it again with the same name is a no-op.
  void Describe(const std::string& name, const std::string& help, Type type);
  // Gauge: sets the value of one series (creating it).
  void Set(const std::string& name, const Labels& labels, double value);
  // Counter (or gauge): adds `delta` to one series (creating it at 0).
  void Add(const std::string& name, const Labels& labels, double delta = 1);
  // Drops one series (e.g. a pool that was deleted).
  void Remove(const std::string& name, const Labels& labels);
  // Drops every series of a family, keeping the family declared.
  void Clear(const std::string& name);
  // Current value of a series, 0 when absent (for tests and readiness checks).
  double Get(const std::string& name, const Labels& labels) const;
  // The whole registry in Prometheus text format, families sorted by name.
  std::string Render() const;

 private:
  struct Family {
    std::string help;
    Type type = Type::kGauge;
    std::map<std::string, double> series;  // rendered label set ("{a=\"b\"}") → value
  };
  static std::string RenderLabels(Labels labels);
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace pylon::metrics
