// Captioner: the whole Show-Attend-Tell model, an encoder followed by the attention LSTM decoder.
//
//   Captioner model = build_captioner(encoder_options, decoder_options, vocabulary.size());
//   DecoderOutput out = model->forward(images, tokens, lengths);   // teacher forcing
//   torch::Tensor a = model->encode(images);                        // [B, L, D] for decoding
//
// Parameter names are "encoder.<torchvision name>" and "decoder.<decoder name>", so a checkpoint's
// model.safetensors maps one to one onto the modules (see encoder.h and decoder.h).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "models/decoder.h"
#include "models/encoder.h"

namespace saccade {

class CaptionerImpl : public torch::nn::Module {
 public:
  CaptionerImpl(Encoder encoder, AttentionLSTMDecoder decoder);

  // Normalized images [B, 3, H, W] (on any device) -> annotations [B, L, D] on device().
  torch::Tensor encode(const torch::Tensor& images);

  // Where the parameters are (Placement::device once the caller has moved the model there).
  torch::Device device() const;

  // Teacher-forced pass: images [B, 3, H, W], tokens [B, T] (<start> w1 .. wn, padded), lengths
  // [B] (steps per caption) -> logits [B, T, V], alphas, gates (see DecoderOutput).
  DecoderOutput forward(
      const torch::Tensor& images, const torch::Tensor& tokens, const torch::Tensor& lengths);

  Encoder encoder{nullptr};
  AttentionLSTMDecoder decoder{nullptr};
};
TORCH_MODULE(Captioner);

// Builds the encoder, then a decoder sized by it (D) and by the vocabulary (V).
Captioner build_captioner(const EncoderOptions& encoder, DecoderOptions decoder, int64_t vocab_size);

}  // namespace saccade
