#include "k8s/json_stream.h"

namespace pylon::k8s {

Status JsonStreamScanner::Feed(std::string_view chunk, std::vector<std::string>* out) {
  if (failed_) return Fail(ErrorCode::kInvalidArgument, "watch stream: scanner already failed");
  size_t i = 0;
  while (i < chunk.size()) {
    if (depth_ == 0) {
      // Between values: skip whitespace, expect '{' or '['.
      char c = chunk[i];
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        ++i;
        continue;
      }
      if (c != '{' && c != '[') {
        failed_ = true;
        return Fail(ErrorCode::kInvalidArgument,
                    std::string("watch stream: unexpected byte '") + c + "' between values");
      }
    }
    // Inside a value: scan until depth returns to 0 or the chunk ends.
    size_t start = i;
    bool done = false;
    for (; i < chunk.size(); ++i) {
      char c = chunk[i];
      if (in_string_) {
        if (escape_) {
          escape_ = false;
        } else if (c == '\\') {
          escape_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
        continue;
      }
      if (c == '"') {
        in_string_ = true;
      } else if (c == '{' || c == '[') {
        ++depth_;
      } else if (c == '}' || c == ']') {
        if (--depth_ == 0) {
          ++i;
          done = true;
          break;
        }
      }
    }
    buf_.append(chunk.substr(start, i - start));
    if (buf_.size() > max_) {
      failed_ = true;
      return Fail(ErrorCode::kInvalidArgument,
                  "watch stream: value larger than " + std::to_string(max_) + " bytes");
    }
    if (done) {
      out->push_back(std::move(buf_));
      buf_.clear();
    }
  }
  return Ok();
}

}  // namespace pylon::k8s
