// The kernels' instruction set, read once from the CPU.
#include "kernels/kernel_isa.h"

#include "device/torch_compat.h"

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace saccade {

KernelIsa best_kernel_isa() {
#if defined(__x86_64__)
  static const KernelIsa isa = !__builtin_cpu_supports("fma")      ? KernelIsa::none
                               : __builtin_cpu_supports("avx512f") ? KernelIsa::avx512
                               : __builtin_cpu_supports("avx2")    ? KernelIsa::avx2
                                                                   : KernelIsa::none;
  return isa;
#else
  return KernelIsa::none;
#endif
}

bool has_avx512_bf16() {
#if defined(__x86_64__)
  static const bool has = best_kernel_isa() == KernelIsa::avx512 && __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

bool has_amx_bf16() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool has = [] {
    if (!has_avx512_bf16() || !__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16"))
      return false;
    constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
    constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
    return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  }();
  return has;
#else
  return false;
#endif
}

std::vector<KernelIsa> supported_kernel_isas() {
  switch (best_kernel_isa()) {
    case KernelIsa::avx512:
      return {KernelIsa::avx2, KernelIsa::avx512};
    case KernelIsa::avx2:
      return {KernelIsa::avx2};
    case KernelIsa::none:
      break;
  }
  return {};
}

const char* to_string(KernelIsa isa) {
  return isa == KernelIsa::avx512 ? "AVX-512" : isa == KernelIsa::avx2 ? "AVX2" : "none";
}

bool takes_cpu_kernels(const torch::Tensor& t, bool doubles_too) {
  return t.device().is_cpu() && !compat::autocast_enabled(c10::DeviceType::CPU) &&
         (t.scalar_type() == torch::kFloat || (doubles_too && t.scalar_type() == torch::kDouble));
}

}  // namespace saccade
