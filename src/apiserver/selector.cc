#include "apiserver/selector.h"

#include <cctype>
#include <charconv>

namespace pylon::apiserver {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }
std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool ValidLabelValue(std::string_view v) {
  if (v.size() > 63) return false;
  if (v.empty()) return true;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  for (char c : v)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

bool ValidLabelKey(std::string_view k) {
  std::size_t slash = k.find('/');
  std::string_view name = k;
  if (slash != std::string_view::npos) {
    std::string_view prefix = k.substr(0, slash);
    name = k.substr(slash + 1);
    if (prefix.empty() || prefix.size() > 253) return false;
    for (char c : prefix)
      if (!(std::islower(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'))
        return false;
  }
  return !name.empty() && ValidLabelValue(name);
}

tl::unexpected<Error> ParseError(const std::string& why) {
  return Fail(ErrorCode::kInvalidArgument, "unable to parse requirement: " + why);
}

// Splits on commas that are not inside parentheses.
std::vector<std::string_view> SplitTop(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')') --depth;
    if (s[i] == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

}  // namespace

Result<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelSelector sel;
  text = Trim(text);
  if (text.empty()) return sel;
  for (std::string_view part : SplitTop(text)) {
    part = Trim(part);
    if (part.empty()) return ParseError("found '', expected: !, identifier, or 'end of string'");
    Requirement r;
    if (part.front() == '!') {
      r.key = std::string(Trim(part.substr(1)));
      r.op = Op::kNotExists;
    } else {
      // Find the operator: "!=", "==", "=", ">", "<", " in ", " notin ".
      std::size_t i = 0;
      while (i < part.size() && !IsSpace(part[i]) && part[i] != '=' && part[i] != '!' &&
             part[i] != '>' && part[i] != '<' && part[i] != '(')
        ++i;
      r.key = std::string(part.substr(0, i));
      std::string_view rest = Trim(part.substr(i));
      if (rest.empty()) {
        r.op = Op::kExists;
      } else if (rest.substr(0, 2) == "!=") {
        r.op = Op::kNotEquals;
        r.values.emplace_back(Trim(rest.substr(2)));
      } else if (rest.substr(0, 2) == "==") {
        r.op = Op::kEquals;
        r.values.emplace_back(Trim(rest.substr(2)));
      } else if (rest.front() == '=') {
        r.op = Op::kEquals;
        r.values.emplace_back(Trim(rest.substr(1)));
      } else if (rest.front() == '>' || rest.front() == '<') {
        r.op = rest.front() == '>' ? Op::kGt : Op::kLt;
        std::string_view num = Trim(rest.substr(1));
        long long n = 0;
        auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
        if (ec != std::errc() || p != num.data() + num.size())
          return ParseError("for 'Gt', 'Lt' operators, the value must be an integer");
        r.values.emplace_back(num);
      } else if (rest.substr(0, 2) == "in" || rest.substr(0, 5) == "notin") {
        bool notin = rest.substr(0, 5) == "notin";
        r.op = notin ? Op::kNotIn : Op::kIn;
        std::string_view set = Trim(rest.substr(notin ? 5 : 2));
        if (set.size() < 2 || set.front() != '(' || set.back() != ')')
          return ParseError("found '" + std::string(set) + "', expected: '('");
        set = set.substr(1, set.size() - 2);
        std::size_t start = 0;
        for (std::size_t j = 0; j <= set.size(); ++j) {
          if (j == set.size() || set[j] == ',') {
            r.values.emplace_back(Trim(set.substr(start, j - start)));
            start = j + 1;
          }
        }
      } else {
        return ParseError("found '" + std::string(rest) +
                          "', expected: in, notin, =, ==, !=, gt, lt");
      }
    }
    if (!ValidLabelKey(r.key))
      return ParseError("key: Invalid value: \"" + r.key +
                        "\": name part must consist of alphanumeric characters, '-', '_' or '.'");
    for (const auto& v : r.values) {
      if (r.op != Op::kGt && r.op != Op::kLt && !ValidLabelValue(v))
        return ParseError("values[0][" + r.key + "]: Invalid value: \"" + v +
                          "\": a valid label must be an empty string or consist of alphanumeric "
                          "characters, '-', '_' or '.'");
    }
    sel.reqs_.push_back(std::move(r));
  }
  return sel;
}

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& r : reqs_) {
    auto it = labels.find(r.key);
    bool has = it != labels.end();
    auto in_values = [&] {
      for (const auto& v : r.values)
        if (has && it->second == v) return true;
      return false;
    };
    switch (r.op) {
      case Op::kEquals:
      case Op::kIn:
        if (!in_values()) return false;
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        if (in_values()) return false;
        break;
      case Op::kExists:
        if (!has) return false;
        break;
      case Op::kNotExists:
        if (has) return false;
        break;
      case Op::kGt:
      case Op::kLt: {
        if (!has) return false;
        long long lv = 0, rv = 0;
        auto [p, ec] =
            std::from_chars(it->second.data(), it->second.data() + it->second.size(), lv);
        if (ec != std::errc() || p != it->second.data() + it->second.size()) return false;
        std::from_chars(r.values[0].data(), r.values[0].data() + r.values[0].size(), rv);
        if (r.op == Op::kGt ? !(lv > rv) : !(lv < rv)) return false;
        break;
      }
    }
  }
  return true;
}

Result<FieldSelector> FieldSelector::Parse(std::string_view text) {
  FieldSelector sel;
  text = Trim(text);
  if (text.empty()) return sel;
  // Terms split on unescaped commas; '\' escapes ',', '=', '!' and '\'.
  std::vector<std::string> parts(1);
  std::vector<std::vector<std::size_t>> raw_ops(1);  // unescaped positions of '=' and '!'
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      parts.back().push_back(text[++i]);
      continue;
    }
    if (c == ',') {
      parts.emplace_back();
      raw_ops.emplace_back();
      continue;
    }
    if (c == '=' || c == '!') raw_ops.back().push_back(parts.back().size());
    parts.back().push_back(c);
  }
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const std::string& s = parts[p];
    Term t;
    std::size_t op_pos = std::string::npos, op_len = 0;
    for (std::size_t pos : raw_ops[p]) {
      if (s[pos] == '!' && pos + 1 < s.size() && s[pos + 1] == '=') {
        op_pos = pos, op_len = 2, t.negate = true;
        break;
      }
      if (s[pos] == '=') {
        op_pos = pos;
        op_len = (pos + 1 < s.size() && s[pos + 1] == '=') ? 2 : 1;
        break;
      }
    }
    if (op_pos == std::string::npos)
      return Fail(ErrorCode::kInvalidArgument,
                  "invalid selector: '" + std::string(text) + "'; can't understand '" + s + "'");
    t.field = std::string(Trim(s.substr(0, op_pos)));
    t.value = std::string(s.substr(op_pos + op_len));
    sel.terms_.push_back(std::move(t));
  }
  return sel;
}

bool FieldSelector::Matches(
    const std::function<std::optional<std::string>(std::string_view)>& get) const {
  for (const auto& t : terms_) {
    std::string v = get(t.field).value_or("");
    if ((v == t.value) == t.negate) return false;
  }
  return true;
}

Status FieldSelector::Validate(const std::function<bool(std::string_view)>& supported) const {
  for (const auto& t : terms_)
    if (!supported(t.field))
      return Fail(ErrorCode::kInvalidArgument, "field label not supported: " + t.field);
  return Ok();
}

}  // namespace pylon::apiserver
