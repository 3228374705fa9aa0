// Per-kind behaviour of the store (the registry "strategies" of kube-apiserver): defaulting,
// validation, status/main-resource separation, allocation of cluster IPs and node ports, and the
// fields each kind supports in field selectors. Called with the store lock held; not thread-safe
// on their own.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "apiserver/api_error.h"
#include "apiserver/json_util.h"
#include "apiserver/resource.h"
#include "apiserver/service_alloc.h"

namespace pylon::apiserver {

class Strategy {
 public:
  explicit Strategy(TypePtr type) : type_(std::move(type)) {}
  virtual ~Strategy() = default;

  const ResourceType& type() const { return *type_; }
  // The store sets the wall time of the current operation before calling any hook.
  void set_now(WallTime now) { now_ = now; }

  // Decoding of a create or update body before anything else (the v1 → internal conversion of the
  // real server): type checks a Go decoder would make and conversions such as Secret stringData →
  // data. An error is a 400 BadRequest; `obj` may be modified.
  virtual std::optional<ApiError> Decode(Json& obj) const {
    (void)obj;
    return std::nullopt;
  }
  // Create: defaults and clearing of server-owned parts (status when a subresource exists).
  virtual void PrepareForCreate(Json& obj) const;
  // Main-resource update: by default keeps the old status when a status subresource exists.
  virtual void PrepareForUpdate(Json& obj, const Json& old) const;
  // /status update: by default keeps the old spec (built-in kinds).
  virtual void PrepareForStatusUpdate(Json& obj, const Json& old) const;
  // Validation of a create (old == nullptr) or main-resource update.
  virtual FieldErrors Validate(const Json& obj, const Json* old) const;
  virtual FieldErrors ValidateStatus(const Json& obj, const Json& old) const;
  // Claims resources (cluster IPs, node ports) the object needs that `old` does not hold; on
  // failure claims nothing. Release() frees what `obj` holds and `keep` does not.
  virtual FieldErrors Allocate(Json& obj, const Json* old);
  virtual void Release(const Json& obj, const Json* keep);

  // Puts kind-specific keys in the order the real server serializes them (Go struct order).
  virtual void Canonicalize(Json& obj) const { (void)obj; }

  virtual bool AllowUnconditionalUpdate() const { return false; }
  virtual bool ReturnDeletedObject() const { return false; }
  virtual bool HasGeneration() const { return false; }
  // With HasGeneration: whether an update from `old` to `obj` bumps metadata.generation. Default:
  // any change outside metadata (and outside status when a status subresource exists).
  virtual bool GenerationChanged(const Json& obj, const Json& old) const;
  // Selectable fields beyond metadata.name and metadata.namespace; nullopt = unsupported.
  virtual std::optional<std::string> Field(const Json& obj, std::string_view field) const;
  // The name rule: "subdomain" (DNS-1123 subdomain), "label1123", "label1035", "pathsegment"
  // (anything but "." and ".." without '/' or '%': the RBAC kinds).
  virtual std::string NameRule() const { return "subdomain"; }

 protected:
  TypePtr type_;
  WallTime now_{};
};

// Selectable field value for any kind: metadata.name / metadata.namespace, then the kind's own.
std::optional<std::string> FieldValue(const Strategy& s, const Json& obj, std::string_view field);

std::unique_ptr<Strategy> MakeStrategy(TypePtr type, ServiceAllocator* services);

// Validation helpers shared by strategies.
bool IsDns1123Subdomain(std::string_view s);
bool IsDns1123Label(std::string_view s);
bool IsDns1035Label(std::string_view s);
bool IsQualifiedName(std::string_view s);

}  // namespace pylon::apiserver
