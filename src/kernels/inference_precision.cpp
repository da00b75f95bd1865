// InferencePrecision: autocast, or bf16 weights for the CPU kernels.
#include "kernels/inference_precision.h"

#include "device/torch_compat.h"

namespace saccade {
namespace {

thread_local bool bf16_weights_on_this_thread = false;

bool reads_bf16_weights(const Placement& placement) {
  return placement.device.is_cpu() && placement.precision == Precision::bf16;
}

}  // namespace

InferencePrecision::InferencePrecision(const Placement& placement)
    : autocast_(reads_bf16_weights(placement) ? Placement{placement.device, Precision::fp32} : placement),
      was_bf16_weights_(bf16_weights_on_this_thread),
      was_cpu_autocast_(compat::autocast_enabled(c10::DeviceType::CPU)) {
  bf16_weights_on_this_thread = reads_bf16_weights(placement);
  if (bf16_weights_on_this_thread) compat::set_autocast_enabled(c10::DeviceType::CPU, false);
}

InferencePrecision::~InferencePrecision() {
  compat::set_autocast_enabled(c10::DeviceType::CPU, was_cpu_autocast_);
  bf16_weights_on_this_thread = was_bf16_weights_;
}

bool InferencePrecision::bf16_weights() {
  return bf16_weights_on_this_thread;
}

std::string InferencePrecision::describe(const Placement& placement) {
  if (reads_bf16_weights(placement))
    return placement.device.str() + ", bf16 weights (float32 activations and sums)";
  return saccade::describe(placement);
}

}  // namespace saccade
