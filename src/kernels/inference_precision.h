// InferencePrecision: the scope a model runs inference in, for runtime.precision (captions by
// eval, caption, the sample figures, training's validation and bench beam; grids by extract).
//
//   const InferencePrecision precision({model.device(), Precision::bf16});
//   auto annotations = model.encode(images);      // oneDNN bf16 convolutions (AVX-512 BF16 CPUs)
//   auto captions = search(model, annotations);   // the decoder's products read bf16 weights
//
// On CUDA, and for fp32, it is Autocast (device/placement.h). On the CPU with bf16, LibTorch's
// autocast would take the products from the hand-written kernels and run them in bf16 end to
// end, slowly on CPUs without bf16 instructions. Here instead the products that need no
// gradient read bf16 copies of their weights (PackedWeights, packed_linear.h): a decoding step
// is bound by streaming its weights, and bf16 halves the bytes, while activations and sums stay
// float32. A refiner's products, like the decoder's, read bf16 copies. The CNN encoder's
// prepared oneDNN blocks (models/encoder.h) run on bf16 activations and weights where the CPU has
// AVX-512 BF16, and in float32 elsewhere. CPU autocast is off in the scope, even inside an
// autocast scope.
#pragma once

#include <string>

#include "device/placement.h"

namespace saccade {

class InferencePrecision {
 public:
  explicit InferencePrecision(const Placement& placement);
  ~InferencePrecision();
  InferencePrecision(const InferencePrecision&) = delete;
  InferencePrecision& operator=(const InferencePrecision&) = delete;

  // Whether this thread is inside an InferencePrecision that reads bf16 weights.
  static bool bf16_weights();

  // How `placement` decodes: "cpu, bf16 weights (float32 activations and sums)", or as describe()
  // says.
  static std::string describe(const Placement& placement);

 private:
  Autocast autocast_;
  bool was_bf16_weights_ = false;
  bool was_cpu_autocast_ = false;
};

}  // namespace saccade
