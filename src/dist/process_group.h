// ProcessGroup: the processes of one data-parallel job, talking through LibTorch's c10d (Gloo for
// CPU tensors; NCCL for CUDA tensors when LibTorch has it), found the way torchrun finds them.
//
//   DistOptions options = dist_options_from_environment(/*timeout_s=*/300);   // RANK, WORLD_SIZE, ...
//   validate(options);
//   ProcessGroup group(options);            // rendezvous; rank 0 hosts the TCPStore
//   group.broadcast(parameters);            // rank 0's values everywhere, in place
//   group.all_reduce_sum(gradients);        // the sum over ranks, in place
//   std::vector<std::string> all = group.all_gather("rank's text");   // in rank order
//   group.require_same_job("decoder.hidden_dim=32\ntrain.lr=0.001");   // throws naming a difference
//
// A world of size 1 needs no peers: every call returns at once with the single process's values.
// A peer that never joins, or dies, makes the others' calls fail within the timeout with a
// std::runtime_error naming what was being waited for. Joining is bounded by the timeout even
// where c10d's calls are not (a peer that accepts and never answers): see dist/join_watchdog.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <torch/types.h>

namespace saccade {

struct DistOptions {
  int rank = 0;                           // RANK: this process, 0 .. world_size - 1
  int world_size = 1;                     // WORLD_SIZE: processes in the job
  int local_rank = 0;                     // LOCAL_RANK: this process on its machine
  int local_world_size = 1;               // LOCAL_WORLD_SIZE: processes on this machine
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR: where rank 0 hosts the store
  int master_port = 29500;                // MASTER_PORT
  std::chrono::seconds timeout{300};      // how long any wait for a peer may take
};

// The job as torchrun (or `saccade train --nproc`, or a SLURM script) describes it in RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT; a single process when
// WORLD_SIZE is unset.
// Throws std::invalid_argument naming the variable and its value when one is not an integer.
DistOptions dist_options_from_environment(int timeout_s);

// Throws std::invalid_argument, one sentence per broken rule: world_size >= 1, 0 <= rank <
// world_size, 0 <= local_rank < local_world_size, a port in 1 .. 65535, timeout >= 1 s.
void validate(const DistOptions& options);

class ProcessGroup {
 public:
  // Joins the job: rank 0 listens on master_addr:master_port, every rank connects and waits for
  // all of them. Throws std::runtime_error (one line, "rank R could not ...: cause") when the port
  // is taken, the address does not resolve or a peer does not join within the timeout, and
  // std::invalid_argument when the ranks disagree on WORLD_SIZE or two share a RANK. Where c10d
  // hangs or fails in a thread of its own, the process ends with such a line (exit code 1) a
  // second past the timeout at the latest. With a CUDA `device` (this rank's GPU), CUDA tensors go
  // through NCCL where LibTorch was built with it, through Gloo otherwise; CPU tensors always
  // through Gloo.
  explicit ProcessGroup(const DistOptions& options, c10::Device device = c10::Device(c10::DeviceType::CPU));
  ~ProcessGroup();

  int rank() const { return options_.rank; }
  int size() const { return options_.world_size; }
  bool is_main() const { return options_.rank == 0; }

  // Rank `root`'s tensors, copied into every rank's (same shapes and dtypes everywhere).
  void broadcast(std::vector<torch::Tensor> tensors, int root = 0);
  // Every tensor replaced by its sum over the ranks.
  void all_reduce_sum(std::vector<torch::Tensor> tensors);
  // Every rank's text, in rank order.
  std::vector<std::string> all_gather(const std::string& text);
  // Waits until every rank has called it.
  void barrier();
  // Throws std::invalid_argument, the same line on every rank, unless every rank passes the same
  // `job` ("key=value" lines: what must not differ between ranks). It names the first key that
  // differs, with both values: "rank 1's job differs from rank 0's at decoder.hidden_dim (48 on
  // rank 1, 32 on rank 0): ...".
  void require_same_job(const std::string& job);
  // "NCCL" or "Gloo": the backend that carries tensors on `device`.
  std::string backend_for(c10::Device device) const;

 private:
  void require_same_device_kind(c10::Device device);

  struct Backend;
  DistOptions options_;
  std::unique_ptr<Backend> backend_;  // null for a world of one
};

// Replaces every gradient of `parameters` (those that require one) by its sum over the ranks,
// in buckets of about 25 MB; a gradient this rank's batch left undefined counts as zeros, so
// every rank sends the same buckets. A world of one is left as it is.
void sum_gradients(ProcessGroup& group, const std::vector<torch::Tensor>& parameters);

}  // namespace saccade
