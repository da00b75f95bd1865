// Runtime set-up: thread pools, the reference-BLAS warning, OpenMP waiting, freed memory.
#include "cli/runtime.h"

#include <ATen/Parallel.h>
#include <malloc.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cli/blas_library.h"
#include "io/log.h"
#include "kernels/few_rows_linear.h"
#include "kernels/kernel_isa.h"

extern "C" char* openblas_get_corename(void);  // OpenBLAS is linked first (src/cli/CMakeLists.txt)
extern "C" void openblas_set_num_threads(int threads);

namespace saccade::cli {

RuntimeOptions runtime_options_from(const Config& config) {
  RuntimeOptions options;
  options.threads = config.get<int>("runtime.threads");
  options.log_level = config.get_parsed("runtime.log_level", log::parse_level);
  options.check_blas = config.get<bool>("runtime.check_blas");
  return options;
}

void validate(const RuntimeOptions& options) {
  if (options.threads < 0) {
    throw ConfigError("runtime.threads must be >= 0 (0 = all cores), got " + std::to_string(options.threads));
  }
}

double measure_matmul_gflops(int size) {
  torch::NoGradGuard no_grad;
  const auto a = torch::rand({size, size});
  const auto b = torch::rand({size, size});
  auto c = torch::mm(a, b);  // warm-up: thread pools, BLAS initialization
  std::vector<double> seconds;
  for (int repeat = 0; repeat < 7; ++repeat) {
    const auto start = std::chrono::steady_clock::now();
    c = torch::mm(a, b);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  // The fastest run: other processes can only slow a run down, never speed it up.
  const double fastest = *std::min_element(seconds.begin(), seconds.end());
  const double flops = 2.0 * size * size * size;
  return flops / std::max(fastest, 1e-9) / 1e9;
}

void apply_runtime(const RuntimeOptions& options, int local_workers) {
  log::set_console_level(options.log_level);
  const int workers = std::max(1, local_workers);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int threads = options.threads > 0 ? options.threads : std::max(1, cores / workers);
  if (threads > cores) {
    // More compute threads than cores only adds switching (and 100000 of them take minutes to start).
    log::warn() << "runtime.threads=" << options.threads << " is more than this machine's " << cores
                << " cores: using " << cores;
    threads = cores;
  }
  at::set_num_threads(threads);
  // OpenBLAS's own pthreads take every core unless told: workers sharing a machine tell them.
  if (workers > 1) openblas_set_num_threads(threads);
  static std::once_flag interop_once;
  std::call_once(interop_once, [threads] { at::set_num_interop_threads(threads); });

  static std::once_flag blas_once;
  if (options.check_blas) {
    std::call_once(blas_once, [] {
      const std::optional<std::string> reference = reference_blas_in_use();
      if (reference) {
        log::warn() << "matrix products go to " << *reference
                    << ", which looks like the reference BLAS (20-40x slower than OpenBLAS). HINT: "
                       "install libopenblas0-pthread (scripts/setup.sh) or check `update-alternatives "
                       "--display libblas.so.3-x86_64-linux-gnu`";
      }
    });
  }
}

void choose_thread_waiting(char** argv) {
  bool changed = false;
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr) {
    setenv("GOMP_SPINCOUNT", kOpenMPSpinCount, 1);
    changed = true;
  }
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") == nullptr) {
    setenv("OPENBLAS_THREAD_TIMEOUT", kOpenBlasThreadTimeout, 1);
    changed = true;
  }
  if (!changed) return;
  execv("/proc/self/exe", argv);
  // exec failed (no /proc): carry on with the libraries' default waiting.
}

void keep_freed_memory_for_reuse() {
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
}

std::string runtime_environment() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const char* timeout = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  return std::string("OMP_WAIT_POLICY=") + (policy ? policy : "(unset)") +
         " GOMP_SPINCOUNT=" + (spin ? spin : "(unset)") +
         " OPENBLAS_THREAD_TIMEOUT=" + (timeout ? timeout : "(unset)") + ", OpenBLAS core " +
         openblas_get_corename() + ", saccade's products on " + to_string(best_kernel_isa()) +
         " (bf16 weights: " + to_string(best_bf16_product()) + ")";
}

}  // namespace saccade::cli
