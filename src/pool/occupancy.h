// A set of occupied 128-bit values (addresses of one family) kept as merged, disjoint, inclusive
// intervals in an ordered map, so that "is x taken" and "first free value at or after x" are
// O(log k) where k is the number of intervals (k <= number of occupied values), independent of how
// large the surrounding range is. Pure; not thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>

#include "net/ip.h"

namespace pylon::pool {

class Occupancy {
 public:
  using Value = net::Uint128;

  bool Contains(Value v) const;
  // Marks v occupied; returns false (and changes nothing) if it already was.
  bool Insert(Value v);
  // Marks v free; returns false (and changes nothing) if it was not occupied.
  bool Erase(Value v);
  // The lowest free value in [from, last], if any. Requires from <= last.
  std::optional<Value> FirstFree(Value from, Value last) const;
  // The highest occupied value in [first, last], if any. Requires first <= last.
  std::optional<Value> LastOccupied(Value first, Value last) const;

  void Clear() { intervals_.clear(); }
  // Number of disjoint intervals (for tests and memory figures), not of values.
  std::size_t interval_count() const { return intervals_.size(); }

 private:
  // start -> last (inclusive). Invariant: disjoint and never adjacent (adjacent ones are merged),
  // so the value right after an interval is always free.
  std::map<Value, Value> intervals_;
};

}  // namespace pylon::pool
