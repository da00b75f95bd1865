// Decoders shared by the search tests: a small random one, and Markov chains with hand-set
// word probabilities.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <utility>

#include "models/attention_lstm_decoder.h"

namespace saccade::testing {

// The options of a small random decoder: V=9 words, D=6, E=5, H=7, A=4, no dropout.
inline DecoderOptions tiny_decoder_options() {
  DecoderOptions options;
  options.vocab_size = 9;
  options.annotation_dim = 6;
  options.lstm.embed_dim = 5;
  options.lstm.hidden_dim = 7;
  options.lstm.attention_dim = 4;
  options.dropout = 0.0;
  return options;
}

inline AttentionLSTMDecoder tiny_decoder() {
  return AttentionLSTMDecoder(tiny_decoder_options());
}

namespace markov {

// Token ids of the hand-built decoders (the Vocabulary's specials first).
constexpr int64_t kStart = 1, kEnd = 2, kUnk = 3, kA = 4, kB = 5, kC = 6, kD = 7, kVocab = 8;

// A decoder whose next-word distribution depends only on the previous word: p(next | prev) =
// transitions[{prev, next}] (every pair not listed is impossible, logit -1e4). The deep output
// computes logits = out(tanh(E y + out_h(h) + out_z(z))); with out_h and out_z zeroed and the
// embedding 20 * identity, tanh gives exactly the one-hot of the previous word (tanh(20) rounds
// to 1 in float), so logits[next] = out.weight[next][prev] = log p(next | prev).
inline AttentionLSTMDecoder markov_decoder(const std::map<std::pair<int64_t, int64_t>, double>& transitions) {
  DecoderOptions options;
  options.vocab_size = kVocab;
  options.annotation_dim = 3;
  options.lstm.embed_dim = kVocab;
  options.lstm.hidden_dim = 4;
  options.lstm.attention_dim = 2;
  options.dropout = 0.0;
  options.lstm.deep_output = true;
  AttentionLSTMDecoder decoder(options);
  torch::NoGradGuard no_grad;
  decoder->embedding->weight.copy_(20.0 * torch::eye(kVocab));
  for (auto* linear : {&decoder->out_h, &decoder->out_z, &decoder->out}) {
    (*linear)->weight.zero_();
    (*linear)->bias.zero_();
  }
  decoder->out->weight.fill_(-1e4);
  for (const auto& [pair, probability] : transitions) {
    decoder->out->weight[pair.second][pair.first] = std::log(probability);
  }
  return decoder;
}

// start -> a .6 | b .4;  a -> <end> .4 | c .35 | d .25;  b -> <end> .9 | c .1;  c, d -> <end> 1.
inline AttentionLSTMDecoder garden_path_decoder() {
  return markov_decoder(
      {{{kStart, kA}, 0.6},
       {{kStart, kB}, 0.4},
       {{kA, kEnd}, 0.4},
       {{kA, kC}, 0.35},
       {{kA, kD}, 0.25},
       {{kB, kEnd}, 0.9},
       {{kB, kC}, 0.1},
       {{kC, kEnd}, 1.0},
       {{kD, kEnd}, 1.0}});
}

}  // namespace markov
}  // namespace saccade::testing
