#include "allocator/decision.h"

namespace pylon::allocator {

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kIgnored:
      return "Ignored";
    case Outcome::kAllocated:
      return "Allocated";
    case Outcome::kRefused:
      return "Refused";
    case Outcome::kReleased:
      return "Released";
    case Outcome::kKept:
      return "Kept";
  }
  return "?";
}

std::string_view ReasonName(Reason r) {
  switch (r) {
    case Reason::kNone:
      return "";
    case Reason::kAddressInUse:
      return "AddressInUse";
    case Reason::kOutsidePools:
      return "OutsidePools";
    case Reason::kNoSuchClass:
      return "NoSuchClass";
    case Reason::kNoSuchGroup:
      return "NoSuchServiceGroup";
    case Reason::kFamilyUnavailable:
      return "FamilyUnavailable";
    case Reason::kPoolExhausted:
      return "PoolExhausted";
    case Reason::kSharingConflict:
      return "SharingConflict";
    case Reason::kInvalidAnnotation:
      return "InvalidAnnotation";
    case Reason::kInvalidService:
      return "InvalidService";
    case Reason::kNamespaceDenied:
      return "NamespaceDenied";
    case Reason::kAmbiguousNamespaceDefault:
      return "AmbiguousNamespaceDefault";
    case Reason::kAddressConflict:
      return "AddressConflict";
    case Reason::kMultiPoolRefused:
      return "MultiPoolRefused";
  }
  return "?";
}

}  // namespace pylon::allocator
