// An EventRecorder that keeps events in memory, for controller tests.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/event_recorder.h"

namespace pylon::k8s {

// Keeps events as "<Type> <Reason> <message> (<Kind> <ns>/<name>)" strings. Thread-safe.
class FakeEventRecorder final : public EventRecorder {
 public:
  void Event(const ObjectReference& object, EventLevel level, std::string_view reason,
             std::string_view message) override;
  std::vector<std::string> Events() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

}  // namespace pylon::k8s
