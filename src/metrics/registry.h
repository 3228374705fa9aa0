// A small thread-safe Prometheus registry rendering the text exposition format (0.0.4).
// A component owns its Registry and registers its own families; values are doubles.
//
// As in the Prometheus client libraries, a declared family exports its series at 0 from the
// declaration on, so that a dashboard or an alert (`increase(x[10m]) > 0`) sees a series before the
// first event: the one series of a family without labels, and one series per combination of
// label values when every label's values are known up front (reasons, results, families). A label
// whose values are open-ended (a pool or a Service name) cannot have its series before the value
// is known: such a family has none until one is set.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace pylon::metrics {

enum class Type { kCounter, kGauge };

// A label of a family, with every value it takes when they are known up front; `values` empty
// when they are open-ended.
struct LabelValues {
  std::string name;
  std::vector<std::string> values;
};

// When a family's series known up front appear: at 0 on declaration (the default), or only once
// set, for a family that exists in some configurations only (e.g. heartbeat gauges).
enum class Start { kAtZero, kWhenSet };

// Label pairs, e.g. {{"pool","localdual"},{"family","IPv4"}}. Order does not matter.
using Labels = std::vector<std::pair<std::string, std::string>>;

class Registry {
 public:
  // Declares a family with its labels (none: a single unlabelled series) and creates its series
  // known up front at 0 (see above). The first declaration wins; declaring again does nothing and
  // in particular keeps every value. A family first created by Set/Add takes help and type from
  // its declaration.
  void Describe(const std::string& name, const std::string& help, Type type,
                const std::vector<LabelValues>& labels = {}, Start start = Start::kAtZero);
  // Gauge: sets the value of one series (creating it).
  void Set(const std::string& name, const Labels& labels, double value);
  // Counter (or gauge): adds `delta` to one series (creating it at 0).
  void Add(const std::string& name, const Labels& labels, double delta = 1);
  // Drops one series (e.g. a pool that was deleted).
  void Remove(const std::string& name, const Labels& labels);
  // Drops every series of a family, keeping the family declared (series known up front included).
  void Clear(const std::string& name);
  // Current value of a series, 0 when absent (for tests and readiness checks).
  double Get(const std::string& name, const Labels& labels) const;
  // The whole registry in Prometheus text format, families sorted by name.
  std::string Render() const;

 private:
  struct Family {
    std::string help;
    Type type = Type::kGauge;
    bool declared = false;
    std::map<std::string, double> series;  // rendered label set ("{a=\"b\"}") → value
  };
  static std::string RenderLabels(Labels labels);
  mutable Mutex mu_;
  std::map<std::string, Family> families_ PYLON_GUARDED_BY(mu_);
};

}  // namespace pylon::metrics
