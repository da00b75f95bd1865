// A small random decoder shared by the search tests: V=9 words, D=6, E=5, H=7, A=4, no dropout.
#pragma once

#include "models/decoder.h"

namespace saccade::testing {

inline AttentionLSTMDecoder tiny_decoder() {
  DecoderOptions options;
  options.vocab_size = 9;
  options.annotation_dim = 6;
  options.embed_dim = 5;
  options.hidden_dim = 7;
  options.attention_dim = 4;
  options.dropout = 0.0;
  return AttentionLSTMDecoder(options);
}

}  // namespace saccade::testing
