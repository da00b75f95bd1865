// Fuzz targets: one function per reader of outside input, each taking arbitrary bytes.
//
//   fuzz_json(input);   // parses; a refusal must be a clean one-line error, anything else aborts
//
// A target returns normally when the reader accepts the input or refuses it the way saccade
// refuses bad input (std::invalid_argument or std::runtime_error with a one-line message naming
// what is wrong). Any other exception, a crash, a sanitizer report or a broken property (a JSON
// document that does not read back as written, a token with a space in it) is a finding.
//
// Built two ways (fuzz/CMakeLists.txt): with clang and SACCADE_FUZZ, each target is a libFuzzer
// binary (scripts/fuzz.sh TARGET SECONDS); otherwise the test suite replays every file of
// fuzz/corpus/<target>/ through its target, so every input that ever found a bug stays a test.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace saccade::fuzz {

void fuzz_config(std::string_view input);         // config.yaml text; lines starting with '%' are overrides
void fuzz_overrides(std::string_view input);      // one override per line, then their sweep expansion
void fuzz_json(std::string_view input);           // parse, then write and read back
void fuzz_ptb_tokenizer(std::string_view input);  // coco-caption's tokens of captions, alone and listed
void fuzz_safetensors(std::string_view input);    // a safetensors file
void fuzz_karpathy(std::string_view input);       // a Karpathy split file
void fuzz_coco(std::string_view input);           // COCO captions JSON; after a NUL byte, its split list
void fuzz_image(std::string_view input);          // an image file of any supported format
void fuzz_vocabulary(std::string_view input);     // a checkpoint's vocab.json
void fuzz_caption_files(std::string_view input);  // a references or results file for `saccade score`
void fuzz_feature_cache(std::string_view input);  // features.json; after a NUL byte, its first shard
void fuzz_train_state(std::string_view input);    // a checkpoint's state.json

struct FuzzTarget {
  const char* name;  // also the folder of its corpus: fuzz/corpus/<name>/
  void (*run)(std::string_view input);
};

// Every target, for the corpus replay.
const std::vector<FuzzTarget>& fuzz_targets();

// Runs `read`; returns normally when it succeeds or throws std::invalid_argument or
// std::runtime_error with a non-empty, one-line message. Aborts, printing the message, on a
// message that is empty or spans lines; other exceptions propagate.
void expect_clean_refusal(const std::function<void()>& read);

// Aborts with `what` unless `holds`: a property every accepted input must keep.
void require(bool holds, const std::string& what);

// What `run` writes to standard error (std::cerr, stdio or the descriptor itself), which does not
// reach the terminal.
std::string standard_error_of(const std::function<void()>& run);

// A file holding `contents`, reused by every call in this process (fuzzing runs millions of
// inputs; a fresh temporary each would dominate). `name` is its file name.
std::string scratch_file(std::string_view contents, const std::string& name);

}  // namespace saccade::fuzz
