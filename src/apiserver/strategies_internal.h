// Factories of the kind-specific strategies (implementation detail of strategy.cc).
#pragma once

#include <memory>

#include "apiserver/strategy.h"

namespace pylon::apiserver {

std::unique_ptr<Strategy> MakeServiceStrategy(TypePtr type, ServiceAllocator* alloc);
std::unique_ptr<Strategy> MakeCrdStrategy(TypePtr type);
std::unique_ptr<Strategy> MakeCustomResourceStrategy(TypePtr type);

}  // namespace pylon::apiserver
