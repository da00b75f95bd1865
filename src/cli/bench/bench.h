// The benchmark cases of `saccade bench` (one file each) and what they share.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cli/command.h"
#include "models/decoder.h"

namespace saccade::cli {

int bench_decoder(const Job& job);  // decoder.cpp: one training step
int bench_scst(const Job& job);     // decoder.cpp: one self-critical step beside it
int bench_beam(const Job& job);     // beam.cpp: greedy and beam search
int bench_loader(const Job& job);   // loader.cpp: image decoding and batching
int bench_encoder(const Job& job);  // encoder.cpp: the frozen CNN encoders
int bench_serve(const Job& job);    // serve.cpp: caption requests to the explorer

// The decoder the peer implementations publish numbers for, of the kind `config`'s decoder.kind
// names (lstm when absent), over D=2048 annotations with V=10000. LSTM: attention, embedding and
// LSTM of 512, additive attention, vector gate, no deep output, dropout 0.5. Transformer: 6
// layers of width 512 with 8 heads and a feed-forward of 2048 (Vaswani et al.'s base model, as
// the Transformer captioners configure it), dropout 0.1.
DecoderOptions peer_decoder_options(const Config& config);

// The peers' published shape: 32 images of 196 locations (a 14x14 grid), 20 decoder steps.
inline constexpr int64_t kPeerBatch = 32, kPeerLocations = 196, kPeerSteps = 20;

// "D=2048 L=196 A=E=H=512 V=10000 ..." for `options`, as the benches print it.
std::string describe_decoder(const DecoderOptions& options);

// The LSTM decoder's useful forward FLOPs (multiply-adds count 2; elementwise work is not
// counted) over `batch` images of `locations` locations that run `words` decoder steps in all:
// the keys once per image, h_0 and c_0, then each step's products (decoder.cpp).
struct LstmForwardFlops {
  double keys = 0, init = 0, per_word = 0;
  double total(int64_t words) const { return keys + init + static_cast<double>(words) * per_word; }
};
LstmForwardFlops lstm_forward_flops(const DecoderOptions& options, int64_t batch, int64_t locations);

// Runs `run` once under LibTorch's profiler and prints the `top` ops by self time, with their
// input shapes (decoder.cpp).
void print_op_profile(const std::string& what, const std::function<void()>& run, size_t top);

}  // namespace saccade::cli
