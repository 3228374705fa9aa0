#include "metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pylon::metrics {
namespace {

// The text format's escapes: backslash and newline; in label values also the double quote.
std::string Escape(std::string_view v, bool quote) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"' && quote)
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string Registry::RenderLabels(Labels labels) {
  if (labels.empty()) return "";
  std::sort(labels.begin(), labels.end());
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ",";
    out += labels[i].first + "=\"" + Escape(labels[i].second, true) + "\"";
  }
  return out + "}";
}

void Registry::Describe(const std::string& name, const std::string& help, Type type,
                        const std::vector<LabelValues>& labels, Start start) {
  // Every combination of the known label values; none when a label is open-ended.
  std::vector<Labels> initial;
  if (start == Start::kAtZero) {
    initial.emplace_back();
    for (const LabelValues& l : labels) {
      std::vector<Labels> next;
      for (const Labels& partial : initial) {
        for (const std::string& v : l.values) {
          next.push_back(partial);
          next.back().emplace_back(l.name, v);
        }
      }
      initial = std::move(next);
    }
  }
  std::vector<std::string> keys;
  keys.reserve(initial.size());
  for (const Labels& l : initial) keys.push_back(RenderLabels(l));

  MutexLock lock(mu_);
  Family& fam = families_[name];
  if (fam.declared) return;
  fam.declared = true;
  fam.help = help;
  fam.type = type;
  for (const std::string& key : keys) fam.series.try_emplace(key, 0);
}

void Registry::Set(const std::string& name, const Labels& labels, double value) {
  std::string key = RenderLabels(labels);
  MutexLock lock(mu_);
  families_[name].series[key] = value;
}

void Registry::Add(const std::string& name, const Labels& labels, double delta) {
  std::string key = RenderLabels(labels);
  MutexLock lock(mu_);
  families_[name].series[key] += delta;
}

void Registry::Remove(const std::string& name, const Labels& labels) {
  std::string key = RenderLabels(labels);
  MutexLock lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) it->second.series.erase(key);
}

void Registry::Clear(const std::string& name) {
  MutexLock lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) it->second.series.clear();
}

double Registry::Get(const std::string& name, const Labels& labels) const {
  std::string key = RenderLabels(labels);
  MutexLock lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto s = it->second.series.find(key);
  return s == it->second.series.end() ? 0 : s->second;
}

std::string Registry::Render() const {
  MutexLock lock(mu_);
  std::string out;
  for (const auto& [name, fam] : families_) {
    if (!fam.help.empty()) out += "# HELP " + name + " " + Escape(fam.help, false) + "\n";
    out += "# TYPE " + name + (fam.type == Type::kCounter ? " counter\n" : " gauge\n");
    for (const auto& [labels, value] : fam.series) {
      out += name + labels + " " + FormatValue(value) + "\n";
    }
  }
  return out;
}

}  // namespace pylon::metrics
