// Standard base64 (RFC 4648, with padding) as used by kubeconfig `*-data` fields. Pure.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace pylon::k8s {

// Decodes standard base64; ASCII whitespace is ignored, padding is optional.
Result<std::string> Base64Decode(std::string_view text);
std::string Base64Encode(std::string_view bytes);

}  // namespace pylon::k8s
