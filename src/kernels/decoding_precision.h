// DecodingPrecision: the scope captions are decoded in, for runtime.precision (by eval, caption,
// the sample figures, training's validation and bench beam).
//
//   const DecodingPrecision precision({model.device(), Precision::bf16});
//   auto captions = search(model, annotations);   // the decoder's products read bf16 weights
//
// On CUDA, and for fp32, it is Autocast (device/placement.h). On the CPU with bf16, LibTorch's
// autocast would take the products from the hand-written kernels and run them in bf16 end to
// end, slowly on CPUs without bf16 instructions. Here instead the products that need no
// gradient read bf16 copies of their weights (PackedWeights, packed_linear.h): a decoding step
// is bound by streaming its weights, and bf16 halves the bytes, while activations and sums stay
// float32. CPU autocast is off in the scope, even inside an autocast scope. The CNN encoder runs
// in float32; a refiner's products, like the decoder's, read bf16 copies.
#pragma once

#include <string>

#include "device/placement.h"

namespace saccade {

class DecodingPrecision {
 public:
  explicit DecodingPrecision(const Placement& placement);
  ~DecodingPrecision();
  DecodingPrecision(const DecodingPrecision&) = delete;
  DecodingPrecision& operator=(const DecodingPrecision&) = delete;

  // Whether this thread is inside a DecodingPrecision that reads bf16 weights.
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
