// Which BLAS library LibTorch's matrix products go to. The library is looked up, not timed: a
// timed product on a loaded machine ran slower with OpenBLAS (4 GFLOP/s) than the reference BLAS
// runs on an idle AVX-512 one (6 GFLOP/s).
#include "cli/blas_library.h"

#include <dlfcn.h>

#include <array>

namespace saccade::cli {
namespace {

// A symbol each optimized BLAS exports beside sgemm_, which netlib's reference BLAS does not.
constexpr std::array<const char*, 5> kOptimizedBlasMarkers = {
    "openblas_get_config", "mkl_get_version", "MKL_Get_Version", "bli_info_get_version_str", "ATL_buildinfo"};

// Whether `library` (loaded at `base`) itself defines one of kOptimizedBlasMarkers.
bool defines_an_optimized_blas_marker(const char* library, const void* base) {
  void* handle = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return true;  // cannot be asked: no warning rather than a wrong one
  bool found = false;
  for (const char* marker : kOptimizedBlasMarkers) {
    void* symbol = dlsym(handle, marker);
    Dl_info where{};
    if (symbol != nullptr && dladdr(symbol, &where) != 0 && where.dli_fbase == base) found = true;
  }
  dlclose(handle);
  return found;
}

}  // namespace

std::optional<std::string> reference_blas_in_use() {
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info where{};
  if (sgemm == nullptr || dladdr(sgemm, &where) == 0 || where.dli_fname == nullptr ||
      where.dli_fname[0] == '\0')
    return std::nullopt;  // no sgemm_ in sight, or one linked into the executable itself
  const std::string library = where.dli_fname;
  // A LibTorch built with its BLAS inside (MKL in PyTorch's own builds) keeps its symbols hidden.
  if (library.find("libtorch") != std::string::npos) return std::nullopt;
  if (defines_an_optimized_blas_marker(where.dli_fname, where.dli_fbase)) return std::nullopt;
  return library;
}

}  // namespace saccade::cli
