// core/v1 Secret and ConfigMap as kube-apiserver stores them (pkg/registry/core/{secret,configmap},
// pkg/apis/core/validation): base64 `data` (a decode error is a 400), Secret `stringData` merged
// into `data` and never stored, type defaulting and per-type required keys, config key rules and
// `immutable`.
#include "apiserver/strategies_internal.h"

namespace pylon::apiserver {
namespace {

const Json& Member(const Json& obj, std::string_view key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string DecodeError(const std::string& kind, const std::string& what) {
  return kind + " in version \"v1\" cannot be handled as a " + kind + ": " + what;
}

// Go's encoding/base64 error: the offset of the first byte it cannot take.
std::string Base64Problem(const std::string& s) {
  auto alpha = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
  };
  std::size_t i = 0;
  while (i < s.size() && alpha(s[i])) ++i;
  std::size_t data_end = i;
  while (i < s.size() && s[i] == '=') ++i;
  bool ok = i == s.size() && (s.size() % 4 == 0) && s.size() - data_end <= 2;
  if (ok && Base64Decode(s)) return "";
  std::size_t at = i < s.size() ? i : (s.size() / 4) * 4;
  return "illegal base64 data at input byte " + std::to_string(at);
}

// A map of strings at `key` (a []byte map must hold base64 strings).
std::optional<ApiError> CheckByteMap(const Json& obj, const char* key, const std::string& kind) {
  const Json& m = Member(obj, key);
  if (m.is_null()) return std::nullopt;
  if (!m.is_object())
    return BadRequestError(DecodeError(
        kind, "json: cannot unmarshal " + std::string(m.is_array() ? "array" : m.type_name()) +
                  " into Go struct field " + kind + "." + key + " of type map[string][]uint8"));
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (it.value().is_null()) continue;
    if (!it.value().is_string())
      return BadRequestError(DecodeError(kind, "json: cannot unmarshal " +
                                                   std::string(it.value().type_name()) +
                                                   " into Go value of type []uint8"));
    std::string problem = Base64Problem(it.value().get<std::string>());
    if (!problem.empty()) return BadRequestError(DecodeError(kind, problem));
  }
  return std::nullopt;
}

std::optional<ApiError> CheckStringMap(const Json& obj, const char* key, const std::string& kind) {
  const Json& m = Member(obj, key);
  if (m.is_null()) return std::nullopt;
  bool ok = m.is_object();
  std::string bad = m.type_name();
  if (ok)
    for (auto it = m.begin(); it != m.end(); ++it)
      if (!it.value().is_string() && !it.value().is_null()) {
        ok = false;
        bad = it.value().type_name();
      }
  if (ok) return std::nullopt;
  return BadRequestError(
      DecodeError(kind, "json: cannot unmarshal " + bad + " into Go struct field " + kind + "." +
                            key + " of type " + (m.is_object() ? "string" : "map[string]string")));
}

bool IsConfigKey(const std::string& k) {
  if (k.empty() || k.size() > 253 || k == "." || k == ".." || k.rfind("..", 0) == 0) return false;
  for (char c : k)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return false;
  return true;
}

void ValidateKeys(const Json& obj, const char* key, FieldErrors* errs) {
  const Json& m = Member(obj, key);
  if (!m.is_object()) return;
  for (auto it = m.begin(); it != m.end(); ++it)
    if (!IsConfigKey(it.key()))
      errs->push_back(FieldError::Invalid(
          std::string(key) + "[" + it.key() + "]", it.key(),
          "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
          "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
          "'[-._a-zA-Z0-9]+')"));
}

// `immutable: true` freezes the data keys and the flag itself.
void ValidateImmutable(const Json& obj, const Json& old, std::initializer_list<const char*> keys,
                       FieldErrors* errs) {
  if (!BoolOr(old, "immutable", false)) return;
  if (!BoolOr(obj, "immutable", false))
    errs->push_back(
        FieldError::Forbidden("immutable", "field is immutable when `immutable` is set"));
  for (const char* k : keys)
    if (!SemanticEqual(Member(obj, k), Member(old, k)))
      errs->push_back(FieldError::Forbidden(k, "field is immutable when `immutable` is set"));
}

class SecretStrategy final : public Strategy {
 public:
  using Strategy::Strategy;

