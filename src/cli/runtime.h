// Process-wide runtime settings: thread pools, BLAS sanity check, log level.
#pragma once

#include <string>

#include "config/config.h"

namespace saccade::cli {

struct RuntimeOptions {
  int threads = 0;                 // intra-op and inter-op threads; 0 = all cores
  std::string log_level = "info";  // console log level: debug | info | warn | error
  bool check_blas = true;          // time a 256x256 matmul at start and warn if BLAS is the reference one
};

RuntimeOptions runtime_options_from(const Config& config);
void validate(const RuntimeOptions& options);

// Applies the options: torch intra-op threads, OpenBLAS threads, inter-op threads (first call
// only: LibTorch allows setting them once), log level, and the BLAS speed check.
void apply_runtime(const RuntimeOptions& options);

// GFLOP/s of a size x size float matmul on this machine (the fastest of several runs).
double measure_matmul_gflops(int size = 256);

// libgomp reads its waiting policy when it loads, before main(). By default LibTorch's idle
// OpenMP threads spin for ~300,000 iterations and starve OpenBLAS's pthreads on small machines;
// fully passive threads (OMP_WAIT_POLICY=PASSIVE) sleep at once and pay a wake-up at every
// parallel region, which the many short regions of a decoding step feel. So the process
// re-executes itself once with a short spin, GOMP_SPINCOUNT=kOpenMPSpinCount, unless the user
// set OMP_WAIT_POLICY or GOMP_SPINCOUNT.
inline constexpr const char* kOpenMPSpinCount = "10000";
void ensure_bounded_openmp_spinning(char** argv);

// "OMP_WAIT_POLICY=... GOMP_SPINCOUNT=..." as this process runs, for benchmark printouts.
std::string openmp_waiting();

}  // namespace saccade::cli
