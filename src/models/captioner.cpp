// Captioner: wiring of encoder and decoder.
#include "models/captioner.h"

namespace saccade {

CaptionerImpl::CaptionerImpl(
    Encoder encoder_module, GridRefiner refiner_module, CaptionDecoder decoder_module)
    : encoder(register_module("encoder", std::move(encoder_module))),
      decoder(register_module("decoder", std::move(decoder_module))) {
  if (refiner_module) refiner = register_module("refiner", std::move(refiner_module));
}

torch::Tensor CaptionerImpl::encode(const torch::Tensor& images) {
  const auto annotations = encoder->forward(images.to(device(), /*non_blocking=*/true));  // [B, L, D]
  return refine(annotations, encoder->grid_size(images.size(2), images.size(3)));
}

torch::Tensor CaptionerImpl::refine(const torch::Tensor& annotations, const std::array<int64_t, 2>& grid) {
  return refiner ? refiner->forward(annotations, grid) : annotations;
}

torch::Device CaptionerImpl::device() const {
  return decoder->parameters().front().device();
}

Captioner build_captioner(
    const EncoderOptions& encoder_options, DecoderOptions decoder_options, int64_t vocab_size) {
  Encoder encoder = build_encoder(encoder_options);
  decoder_options.vocab_size = vocab_size;
  decoder_options.annotation_dim = encoder->annotation_dim();
  if (encoder_options.grid) decoder_options.grid = *encoder_options.grid;
  GridRefiner refiner{nullptr};
  if (encoder_options.refiner.enabled()) {
    refiner = GridRefiner(encoder_options.refiner, encoder->annotation_dim(), decoder_options.grid);
  }
  return Captioner(std::move(encoder), std::move(refiner), build_decoder(decoder_options));
}

}  // namespace saccade
