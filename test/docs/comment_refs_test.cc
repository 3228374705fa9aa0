// Every comment of the C++ sources (src/, test/, bench/, fuzz/) and every line of the pages in
// docs/ cites only what is in the repository:
//  - a path a comment names (a token ending in .md, .h, .cc, .yaml or .yml, or starting with
//    docs/, deploy/, src/, test/, scripts/, bench/, fuzz/) must exist, relative to the repository
//    root, to src/, to the commenting file's directory or, for a test, to test/ and to the source
//    directory it mirrors (test/agent -> src/agent). In docs/ only paths starting with one of
//    those directories are checked: the pages name files relative to the section they are in;
//  - nothing names one of this project's issue numbers (the tracker is not in a clone; a peer's
//    issue is cited as metallb#2723) or the design share beside the checkout (no test reads it:
//    the fixtures are in test/fixtures; docs/design.md, docs/references.md and docs/seeds.md hold
//    what the code relies on).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct CommentLine {
  int line = 0;
  std::string text;  // the comment's text on that line, without the // or /* */ markers
};

bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// The comments of a C++ source, one entry per source line a comment covers. String, raw-string and
// character literals are skipped (a "//" inside a string is no comment), and so are digit
// separators (1'000).
std::vector<CommentLine> ExtractComments(std::string_view s) {
  std::vector<CommentLine> out;
  int line = 1;
  size_t i = 0;
  const size_t n = s.size();
  auto skip_quoted = [&](char q) {  // i at the opening quote
    ++i;
    while (i < n && s[i] != q && s[i] != '\n') {
      if (s[i] == '\\') ++i;
      ++i;
    }
    if (i < n && s[i] == q) ++i;
  };
  while (i < n) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (s.compare(i, 2, "//") == 0) {
      size_t end = s.find('\n', i);
      if (end == std::string_view::npos) end = n;
      out.push_back({line, std::string(s.substr(i + 2, end - i - 2))});
      i = end;
    } else if (s.compare(i, 2, "/*") == 0) {
      i += 2;
      size_t start = i;
      while (i < n && s.compare(i, 2, "*/") != 0) {
        if (s[i] == '\n') {
          out.push_back({line, std::string(s.substr(start, i - start))});
          ++line;
          start = i + 1;
        }
        ++i;
      }
      out.push_back({line, std::string(s.substr(start, i - start))});
      i = std::min(n, i + 2);
    } else if (c == '"') {
      // A raw string: R"delim( ... )delim", with an optional u8/u/U/L prefix.
      size_t b = i;
      while (b > 0 && IsIdent(s[b - 1])) --b;
      const std::string_view prefix = s.substr(b, i - b);
      if (prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR") {
        const size_t paren = s.find('(', i);
        if (paren == std::string_view::npos) break;
        const std::string close = ")" + std::string(s.substr(i + 1, paren - i - 1)) + "\"";
        size_t end = s.find(close, paren);
        end = end == std::string_view::npos ? n : end + close.size();
        line += static_cast<int>(std::count(s.begin() + i, s.begin() + end, '\n'));
        i = end;
      } else {
        skip_quoted('"');
      }
    } else if (c == '\'') {
      size_t b = i;
      while (b > 0 && (IsIdent(s[b - 1]) || s[b - 1] == '.')) --b;
      if (b < i && std::isdigit(static_cast<unsigned char>(s[b])) != 0) {
        ++i;  // a digit separator
      } else {
        skip_quoted('\'');
      }
    } else {
      ++i;
    }
  }
  return out;
}

bool IsPathChar(char c) { return IsIdent(c) || c == '.' || c == '/' || c == '-'; }

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool StartsWithRepoDir(std::string_view t) {
  for (std::string_view dir :
       {"docs/", "deploy/", "src/", "test/", "scripts/", "bench/", "fuzz/"}) {
    if (t.substr(0, dir.size()) == dir) return true;
  }
  return false;
}

// Whether a token of a comment reads as a path inside the repository.
bool LooksLikeRepoPath(std::string_view t) {
  for (std::string_view ext : {".md", ".h", ".cc", ".yaml", ".yml"}) {
    if (EndsWith(t, ext) && t.size() > ext.size()) return true;
  }
  return StartsWithRepoDir(t);
}

struct Finding {
  int line = 0;
  std::string what;
};

