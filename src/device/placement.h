// Placement: where a process computes (runtime.device) and in which precision (runtime.precision).
//
//   Placement placement = placement_from(config, local_rank, local_ranks);   // checked at start-up
//   model->to(placement.device);
//   {
//     Autocast autocast(placement);      // fp32: changes nothing
//     loss = objective(model(batch));    // matrix products in bf16 or fp16, reductions in fp32
//   }
//   loss.backward();                     // outside the scope, as with torch.autocast
//
// Every module and tensor of a run lives on placement.device; data is read on the CPU and moved
// there batch by batch. The hand-written CPU kernels (kernels/) take part only for CPU float
// tensors with CPU autocast off; everywhere else the plain LibTorch ops run.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <string>

#include "config/config.h"

namespace saccade {

enum class Precision { fp32, bf16, fp16 };
std::string to_string(Precision precision);
Precision parse_precision(const std::string& name);  // fp32 | bf16 | fp16

struct Placement {
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  Precision precision = Precision::fp32;
};

// What this process can compute on: whether LibTorch was built with CUDA, and the GPUs it sees.
struct DeviceInventory {
  bool cuda_built = false;
  int gpus = 0;
};
DeviceInventory device_inventory();

// runtime.device for the process of `local_rank` among the `local_ranks` of its machine:
//   auto     cuda:<local_rank> when CUDA is built and the machine has a GPU for each of its
//            workers, else cpu
//   cpu
//   cuda     cuda:<local_rank>: each data-parallel worker takes the GPU of its LOCAL_RANK
//   cuda:N   GPU N (a single worker per machine)
// Throws ConfigError naming runtime.device and its value when `inventory` cannot provide it.
c10::Device resolve_device(
    const std::string& name, int local_rank, int local_ranks, const DeviceInventory& inventory);

// Throws ConfigError naming runtime.precision when `precision` cannot run on `device`: fp16 on
// the CPU (use bf16 there).
void check_precision(Precision precision, const c10::Device& device);

// runtime.device and runtime.precision of `config`, resolved and checked for this process.
Placement placement_from(const Config& config, int local_rank, int local_ranks);

// Makes `device` the process's current CUDA device (where LibTorch and NCCL put what names no
// device index); nothing for the CPU.
void make_current(const c10::Device& device);

// "cpu, fp32" or "cuda:1, bf16 autocast".
std::string describe(const Placement& placement);

// The computation's dtype under `precision` (float for fp32).
c10::ScalarType compute_dtype(Precision precision);

// torch.autocast(placement.device.type, dtype) for the scope's lifetime: matrix products and
// convolutions in bf16 or fp16, precision-sensitive ops in fp32. The previous state is restored
// and autocast's weight cache cleared on leaving the outermost scope. Nothing happens for fp32.
class Autocast {
 public:
  explicit Autocast(const Placement& placement);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  bool was_enabled_ = false;
  c10::ScalarType was_dtype_ = c10::ScalarType::Float;
};

}  // namespace saccade
