// Captioner: the whole model, an encoder followed by a decoder (the Show-Attend-Tell attention LSTM
// or a Transformer, models/decoder.h), optionally with a refiner between them (self-attention over the grid,
// models/grid_refiner.h).
//
//   Captioner model = build_captioner(encoder_options, decoder_options, vocabulary.size());
//   torch::Tensor a = model->encode(images);                          // [B, L, D]
//   torch::Tensor r = model->refine(cached, {8, 8});                  // cached encoder output -> [B, L, D]
//   DecoderOutput out = model->decoder->forward(a, tokens, lengths);  // teacher forcing
//
// Parameter names are "encoder.<torchvision name>", "refiner.<torch.nn.TransformerEncoder name>"
// and "decoder.<decoder name>", so a checkpoint's model.safetensors maps one to one onto the
// modules (see encoder.h, grid_refiner.h and decoder.h).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "models/decoder.h"
#include "models/encoder.h"
#include "models/grid_refiner.h"

namespace saccade {

class CaptionerImpl : public torch::nn::Module {
 public:
  // `refiner` may be empty (encoder.refiner.kind none).
  CaptionerImpl(Encoder encoder, GridRefiner refiner, CaptionDecoder decoder);

  // Normalized images [B, 3, H, W] (on any device) -> annotations [B, L, D] on device(), refined.
  torch::Tensor encode(const torch::Tensor& images);

  // The encoder's annotations [B, L, D] on its grid [Hg, Wg] (from a feature cache) -> what the
  // decoder reads: the refiner's output, or the annotations themselves without a refiner.
  torch::Tensor refine(const torch::Tensor& annotations, const std::array<int64_t, 2>& grid);

  // Where the parameters are (Placement::device once the caller has moved the model there).
  torch::Device device() const;

  Encoder encoder{nullptr};
  GridRefiner refiner{nullptr};
  CaptionDecoder decoder{nullptr};
};
TORCH_MODULE(Captioner);

// Builds the encoder, its refiner (encoder.refiner), then a decoder sized by it (D) and by the
// vocabulary (V). Throws std::invalid_argument for options that do not fit together.
Captioner build_captioner(const EncoderOptions& encoder, DecoderOptions decoder, int64_t vocab_size);

}  // namespace saccade