// The problems in the comments of one file. `exists(path)` answers whether `path` (relative to the
// repository root, as written in the comment) exists; `file_dir` is the file's directory relative
// to the root (e.g. "src/agent"), so that a comment may name a sibling by its bare file name.
std::vector<Finding> ScanLines(const std::vector<CommentLine>& lines, const std::string& file_dir,
                               const std::function<bool(const std::string&)>& exists,
                               bool rooted_paths_only) {
  static const std::regex kIssue(R"(\bissues? #?[0-9])", std::regex::icase);
  const std::string mirror =
      file_dir.rfind("test/", 0) == 0 ? "src/" + file_dir.substr(5) : std::string();
  std::vector<Finding> findings;
  for (const CommentLine& c : lines) {
    const std::string& t = c.text;
    if (t.find("../shared") != std::string::npos) {
      findings.push_back({c.line, "names ../shared (outside the repository)"});
    }
    if (std::regex_search(t, kIssue)) {
      findings.push_back({c.line, "names an issue number (not in the repository)"});
    }
    size_t i = 0;
    while (i < t.size()) {
      if (!IsPathChar(t[i])) {
        ++i;
        continue;
      }
      const size_t start = i;
      while (i < t.size() && IsPathChar(t[i])) ++i;
      std::string tok = t.substr(start, i - start);
      const char before = start > 0 ? t[start - 1] : ' ';
      const char after = i < t.size() ? t[i] : ' ';
      // Not a repository path: a system header (<linux/if_addr.h>), a URL or host path, an
      // absolute path, or a pattern (src/lab/pods.{h,cc}, deploy/rbac-*.yaml, test/<module>/).
      if (before == '<' || before == ':' || before == '/' || before == '*' || before == '}' ||
          after == '{' || after == '*' || after == '<' || tok.find("//") != std::string::npos ||
          tok.find("..") != std::string::npos || tok.front() == '/') {
        continue;
      }
      while (!tok.empty() && (tok.back() == '.' || tok.back() == '-')) tok.pop_back();
      if (tok.empty() || !LooksLikeRepoPath(tok)) continue;
      if (rooted_paths_only && !StartsWithRepoDir(tok)) continue;
      if (exists(tok) || exists("src/" + tok) || exists(file_dir + "/" + tok)) continue;
      if (!mirror.empty() && (exists(mirror + "/" + tok) || exists("test/" + tok))) continue;
      findings.push_back({c.line, "names \"" + tok + "\", which is not in the repository"});
    }
  }
  return findings;
}

// The problems in the comments of one C++ file.
std::vector<Finding> ScanSource(std::string_view source, const std::string& file_dir,
                                const std::function<bool(const std::string&)>& exists) {
  return ScanLines(ExtractComments(source), file_dir, exists, false);
}

// The problems in one Markdown page: every line counts, paths only when rooted.
std::vector<Finding> ScanPage(std::string_view page, const std::string& file_dir,
                              const std::function<bool(const std::string&)>& exists) {
  std::vector<CommentLine> lines;
  std::istringstream in{std::string(page)};
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) lines.push_back({n, text});
  return ScanLines(lines, file_dir, exists, true);
}

// --- the scanner itself (so that the repository test below can fail) ---

std::vector<std::string> Describe(const std::vector<Finding>& fs) {
  std::vector<std::string> out;
  for (const Finding& f : fs) out.push_back(std::to_string(f.line) + ": " + f.what);
  return out;
}

// What Describe() says, on `line`, of a name that is not in the repository, of an issue number,
// and of the shared directory outside the repository.
std::string Missing(int line, const std::string& name) {
  return std::to_string(line) + ": names \"" + name + "\", which is not in the repository";
}
std::string Issue(int line) {
  return std::to_string(line) + ": names an issue number (not in the repository)";
}
std::string Shared(int line) {
  return std::to_string(line) + ": names ../shared (outside the repository)";
}

bool Known(const std::string& p) {
  return p == "docs/design.md" || p == "src/agent/garp.h" || p == "src/agent" || p == "docs";
}

TEST(CommentScanner, FlagsMissingFilesIssuesAndShared) {
  const std::string src =
      "// Rules (DESIGN.md \"Announcement\"), see docs/design.md.\n"
      "int x = 1;  // peers.md, Operations\n"
      "/* a block comment naming\n"
      "   reference/linux-l2.md and docs/missing.md */\n"
      "// issue 8; Issue #12\n"
      "// the seed documents in ../shared/seeds/\n";
  EXPECT_EQ(Describe(ScanSource(src, "src/agent", Known)),
            (std::vector<std::string>{Missing(1, "DESIGN.md"), Missing(2, "peers.md"),
                                      Missing(4, "reference/linux-l2.md"),
                                      Missing(4, "docs/missing.md"), Issue(5), Shared(6)}));
}

TEST(CommentScanner, AcceptsExistingPathsSiblingsAndNonPaths) {
  const std::string src =
      "// docs/design.md \"Allocation\"; garp.h; agent/garp.h; src/agent/garp.h.\n"
      "// <linux/if_addr.h>, purelb.io/v1, lace-cni.io/<name>, https://example.com/a/b.md\n"
      "// patterns: src/lab/pods.{h,cc}, deploy/rbac-*.yaml, test/<module>/, /proc/sys/x.h\n"
      "// metallb#2723 is another project's tracker; 1.5 s; e.g. 0.25 s\n";
  EXPECT_TRUE(ScanSource(src, "src/agent", Known).empty())
      << ::testing::PrintToString(Describe(ScanSource(src, "src/agent", Known)));
}

