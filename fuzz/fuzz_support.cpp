// The clean-refusal contract, the scratch folder and the table of targets (see fuzz_targets.h).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>

#include "fuzz_targets.h"
#include "io/temporaries.h"

namespace saccade::fuzz {
namespace {

// The process's standard error as it was, where findings go even while a target's is captured.
int original_stderr() {
  static const int descriptor = ::dup(STDERR_FILENO);
  return descriptor;
}

[[noreturn]] void fail(const std::string& what) {
  ::dprintf(original_stderr(), "fuzz finding: %s\n", what.c_str());
  std::abort();
}

void check_message(const char* kind, const std::string& message) {
  if (message.empty()) fail(std::string(kind) + " with an empty message");
  if (message.find('\n') != std::string::npos) fail(std::string(kind) + " spanning lines: " + message);
}

// Removed when the process exits normally; a crash leaves it for inspection.
struct ScratchFolder {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("saccade-fuzz-" + std::to_string(::getpid()));
  ScratchFolder() { std::filesystem::create_directories(path); }
  ~ScratchFolder() {
    std::error_code ignored;
    remove_tree(path, ignored);
  }
};

}  // namespace

const std::vector<FuzzTarget>& fuzz_targets() {
  static const std::vector<FuzzTarget> targets = {
      {"config", fuzz_config},
      {"overrides", fuzz_overrides},
      {"json", fuzz_json},
      {"ptb_tokenizer", fuzz_ptb_tokenizer},
      {"safetensors", fuzz_safetensors},
      {"karpathy", fuzz_karpathy},
      {"coco", fuzz_coco},
      {"image", fuzz_image},
      {"vocabulary", fuzz_vocabulary},
      {"caption_files", fuzz_caption_files},
      {"feature_cache", fuzz_feature_cache},
      {"train_state", fuzz_train_state}};
  return targets;
}

std::string standard_error_of(const std::function<void()>& run) {
  original_stderr();
  const std::string path = scratch_file("", "stderr.txt");
  std::cerr.flush();
  std::fflush(stderr);
  {
    // Standard error goes to the file while `run` runs, and back whatever way it ends.
    const int file = ::open(path.c_str(), O_WRONLY | O_TRUNC);
    if (file < 0) fail("cannot open " + path);
    struct Restore {
      ~Restore() {
        std::cerr.flush();
        std::fflush(stderr);
        ::dup2(original_stderr(), STDERR_FILENO);
      }
    } restore;
    ::dup2(file, STDERR_FILENO);
    ::close(file);
    run();
  }
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void expect_clean_refusal(const std::function<void()>& read) {
  try {
    read();
  } catch (const std::invalid_argument& error) {
    check_message("std::invalid_argument", error.what());
  } catch (const std::runtime_error& error) {
    check_message("std::runtime_error", error.what());
  }
}

void require(bool holds, const std::string& what) {
  if (!holds) fail(what);
}

std::string scratch_file(std::string_view contents, const std::string& name) {
  static const ScratchFolder folder;
  const std::filesystem::path path = folder.path / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) fail("cannot write the scratch file " + path.string());
  return path.string();
}

}  // namespace saccade::fuzz
