// `saccade bench beam`: the speed of caption search on synthetic annotation grids in the peers'
// decoder configuration (D=2048, L=196, attention/embedding/LSTM 512, V=10000, additive
// attention, vector gate), max_length 20. Prints ms per image for greedy search and beam sizes
// 1, 3 and 5, one image at a time and 32 images in one batch (B*K decoder rows per step):
// the best of 5 timed runs (3 for the batch) after a warm-up run.
// Random weights rarely emit <end> (p ~ 1/V), so every search runs its full 21 steps: the numbers
// are the worst case of a trained model.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/bench.h"
#include "cli/runtime.h"
#include "decode/search.h"
#include "models/decoder.h"

namespace saccade::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kLocations = 196, kBatch = 32, kMaxLength = 20;

// Best (least disturbed on a shared machine) ms per image of `repeats` timed searches over
// annotations [B, L, D], after one untimed warm-up search.
double ms_per_image(
    const CaptionSearch& search,
    AttentionLSTMDecoderImpl& decoder,
    const torch::Tensor& annotations,
    int repeats) {
  search.search(decoder, annotations);
  double best = 0.0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    search.search(decoder, annotations);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    best = r == 0 ? ms : std::min(best, ms);
  }
  return best / static_cast<double>(annotations.size(0));
}

}  // namespace

int bench_beam(const Job& job) {
  torch::manual_seed(0);
  AttentionLSTMDecoder decoder(peer_decoder_options());
  decoder->eval();
  decoder->to(job.placement.device);
  // Every search copies its captions to the host at the end, so the clock needs no extra wait.
  const auto single = torch::randn({1, kLocations, 2048}).to(job.placement.device);        // [1, L, D]
  const auto batched = torch::randn({kBatch, kLocations, 2048}).to(job.placement.device);  // [B, L, D]
  const Autocast autocast(job.placement);
  std::printf(
      "machine: LibTorch threads %d, %s, matmul 1024x1024 %.1f GFLOP/s\n", at::get_num_threads(),
      runtime_environment().c_str(), measure_matmul_gflops(1024));
  std::printf(
      "decoder D=2048 L=196 A=E=H=512 V=10000, max_length %lld; on %s\n", static_cast<long long>(kMaxLength),
      describe(job.placement).c_str());
  std::printf("%-10s %18s %22s\n", "search", "1 image (ms/img)", "32 images (ms/img)");

  SearchOptions greedy_options;
  greedy_options.max_length = kMaxLength;
  const CaptionSearch greedy(SearchMethod::greedy, greedy_options);
  std::printf(
      "%-10s %18.1f %22.1f\n", greedy.describe().c_str(), ms_per_image(greedy, *decoder, single, 5),
      ms_per_image(greedy, *decoder, batched, 3));
  for (int64_t beam_size : {1, 3, 5}) {
    SearchOptions options;
    options.beam_size = beam_size;
    options.max_length = kMaxLength;
    const CaptionSearch beam(SearchMethod::beam, options);
    std::printf(
        "%-10s %18.1f %22.1f\n", beam.describe().c_str(), ms_per_image(beam, *decoder, single, 5),
        ms_per_image(beam, *decoder, batched, 3));
  }
  SearchOptions beam5;
  beam5.beam_size = 5;
  beam5.max_length = kMaxLength;
  print_op_profile(
      "beam 5, 1 image", [&] { CaptionSearch(SearchMethod::beam, beam5).search(*decoder, single); }, 12);
  print_op_profile(
      "greedy, 32 images", [&] { greedy.search(*decoder, batched); }, 12);
  return 0;
}

}  // namespace saccade::cli
