#include "support/k8s/fake_event_recorder.h"

namespace pylon::k8s {

void FakeEventRecorder::Event(const ObjectReference& object, EventLevel level,
                              std::string_view reason, std::string_view message) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::string(level == EventLevel::kWarning ? "Warning " : "Normal ") +
                    std::string(reason) + " " + std::string(message) + " (" + object.kind + " " +
                    object.ns + "/" + object.name + ")");
}

std::vector<std::string> FakeEventRecorder::Events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

}  // namespace pylon::k8s
