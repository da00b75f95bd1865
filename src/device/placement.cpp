// Placement: runtime.device and runtime.precision resolved, checked and applied (see placement.h).
#include "device/placement.h"

#include <ATen/Context.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cstdlib>

#include "base/enum_names.h"
#include "device/torch_compat.h"

namespace saccade {
namespace {

const EnumNames<Precision> kPrecisionNames(
    "precision", {{Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}, {Precision::fp16, "fp16"}});

[[noreturn]] void refuse(const std::string& name, const std::string& why) {
  throw ConfigError("runtime.device=" + name + ": " + why);
}

std::string gpus_text(int gpus) {
  return std::to_string(gpus) + (gpus == 1 ? " GPU is" : " GPUs are") + " visible";
}

// The N of "cuda:N", or -1 when the text after "cuda:" is not a small non-negative integer.
int gpu_index(const std::string& digits) {
  if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::atoi(digits.c_str());
}

}  // namespace

std::string to_string(Precision precision) {
  return kPrecisionNames.name(precision);
}

Precision parse_precision(const std::string& name) {
  return kPrecisionNames.parse(name);
}

DeviceInventory device_inventory() {
  DeviceInventory inventory;
  inventory.cuda_built = at::hasCUDA();
  inventory.gpus = inventory.cuda_built ? static_cast<int>(torch::cuda::device_count()) : 0;
  return inventory;
}

c10::Device resolve_device(
    const std::string& name, int local_rank, int local_ranks, const DeviceInventory& inventory) {
  const c10::Device cpu(c10::DeviceType::CPU);
  if (name == "cpu") return cpu;
  if (name == "auto") {
    // NCCL refuses two workers on one GPU: more workers than GPUs stay on the CPU.
    if (!inventory.cuda_built || inventory.gpus < std::max(1, local_ranks)) return cpu;
    return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(local_rank));
  }
  const bool any_gpu = name == "cuda";
  if (!any_gpu && name.rfind("cuda:", 0) != 0) {
    throw ConfigError("runtime.device: expected auto, cpu, cuda or cuda:N, got '" + name + "'");
  }
  const int index = any_gpu ? local_rank : gpu_index(name.substr(5));
  if (index < 0) throw ConfigError("runtime.device: expected auto, cpu, cuda or cuda:N, got '" + name + "'");
  if (!inventory.cuda_built) {
    refuse(
        name,
        "this saccade is built against a LibTorch without CUDA. HINT: runtime.device=cpu, or build against a "
        "CUDA LibTorch (docs/building.md, 'Building against another LibTorch')");
  }
  if (inventory.gpus == 0) refuse(name, "no GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)");
  if (!any_gpu && local_ranks > 1) {
    refuse(
        name, "every one of the " + std::to_string(local_ranks) +
                  " workers on this machine would use that one GPU. HINT: runtime.device=cuda gives each "
                  "worker the GPU of its LOCAL_RANK");
  }
  if (index >= inventory.gpus) {
    refuse(
        name, (any_gpu ? "worker LOCAL_RANK=" + std::to_string(local_rank) + " needs GPU " +
                             std::to_string(index) + ", but only "
                       : std::string("only ")) +
                  gpus_text(inventory.gpus) + " (cuda:0" +
                  (inventory.gpus > 1 ? " .. cuda:" + std::to_string(inventory.gpus - 1) : "") + ")");
  }
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
}

void check_precision(Precision precision, const c10::Device& device) {
  if (precision == Precision::fp16 && device.is_cpu()) {
    throw ConfigError(
        "runtime.precision=fp16: half-precision autocast needs a CUDA device, and runtime.device resolved to "
        "cpu. HINT: runtime.precision=bf16 (or fp32) on the CPU");
  }
}

Placement placement_from(const Config& config, int local_rank, int local_ranks) {
  Placement placement;
  placement.device =
      resolve_device(config.get<std::string>("runtime.device"), local_rank, local_ranks, device_inventory());
  placement.precision = config.get_parsed("runtime.precision", parse_precision);
  check_precision(placement.precision, placement.device);
  return placement;
}

std::string describe(const Placement& placement) {
  return placement.device.str() + ", " + to_string(placement.precision) +
         (placement.precision == Precision::fp32 ? "" : " autocast");
}

c10::ScalarType compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::bf16:
      return c10::ScalarType::BFloat16;
    case Precision::fp16:
      return c10::ScalarType::Half;
    case Precision::fp32:
      break;
  }
  return c10::ScalarType::Float;
}

void make_current(const c10::Device& device) {
  // Through the device guard, which needs no CUDA headers: a CPU build never gets here.
  if (device.is_cuda()) c10::impl::getDeviceGuardImpl(device.type())->setDevice(device);
}

Autocast::Autocast(const Placement& placement) {
  if (placement.precision == Precision::fp32) return;
  active_ = true;
  device_type_ = placement.device.type();
  was_enabled_ = compat::autocast_enabled(device_type_);
  was_dtype_ = compat::autocast_dtype(device_type_);
  compat::set_autocast_enabled(device_type_, true);
  compat::set_autocast_dtype(device_type_, compute_dtype(placement.precision));
  at::autocast::increment_nesting();
}

Autocast::~Autocast() {
  if (!active_) return;
  // As torch.autocast's __exit__: the casts of the weights are cached only while autocast is on.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_enabled(device_type_, was_enabled_);
  compat::set_autocast_dtype(device_type_, was_dtype_);
}

}  // namespace saccade
