// Replays fuzz/corpus/<target>/ through every fuzz target: the seeds, and each input that once
// found a bug, stay regression tests. A finding aborts the test binary, naming the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz_targets.h"

namespace saccade::fuzz {
namespace {

std::vector<std::filesystem::path> corpus_of(const std::string& target) {
  std::vector<std::filesystem::path> files;
  const auto folder = std::filesystem::path(SACCADE_SOURCE_DIR) / "fuzz" / "corpus" / target;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

class FuzzCorpus : public testing::TestWithParam<FuzzTarget> {};

}  // namespace

// How gtest prints a target (its name, not its bytes).
void PrintTo(const FuzzTarget& target, std::ostream* out) {
  *out << target.name;
}

namespace {

TEST_P(FuzzCorpus, EveryInputIsReadOrCleanlyRefused) {
  const auto files = corpus_of(GetParam().name);
  EXPECT_GE(files.size(), 3u) << "fuzz/corpus/" << GetParam().name << " has too few seeds";
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string input{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::fprintf(stderr, "replaying %s\n", file.filename().c_str());
    GetParam().run(input);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Targets,
    FuzzCorpus,
    testing::ValuesIn(fuzz_targets()),
    [](const testing::TestParamInfo<FuzzTarget>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace saccade::fuzz
