// Which BLAS library LibTorch's matrix products go to, and whether it is the slow reference one.
#pragma once

#include <optional>
#include <string>

namespace saccade::cli {

// The file of the library that defines the sgemm_ the process resolves (LibTorch's float
// products), when that library is none of the optimized BLAS (OpenBLAS, MKL, BLIS, ATLAS) and not
// LibTorch itself: Debian's reference BLAS, 20-40x slower. std::nullopt otherwise.
std::optional<std::string> reference_blas_in_use();

}  // namespace saccade::cli
