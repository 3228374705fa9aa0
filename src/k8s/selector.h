// Label and field selector matching as the API server applies them (equality-based subset:
// `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`; field selectors: dotted paths
// with = / == / !=). Used by FakeClient; pure.
#pragma once

#include <string_view>

#include "common/result.h"
#include "k8s/object.h"

namespace pylon::k8s {

// Validates and evaluates a label selector against metadata.labels ("" matches everything).
Result<bool> MatchesLabelSelector(const Json& object, std::string_view selector);
// Evaluates a field selector; values are compared as strings (numbers and booleans printed).
Result<bool> MatchesFieldSelector(const Json& object, std::string_view selector);

}  // namespace pylon::k8s
