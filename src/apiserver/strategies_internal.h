// Factories of the kind-specific strategies (implementation detail of strategy.cc).
#pragma once

#include <memory>

#include "apiserver/strategy.h"

namespace pylon::apiserver {

std::unique_ptr<Strategy> MakeServiceStrategy(TypePtr type, ServiceAllocator* alloc);
std::unique_ptr<Strategy> MakeCrdStrategy(TypePtr type);
std::unique_ptr<Strategy> MakeCustomResourceStrategy(TypePtr type);
std::unique_ptr<Strategy> MakeDeploymentStrategy(TypePtr type);
std::unique_ptr<Strategy> MakeDaemonSetStrategy(TypePtr type);
std::unique_ptr<Strategy> MakeSecretStrategy(TypePtr type);
std::unique_ptr<Strategy> MakeConfigMapStrategy(TypePtr type);
// ClusterRole, ClusterRoleBinding, Role, RoleBinding (by type->resource).
std::unique_ptr<Strategy> MakeRbacStrategy(TypePtr type);

}  // namespace pylon::apiserver
