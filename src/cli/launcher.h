// `saccade train --nproc N`: N local workers of one data-parallel job, started the way torchrun
// starts them (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free
// MASTER_PORT in each worker's environment), for users without Python.
#pragma once

#include <string>
#include <vector>

namespace saccade::cli {

// Runs `argv` (this binary's command line without --nproc) as `nproc` workers and waits for all.
// When one fails, the others are stopped (SIGTERM, then SIGKILL after a grace period); when the
// launcher itself dies, every worker gets SIGTERM. Returns
// 0, or the exit code of the first worker that failed. Throws std::runtime_error when a worker
// cannot be started.
int launch_local_workers(int nproc, const std::vector<std::string>& argv);

// The most local workers --nproc may start: 4 per core the machine reports, and at least 8 (so
// a machine that reports no cores still runs small jobs). More is a typo, not a job: workers
// beyond the cores only share them, and --nproc 1000 would fork until the process limit.
int max_local_workers();

}  // namespace saccade::cli
