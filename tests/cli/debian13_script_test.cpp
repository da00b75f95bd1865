// `scripts/test.sh --debian13` under bad input: without root, with no archive to reach, with too
// little disk, it says which in one line, exits non-zero and leaves no half-made root behind.
// These run on the host only: inside Debian 13 the script is scripts/test.sh itself.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "test_util.h"

namespace saccade::testing {
namespace {

bool on_debian13() {
  const auto release = run_program({"/bin/grep", "-q", "^VERSION_ID=\"13\"", "/etc/os-release"});
  return release.exit_code == 0;
}

CommandResult debian13_script(
    const std::filesystem::path& root, const std::map<std::string, std::string>& environment = {}) {
  std::map<std::string, std::string> all = environment;
  all["SACCADE_DEBIAN13_ROOT"] = root.string();
  return run_program({(source_dir() / "scripts/debian13.sh").string()}, source_dir(), all);
}

// Nothing but the lock file is left where the root would be made.
void expect_no_root_made(const std::filesystem::path& folder) {
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    EXPECT_EQ(entry.path().filename(), "debian13.lock") << entry.path();
}

int newline_count(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

TEST(Debian13Script, WithoutRootIsOneLine) {
  if (on_debian13()) GTEST_SKIP() << "on Debian 13 the script runs scripts/test.sh";
  // A copy in a folder anyone can read, since the checkout's may not be.
  TempDir work;
  const auto script = work / "scripts/debian13.sh";
  std::filesystem::create_directories(script.parent_path());
  std::filesystem::copy_file(source_dir() / "scripts/debian13.sh", script);
  for (const auto& folder : {work.path(), script.parent_path()})
    std::filesystem::permissions(folder, std::filesystem::perms::all);
  const auto result =
      geteuid() == 0
          ? run_program({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", script.string()})
          : run_program({script.string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(newline_count(result.err), 1) << result.err;
  EXPECT_NE(result.err.find("test.sh --debian13: needs root"), std::string::npos) << result.err;
}

TEST(Debian13Script, WithNoArchiveToReachIsOneLineAndLeavesNoRoot) {
  if (on_debian13()) GTEST_SKIP() << "on Debian 13 the script runs scripts/test.sh";
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  if (!std::filesystem::exists("/usr/sbin/debootstrap")) GTEST_SKIP() << "debootstrap is not installed";
  TempDir work;
  struct statvfs disk {};
  ASSERT_EQ(statvfs(work.path().c_str(), &disk), 0);
  if (disk.f_bavail * disk.f_frsize < (10ULL << 30)) GTEST_SKIP() << "less than 10 GiB free in the temp dir";
  // A loopback port nobody listens on stands for an archive out of reach.
  const std::string mirror = "http://127.0.0.1:" + std::to_string(free_port()) + "/debian";
  const auto result = debian13_script(work / "debian13", {{"SACCADE_DEBIAN_MIRROR", mirror}});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(newline_count(result.err), 1) << result.err;
  EXPECT_NE(result.err.find("debootstrap could not make Debian 13 from " + mirror), std::string::npos)
      << result.err;
  std::filesystem::remove(work / "debian13-make.log");
  expect_no_root_made(work.path());
}

TEST(Debian13Script, WithTooLittleDiskIsOneLineAndLeavesNoRoot) {
  if (on_debian13()) GTEST_SKIP() << "on Debian 13 the script runs scripts/test.sh";
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a small file system";
  TempDir work;
  const auto small = work / "small";
  std::filesystem::create_directory(small);
  ASSERT_EQ(mount("tmpfs", small.c_str(), "tmpfs", 0, "size=1m"), 0);
  const auto result = debian13_script(small / "debian13");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(newline_count(result.err), 1) << result.err;
  EXPECT_NE(
      result.err.find("too little disk for the Debian 13 root: 0 GiB free in " + small.string()),
      std::string::npos)
      << result.err;
  expect_no_root_made(small);
  EXPECT_EQ(umount(small.c_str()), 0);
}

}  // namespace
}  // namespace saccade::testing
