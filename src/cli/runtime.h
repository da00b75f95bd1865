// Process-wide runtime settings: thread pools, BLAS sanity check, log level.
#pragma once

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

// libgomp reads OMP_WAIT_POLICY when it loads, before main(). With its default (active) policy
// LibTorch's idle OpenMP threads spin and starve OpenBLAS's pthreads on small machines, so the
// process re-executes itself once with OMP_WAIT_POLICY=PASSIVE unless the user set a policy.
void ensure_passive_openmp(char** argv);

}  // namespace saccade::cli
