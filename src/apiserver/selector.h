// Label selectors (=, ==, !=, in, notin, exists, !exists, gt, lt) and field selectors (=, ==, !=)
// with the parsing rules of apimachinery pkg/labels and pkg/fields. Pure.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace pylon::apiserver {

class LabelSelector {
 public:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists, kGt, kLt };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };

  // Empty text selects everything. Fails with kInvalidArgument and a message like the real
  // server's ("unable to parse requirement: ...").
  static Result<LabelSelector> Parse(std::string_view text);
  bool Matches(const std::map<std::string, std::string>& labels) const;
  bool Empty() const { return reqs_.empty(); }
  const std::vector<Requirement>& requirements() const { return reqs_; }

 private:
  std::vector<Requirement> reqs_;
};

class FieldSelector {
 public:
  struct Term {
    std::string field;
    bool negate = false;
    std::string value;
  };
  static Result<FieldSelector> Parse(std::string_view text);
  // get(field) returns the object's value for a field, or nullopt if the field is not supported
  // for the kind (the caller validates support up front with Validate()).
  bool Matches(const std::function<std::optional<std::string>(std::string_view)>& get) const;
  // Fails with "field label not supported: X" for the first unsupported field.
  Status Validate(const std::function<bool(std::string_view)>& supported) const;
  bool Empty() const { return terms_.empty(); }
  const std::vector<Term>& terms() const { return terms_; }

 private:
  std::vector<Term> terms_;
};

}  // namespace pylon::apiserver
