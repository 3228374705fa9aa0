#include "pool/occupancy.h"

#include <iterator>

namespace pylon::pool {
namespace {
constexpr net::Uint128 kMax = ~net::Uint128{0};
}  // namespace

bool Occupancy::Contains(Value v) const {
  auto it = intervals_.upper_bound(v);
  if (it == intervals_.begin()) return false;
  --it;
  return v <= it->second;
}

bool Occupancy::Insert(Value v) {
  auto next = intervals_.upper_bound(v);  // first interval starting after v
  std::map<Value, Value>::iterator prev = intervals_.end();
  if (next != intervals_.begin()) {
    prev = std::prev(next);
    if (v <= prev->second) return false;  // already inside prev
  }
  const bool join_prev = prev != intervals_.end() && prev->second + 1 == v;
  const bool join_next = next != intervals_.end() && v != kMax && next->first == v + 1;
  if (join_prev && join_next) {
    prev->second = next->second;
    intervals_.erase(next);
  } else if (join_prev) {
    prev->second = v;
  } else if (join_next) {
    const Value last = next->second;
    intervals_.emplace_hint(intervals_.erase(next), v, last);
  } else {
    intervals_.emplace_hint(next, v, v);
  }
  return true;
}

bool Occupancy::Erase(Value v) {
  auto it = intervals_.upper_bound(v);
  if (it == intervals_.begin()) return false;
  --it;
  const Value start = it->first;
  const Value last = it->second;
  if (v > last) return false;
  if (start == v && last == v) {
    intervals_.erase(it);
  } else if (start == v) {
    intervals_.emplace_hint(intervals_.erase(it), v + 1, last);
  } else if (last == v) {
    it->second = v - 1;
  } else {
    it->second = v - 1;
    intervals_.emplace_hint(std::next(it), v + 1, last);
  }
  return true;
}

std::optional<Occupancy::Value> Occupancy::FirstFree(Value from, Value last) const {
  auto it = intervals_.upper_bound(from);
  if (it == intervals_.begin()) return from;
  --it;
  if (from > it->second) return from;
  // from is inside [it->first, it->second]; the value after it is free (intervals never touch).
  if (it->second >= last) return std::nullopt;
  return it->second + 1;
}

std::optional<Occupancy::Value> Occupancy::LastOccupied(Value first, Value last) const {
  auto it = intervals_.upper_bound(last);
  if (it == intervals_.begin()) return std::nullopt;
  --it;
  // it is the last interval starting at or before `last`.
  if (it->second < first) return std::nullopt;
  return it->second < last ? it->second : last;
}

}  // namespace pylon::pool
