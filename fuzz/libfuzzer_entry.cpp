// libFuzzer's entry point for one target, chosen at compile time (fuzz/CMakeLists.txt defines
// SACCADE_FUZZ_FUNCTION as fuzz_json, fuzz_config, ...).
#include <cstddef>
#include <cstdint>

#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  saccade::fuzz::SACCADE_FUZZ_FUNCTION(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
