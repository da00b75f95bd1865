// Process-wide runtime settings: thread pools, the reference-BLAS check, log level.
#pragma once

#include <string>

#include "config/config.h"
#include "io/log.h"

namespace saccade::cli {

struct RuntimeOptions {
  int threads =
      0;  // intra-op and inter-op threads; 0 = all cores, shared by a machine's data-parallel workers
  log::Level log_level = log::Level::info;  // console log level: debug | info | warn | error
  bool check_blas = true;                   // warn at start when matrix products go to the reference BLAS
};

RuntimeOptions runtime_options_from(const Config& config);
void validate(const RuntimeOptions& options);

// Applies the options: torch intra-op threads, OpenBLAS threads, inter-op threads (first call
// only: LibTorch allows setting them once), log level, and the reference-BLAS check. With
// runtime.threads=0 the `local_workers` processes of a data-parallel job on this machine share
// its cores.
void apply_runtime(const RuntimeOptions& options, int local_workers = 1);

// GFLOP/s of a size x size float matmul on this machine (the fastest of several runs).
double measure_matmul_gflops(int size = 256);

// libgomp and OpenBLAS read how their idle threads wait when they load, before main(). By default
// LibTorch's idle OpenMP threads spin for ~300,000 iterations, and OpenBLAS's own threads call
// sched_yield for ~2^28 cycles after each product: on a small machine each takes cores from the
// other. Every command runs with a short spin of the OpenMP threads
// (GOMP_SPINCOUNT=kOpenMPSpinCount), which decoding's many short parallel regions per step need
// (passive threads pay a wake-up at each), and with OpenBLAS's threads asleep at once
// (OPENBLAS_THREAD_TIMEOUT=kOpenBlasThreadTimeout, 2^4 cycles), paying a wake-up at the next
// product that reaches BLAS. Training gains too: on the 2-core Xeon of docs/speed.md ("Speed
// set-up") the peers' decoder step took 427 ms against 470-478 ms with passive OpenMP threads,
// and the shapes demo trained at 249-253 against 221-222 images/s. The process re-executes itself
// once with these settings; a variable the user set is kept as it is.
inline constexpr const char* kOpenMPSpinCount = "10000";
inline constexpr const char* kOpenBlasThreadTimeout = "4";
void choose_thread_waiting(char** argv);

// glibc hands freed memory back to the kernel (heap trimming above 128 KiB, munmap of blocks
// above its mmap threshold), so every training step page-faults its large temporaries in again:
// measured here, half of a shapes-demo step's wall time was kernel time. This keeps freed memory
// in the process for reuse (no trimming; mmap only above 32 MiB, glibc's largest threshold).
void keep_freed_memory_for_reuse();

// "OMP_WAIT_POLICY=... GOMP_SPINCOUNT=..., OpenBLAS core ..., saccade's products on AVX2" as this
// process runs, for benchmark printouts. OpenBLAS picks its kernels for the CPU unless
// OPENBLAS_CORETYPE names some (a "Haswell" core runs AVX2 kernels even where the CPU has
// AVX-512); saccade's hand-written products (kernels/) pick AVX-512, AVX2 or none.
std::string runtime_environment();

}  // namespace saccade::cli
