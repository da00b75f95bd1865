// parallel_for: run a loop body over a few threads (data preparation, not the training loop).
//
//   parallel_for(n, threads, [&](int64_t i) { out[i] = work(i); });
//
// Iteration i runs on thread i % threads; the first exception thrown by any iteration is
// rethrown in the caller after every thread has finished.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace saccade {

// threads <= 0 means one per core.
inline int resolve_threads(int threads) {
  return threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

template <typename Body>
void parallel_for(int64_t count, int threads, const Body& body) {
  const int64_t workers = std::min<int64_t>(resolve_threads(threads), std::max<int64_t>(count, 1));
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto run = [&](int64_t worker) {
    try {
      for (int64_t i = worker; i < count; i += workers) body(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int64_t worker = 1; worker < workers; ++worker) pool.emplace_back(run, worker);
  run(0);
  for (auto& thread : pool) thread.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace saccade