TEST(CommentScanner, IgnoresStringsAndCharacterLiterals) {
  const std::string src =
      "const char* a = \"// DESIGN.md issue 8 ../shared\";\n"
      "const char* b = R\"x(\n// peers.md\n)x\";\n"
      "char c = '\"'; int big = 1'000'000;  // docs/design.md\n"
      "const char* d = \"/* not a comment */\";  // peers.md\n";
  EXPECT_EQ(Describe(ScanSource(src, "src/agent", Known)),
            (std::vector<std::string>{Missing(6, "peers.md")}));
}

TEST(CommentScanner, TestsMayNameTheSourceTheyMirror) {
  EXPECT_TRUE(ScanSource("// garp.h, as src/agent/garp.h\n", "test/agent", Known).empty());
  EXPECT_EQ(Describe(ScanSource("// garp.h\n", "test/pool", Known)),
            (std::vector<std::string>{Missing(1, "garp.h")}));
}

TEST(PageScanner, ChecksRootedPathsIssuesAndSharedOnEveryLine) {
  const std::string page = R"(| `garp.h` | bare names are relative to the section: not checked |
See docs/design.md and [x](peers.md); docs/missing.md is not there.
Fixed in issue 21; MetalLB's is metallb#2723.
```
cat ../shared/reference/peers.md
```
)";
  EXPECT_EQ(Describe(ScanPage(page, "docs", Known)),
            (std::vector<std::string>{Missing(2, "docs/missing.md"), Issue(3), Shared(5)}));
}

TEST(CommentScanner, CountsLinesThroughRawStringsAndBlocks) {
  const auto cs = ExtractComments("/* a\nb */ R\"(\n\n)\" // c\n");
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[0].line, 1);
  EXPECT_EQ(cs[1].line, 2);
  EXPECT_EQ(cs[2].line, 4);
  EXPECT_EQ(cs[2].text, " c");
}

// --- the repository ---

// Every file under `dir` with one of `exts`, scanned by `scan`, findings appended as
// "path:line: what". Returns the number of files read.
int ScanTree(const fs::path& root, const std::string& dir, const std::vector<std::string>& exts,
             const std::function<std::vector<Finding>(std::string_view, const std::string&)>& scan,
             std::vector<std::string>* problems) {
  int files = 0;
  if (!fs::is_directory(root / dir)) return 0;
  for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (std::find(exts.begin(), exts.end(), ext) == exts.end()) continue;
    ++files;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string rel = fs::relative(e.path(), root).generic_string();
    const std::string file_dir = fs::path(rel).parent_path().generic_string();
    for (const Finding& f : scan(ss.str(), file_dir)) {
      problems->push_back(rel + ":" + std::to_string(f.line) + ": " + f.what);
    }
  }
  return files;
}

std::string Report(std::vector<std::string> problems) {
  std::sort(problems.begin(), problems.end());
  std::string all = std::to_string(problems.size()) + " place(s) cite what a clone lacks:\n";
  for (const std::string& p : problems) all += p + "\n";
  return all;
}

class RepositoryComments : public ::testing::Test {
 protected:
  const fs::path root_ = PYLON_SOURCE_DIR;
  std::function<bool(const std::string&)> exists_ = [this](const std::string& p) {
    return fs::exists(root_ / p);
  };
  std::function<std::vector<Finding>(std::string_view, const std::string&)> source_ =
      [this](std::string_view text, const std::string& dir) {
        return ScanSource(text, dir, exists_);
      };
};

TEST_F(RepositoryComments, EverySourceCommentCitesOnlyWhatIsInTheRepository) {
  ASSERT_TRUE(fs::is_directory(root_ / "src")) << root_;
  std::vector<std::string> problems;
  const std::vector<std::string> cpp = {".h", ".cc", ".cpp", ".hpp"};
  EXPECT_GT(ScanTree(root_, "src", cpp, source_, &problems), 50);
  EXPECT_TRUE(problems.empty()) << Report(problems);
}

TEST_F(RepositoryComments, EveryTestCommentCitesOnlyWhatIsInTheRepository) {
  std::vector<std::string> problems;
  const std::vector<std::string> cpp = {".h", ".cc", ".cpp", ".hpp"};
  EXPECT_GT(ScanTree(root_, "test", cpp, source_, &problems), 50);
  ScanTree(root_, "bench", cpp, source_, &problems);
  ScanTree(root_, "fuzz", cpp, source_, &problems);
  EXPECT_TRUE(problems.empty()) << Report(problems);
}

TEST_F(RepositoryComments, EveryDocsPageCitesOnlyWhatIsInTheRepository) {
  std::vector<std::string> problems;
  auto page = [this](std::string_view text, const std::string& dir) {
    return ScanPage(text, dir, exists_);
  };
  EXPECT_GT(ScanTree(root_, "docs", {".md"}, page, &problems), 10);
  EXPECT_TRUE(problems.empty()) << Report(problems);
}

}  // namespace