  std::optional<ApiError> Decode(Json& obj) const override {
    if (auto e = CheckByteMap(obj, "data", "Secret")) return e;
    if (auto e = CheckStringMap(obj, "stringData", "Secret")) return e;
    // A copy: adding "data" below may move the other members of `obj`.
    if (Json sd = Member(obj, "stringData"); sd.is_object()) {
      Json& data = ObjectAt(obj, "data");
      for (auto it = sd.begin(); it != sd.end(); ++it)
        if (it.value().is_string()) data[it.key()] = Base64Encode(it.value().get<std::string>());
    }
    obj.erase("stringData");
    return std::nullopt;
  }
  void PrepareForCreate(Json& obj) const override { Default(obj); }
  void PrepareForUpdate(Json& obj, const Json& old) const override {
    (void)old;
    Default(obj);
  }
  FieldErrors Validate(const Json& obj, const Json* old) const override {
    FieldErrors errs;
    ValidateKeys(obj, "data", &errs);
    std::string type = StrOr(obj, "type");
    const Json& data = Member(obj, "data");
    auto require = [&](const char* key) {
      if (!data.is_object() || !data.contains(key))
        errs.push_back(FieldError::Required(std::string("data[") + key + "]"));
    };
    if (type == "kubernetes.io/tls") {
      require("tls.crt");
      require("tls.key");
    } else if (type == "kubernetes.io/dockerconfigjson") {
      require(".dockerconfigjson");
    } else if (type == "kubernetes.io/dockercfg") {
      require(".dockercfg");
    } else if (type == "kubernetes.io/ssh-auth") {
      require("ssh-privatekey");
    } else if (type == "kubernetes.io/service-account-token") {
      if (GetString(obj, {"metadata", "annotations", "kubernetes.io/service-account.name"}).empty())
        errs.push_back(
            FieldError::Required("metadata.annotations[kubernetes.io/service-account.name]"));
    }
    if (old) {
      if (type != StrOr(*old, "type"))
        errs.push_back(FieldError::Invalid("type", type, "field is immutable"));
      ValidateImmutable(obj, *old, {"data"}, &errs);
    }
    return errs;
  }
  void Canonicalize(Json& obj) const override {
    OrderKeys(obj, {"kind", "apiVersion", "metadata", "immutable", "data", "type"});
  }
  std::optional<std::string> Field(const Json& obj, std::string_view f) const override {
    if (f == "type") return StrOr(obj, "type");
    return std::nullopt;
  }

 private:
  static void Default(Json& obj) {
    if (StrOr(obj, "type").empty()) obj["type"] = "Opaque";
  }
};

class ConfigMapStrategy final : public Strategy {
 public:
  using Strategy::Strategy;

  std::optional<ApiError> Decode(Json& obj) const override {
    if (auto e = CheckStringMap(obj, "data", "ConfigMap")) return e;
    return CheckByteMap(obj, "binaryData", "ConfigMap");
  }
  FieldErrors Validate(const Json& obj, const Json* old) const override {
    FieldErrors errs;
    ValidateKeys(obj, "data", &errs);
    ValidateKeys(obj, "binaryData", &errs);
    const Json& data = Member(obj, "data");
    const Json& bin = Member(obj, "binaryData");
    if (data.is_object() && bin.is_object())
      for (auto it = bin.begin(); it != bin.end(); ++it)
        if (data.contains(it.key()))
          errs.push_back(FieldError::Invalid("data[" + it.key() + "]", it.key(),
                                             "duplicate of key present in binaryData"));
    if (old) ValidateImmutable(obj, *old, {"data", "binaryData"}, &errs);
    return errs;
  }
  void Canonicalize(Json& obj) const override {
    OrderKeys(obj, {"kind", "apiVersion", "metadata", "immutable", "data", "binaryData"});
  }
};

}  // namespace

std::unique_ptr<Strategy> MakeSecretStrategy(TypePtr type) {
  return std::make_unique<SecretStrategy>(std::move(type));
}
std::unique_ptr<Strategy> MakeConfigMapStrategy(TypePtr type) {
  return std::make_unique<ConfigMapStrategy>(std::move(type));
}

}  // namespace pylon::apiserver
