// The images, built as docs/install.md documents them: the Dockerfile at the root with buildah,
// by scripts/image.sh (bases made by debootstrap, no registry, no Docker engine; its `build`
// stage replaced by this build's `pylon`), and each OCI archive checked as a kubelet would run
// it. The product is the Dockerfile's default target (no --target): its entrypoint is pylon, it
// runs as 65532, it holds no `pylon-dev`, and `pylon version` runs in its root filesystem as the
// image's user. The BIRD sidecar is the target `bird`: bird and birdc run in it. Root (buildah,
// chroot); the first run makes the slim base (85 s for the test, idle 2-core VM), later runs use
// the cache in /var/cache/pylon/images (15 s).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/binaries.h"
#include "support/shell.h"
#include "support/test_dir.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using Outcome = pylon::test_support::ShellResult;

// Runs argv; its stdout, and its stderr as `err` says.
Outcome Command(const std::vector<std::string>& argv,
                pylon::test_support::Stderr err = pylon::test_support::Stderr::kMerge) {
  return pylon::test_support::Run(argv, err);
}

std::string LastLine(const std::string& text) {
  std::string s = text;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  const auto nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

Json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

fs::path Blob(const fs::path& layout, const std::string& digest) {
  const auto colon = digest.find(':');
  return layout / "blobs" / digest.substr(0, colon) / digest.substr(colon + 1);
}

// One image of scripts/image.sh, its OCI archive unpacked in a directory removed at the end.
class Image {
 public:
  // Builds `target` (pylon, bird) with scripts/image.sh; false (and a test failure) if it fails.
  bool Build(const std::string& target) {
    dir_ = pylon::test_support::MakeTestDir("image-test");
    if (dir_.empty()) {
      ADD_FAILURE() << "mkdtemp";
      return false;
    }
    // stderr (the build's progress) goes to the test's output; stdout ends with the archive.
    Outcome built = Command({"bash", std::string(PYLON_SOURCE_DIR) + "/scripts/image.sh",
                             "--binary", pylon::test_support::ProductBinary(), target},
                            pylon::test_support::Stderr::kPass);
    if (built.code != 0) {
      ADD_FAILURE() << "scripts/image.sh " << target << " exited " << built.code << ":\n"
                    << built.out;
      return false;
    }
    archive_ = LastLine(built.out);
    const fs::path layout = dir_ / "layout";
    fs::create_directories(layout);
    Outcome untar = Command({"tar", "-C", layout.string(), "-xf", archive_});
    if (untar.code != 0) {
      ADD_FAILURE() << "tar -xf " << archive_ << ": " << untar.out;
      return false;
    }
    // index.json -> the manifest -> the image configuration.
    const Json index = ReadJson(layout / "index.json");
    if (!index.contains("manifests") || index["manifests"].size() != 1) {
      ADD_FAILURE() << archive_ << ": index.json is not one image: " << index.dump();
      return false;
    }
    const Json& entry = index["manifests"][0];
    tag_ = entry.value("/annotations/org.opencontainers.image.ref.name"_json_pointer, "");
    const Json manifest = ReadJson(Blob(layout, entry.value("digest", "")));
    if (!manifest.is_object()) {
      ADD_FAILURE() << archive_ << ": no image manifest";
      return false;
    }
    config_ = ReadJson(Blob(layout, manifest.value("/config/digest"_json_pointer, "")));
    if (!config_.is_object()) {
      ADD_FAILURE() << archive_ << ": no image configuration";
      return false;
    }
    // The root filesystem, as a runtime unpacks it (layers in order, whiteouts applied).
    Outcome unpack = Command(
        {"umoci", "unpack", "--image", layout.string() + ":" + tag_, (dir_ / "bundle").string()});
    if (unpack.code != 0) {
      ADD_FAILURE() << "umoci unpack " << archive_ << ": " << unpack.out;
      return false;
    }
    return true;
  }

  ~Image() { pylon::test_support::RemoveTestDir(dir_); }

  // The image configuration's "config" (Entrypoint, Cmd, User, Env, ...).
  Json RunConfig() const {
    Json c = config_.value("config", Json());
    return c.is_object() ? c : Json::object();
  }
  fs::path Rootfs() const { return dir_ / "bundle" / "rootfs"; }
  const std::string& archive() const { return archive_; }
  const std::string& tag() const { return tag_; }

  // `argv` in the root filesystem, as `user` ("uid:gid"; empty: root).
  Outcome RunInside(const std::string& user, const std::vector<std::string>& argv) const {
    std::vector<std::string> cmd = {"chroot"};
    if (!user.empty()) cmd.push_back("--userspec=" + user);
    cmd.push_back(Rootfs().string());
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    return Command(cmd);
  }

 private:
  fs::path dir_;
  std::string archive_;
  std::string tag_;
  Json config_;
};

class ImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (buildah, chroot)";
  }
};

// The Dockerfile's default target is the product: what `docker build -t pylon .` gives.
TEST_F(ImageTest, DefaultTargetIsThePylonImage) {
  Image image;
  ASSERT_TRUE(image.Build("pylon"));
  SCOPED_TRACE(image.archive());
  EXPECT_EQ(image.tag(), PYLON_VERSION);

  const Json config = image.RunConfig();
  const Json entrypoint = config.value("Entrypoint", Json());
  ASSERT_EQ(entrypoint, Json::array({"/usr/local/bin/pylon"})) << config.dump();
  EXPECT_EQ(config.value("User", ""), "65532:65532") << config.dump();

  // Only the product ships.
  std::vector<std::string> dev;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(
           image.Rootfs(), fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().find("pylon-dev") != std::string::npos) {
      dev.push_back(it->path().string());
    }
  }
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(dev.empty()) << "pylon-dev in the image: " << dev.front();

  // The entrypoint runs as the image's user, with only the image's libraries.
  std::vector<std::string> argv = entrypoint.get<std::vector<std::string>>();
  argv.push_back("version");
  Outcome version = image.RunInside(config.value("User", ""), argv);
  EXPECT_EQ(version.code, 0) << version.out;
  EXPECT_EQ(version.out, std::string("pylon ") + PYLON_VERSION + "\n");
  Outcome help =
      image.RunInside(config.value("User", ""), {"/usr/local/bin/pylon", "agent", "--help"});
  EXPECT_EQ(help.code, 0) << help.out;
}

// `--target bird`: the sidecar of deploy/components/bgp, with the shell its command runs in.
TEST_F(ImageTest, BirdTargetIsTheSidecarImage) {
  Image image;
  ASSERT_TRUE(image.Build("bird"));
  SCOPED_TRACE(image.archive());
  for (const char* path : {"usr/sbin/bird", "usr/sbin/birdc", "bin/sh"}) {
    EXPECT_TRUE(fs::exists(image.Rootfs() / path)) << path;
  }
  EXPECT_FALSE(fs::exists(image.Rootfs() / "usr/local/bin/pylon"));
  Outcome bird = image.RunInside("", {"bird", "--version"});
  EXPECT_EQ(bird.code, 0) << bird.out;
  EXPECT_NE(bird.out.find("BIRD version 2."), std::string::npos) << bird.out;
  // birdc has no --version: it runs, loads its libraries, and finds no BIRD at the socket.
  Outcome birdc = image.RunInside("", {"birdc", "-s", "/nonexistent/bird.ctl", "show", "status"});
  EXPECT_NE(birdc.out.find("Unable to connect to server"), std::string::npos) << birdc.out;
}

}  // namespace
