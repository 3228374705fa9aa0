// HTTP/1.1 request parsing: table of complete, partial and malformed requests.
#include "http/parser.h"

#include <gtest/gtest.h>

namespace pylon::http {
namespace {

TEST(ParseRequest, Table) {
  struct Case {
    const char* name;
    std::string input;
    ParseState state;
    int error_status;
    std::string body;
  } cases[] = {
      {"simple get", "GET /api HTTP/1.1\r\nHost: x\r\n\r\n", ParseState::kComplete, 0, ""},
      {"content-length body", "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
       ParseState::kComplete, 0, "hello"},
      {"partial headers", "GET /api HTTP/1.1\r\nHost:", ParseState::kNeedMore, 0, ""},
      {"partial body", "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhel", ParseState::kNeedMore, 0,
       ""},
      {"chunked body",
       "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n "
       "world\r\n0\r\n\r\n",
       ParseState::kComplete, 0, "hello world"},
      {"chunked partial", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
       ParseState::kNeedMore, 0, ""},
      {"chunked bad size",
       "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
       ParseState::kError, 400, ""},
      {"chunked bad terminator",
       "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n0\r\n\r\n",
       ParseState::kError, 400, ""},
      {"both lengths",
       "POST /a HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
       ParseState::kError, 400, ""},
      {"gzip te", "POST /a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", ParseState::kError, 501,
       ""},
      // A bare CR before a value or a chunk size is not whitespace (RFC 9112 section 2.2).
      {"bare cr before te", "POST /a HTTP/1.1\r\nTransfer-Encoding:\rchunked\r\n\r\n",
       ParseState::kError, 501, ""},
      {"bare cr before chunk size",
       "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\r5\r\nhello\r\n0\r\n\r\n",
       ParseState::kError, 400, ""},
      {"bad content-length", "POST /a HTTP/1.1\r\nContent-Length: -1\r\n\r\n", ParseState::kError,
       400, ""},
      {"huge body", "POST /a HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n", ParseState::kError,
       413, ""},
      {"garbage", "\x01\x02\x03 \r\n\r\n", ParseState::kError, 400, ""},
      {"no version", "GET /\r\n\r\n", ParseState::kError, 400, ""},
      {"http2", "GET / HTTP/2.0\r\n\r\n", ParseState::kError, 505, ""},
      {"relative target", "GET api HTTP/1.1\r\n\r\n", ParseState::kError, 400, ""},
      {"folded header", "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", ParseState::kError, 400, ""},
      {"header without colon", "GET / HTTP/1.1\r\nAb\r\n\r\n", ParseState::kError, 400, ""},
      {"bad escape", "GET /a%zz HTTP/1.1\r\n\r\n", ParseState::kError, 400, ""},
      {"oversize header", "GET / HTTP/1.1\r\nX: " + std::string(70000, 'a') + "\r\n\r\n",
       ParseState::kError, 431, ""},
  };
  for (const auto& c : cases) {
    Request req;
    ParseOutcome o = ParseRequest(c.input, Limits{}, &req);
    EXPECT_EQ(o.state, c.state) << c.name;
    if (c.state == ParseState::kError) {
      EXPECT_EQ(o.error_status, c.error_status) << c.name << ": " << o.error;
    }
    if (c.state == ParseState::kComplete) {
      EXPECT_EQ(req.body, c.body) << c.name;
      EXPECT_EQ(o.consumed, c.input.size()) << c.name;
    }
  }
}

TEST(ParseRequest, FieldsAndPipelining) {
  std::string two =
      "GET /api/v1/namespaces/a%2Fb/services?watch=1&labelSelector=app%3Dx%2Cb+in+(y)&empty "
      "HTTP/1.1\r\n"
      "Host: h\r\nUser-Agent:  kubectl/v1.32  \r\nACCEPT: application/json\r\n\r\n"
      "GET /next HTTP/1.1\r\n\r\n";
  Request req;
  ParseOutcome o = ParseRequest(two, Limits{}, &req);
  ASSERT_EQ(o.state, ParseState::kComplete);
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.path, "/api/v1/namespaces/a/b/services");
  EXPECT_EQ(req.Query("watch"), "1");
  EXPECT_EQ(req.Query("labelSelector"), "app=x,b in (y)");
  EXPECT_TRUE(req.HasQuery("empty"));
  EXPECT_FALSE(req.HasQuery("nope"));
  EXPECT_EQ(req.Header("user-agent"), "kubectl/v1.32");
  EXPECT_EQ(req.Header("Accept"), "application/json");
  Request next;
  ASSERT_EQ(ParseRequest(std::string_view(two).substr(o.consumed), Limits{}, &next).state,
            ParseState::kComplete);
  EXPECT_EQ(next.path, "/next");
}

// The header ends at the first empty line, whether it ends in CRLF or a bare LF: bytes after a
// bare-LF blank line are the next message, not swallowed up to a later CRLFCRLF (found by
// pylon_http_fuzz; fuzz/http/corpus/regress_blank_line_before_crlfcrlf).
TEST(ParseRequest, FirstBlankLineEndsTheHeader) {
  const std::string head = "POST /a HTTP/1.1\n\n";
  const std::string input = head + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
  Request req;
  ParseOutcome o = ParseRequest(input, Limits{}, &req);
  ASSERT_EQ(o.state, ParseState::kComplete);
  EXPECT_EQ(o.consumed, head.size());
  EXPECT_TRUE(req.headers.empty());
  EXPECT_EQ(req.body, "");
  Request next;
  EXPECT_EQ(ParseRequest(std::string_view(input).substr(o.consumed), Limits{}, &next).state,
            ParseState::kError);
}

// The server parses again as TCP segments arrive: every proper prefix of a complete request asks
// for more, never an error, also right at the header and chunk-line limits.
TEST(ParseRequest, EveryPrefixOfACompleteRequestNeedsMore) {
  Limits small;
  small.max_header_bytes = 64;
  const std::string at_limit = "GET / HTTP/1.1\r\nX: " + std::string(64 - 21, 'a') + "\r\n";
  ASSERT_EQ(at_limit.size(), 64u);
  const std::string chunk_line = "5;" + std::string(1022, 'e');
  const std::string inputs[] = {
      at_limit + "\r\n",
      at_limit + "\n",
      "POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi",
      "POST /a HTTP/1.1\nTransfer-Encoding: chunked\n\n" + chunk_line + "\r\nhello\r\n0\r\n\r\n",
  };
  for (const std::string& input : inputs) {
    Request req;
    ParseOutcome whole = ParseRequest(input, small, &req);
    ASSERT_EQ(whole.state, ParseState::kComplete) << input << ": " << whole.error;
    ASSERT_EQ(whole.consumed, input.size());
    for (std::size_t n = 0; n < input.size(); ++n) {
      ParseOutcome part = ParseRequest(std::string_view(input).substr(0, n), small, &req);
      EXPECT_EQ(part.state, ParseState::kNeedMore)
          << n << " bytes of " << input << ": " << part.error;
    }
  }
  Request req;
  EXPECT_EQ(ParseRequest(at_limit + "Y\r\n\r\n", small, &req).error_status, 431);
  EXPECT_EQ(ParseRequest(at_limit + "YZ", small, &req).error_status, 431);
}

TEST(UrlCoding, RoundTrip) {
  std::string decoded;
  for (std::string s : {"", "a b", "x=y&z", "ünïcode/%"}) {
    ASSERT_TRUE(UrlDecode(UrlEncode(s), true, &decoded));
    EXPECT_EQ(decoded, s);
  }
  EXPECT_FALSE(UrlDecode("%4", false, &decoded));
  EXPECT_FALSE(UrlDecode("%", false, &decoded));
}

}  // namespace
}  // namespace pylon::http
