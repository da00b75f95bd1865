// `saccade bench beam`: the speed of caption search on synthetic annotation grids in the peers'
// decoder configuration (D=2048, L=196, attention/embedding/LSTM 512, V=10000, additive
// attention, vector gate; with decoder=transformer, the Transformer at the peers' base size,
// bench.h), max_length 20. Prints ms per image for greedy search and beam sizes 1, 3 and 5, one
// image at a time and 32 images in one batch (B*K decoder rows per step): the best of 5 timed runs
// (3 for the batch) after a warm-up run; then ms per word at 10, 20 and 40 words; on the CPU, the
// two largest products of a step on 5 rows and on 32 with fp32 and bf16 weights (widened, and dot
// products and AMX tiles where the CPU has them).
// Random weights rarely emit <end> (p ~ 1/V), so every search runs its full 21 steps: the numbers
// are the worst case of a trained model. One more line times greedy search over 32 images whose
// captions end at 8 to 20 words (LengthForcedDecoder), where finished rows leave the search, and
// for the LSTM, what the products of greedy search over 32 images take at the matmul's speed.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/bench/bench.h"
#include "cli/runtime.h"
#include "decode/search.h"
#include "kernels/few_rows_linear.h"
#include "kernels/inference_precision.h"
#include "kernels/packed_linear.h"
#include "models/decoder.h"

namespace saccade::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Best (least disturbed on a shared machine) ms per image of `repeats` timed searches over
// annotations [B, L, D], after one untimed warm-up search.
double ms_per_image(
    const CaptionSearch& search, CaptionDecoderImpl& decoder, const torch::Tensor& annotations, int repeats) {
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

// The bench decoder made to write captions of set lengths, as a trained model's end at different
// words: image b's captions get lengths[b] words, then <end>. Each word names the caption's
// length, its position and one of `beams` variants, so that every beam of an image follows a
// caption of its own and a row is followed wherever the search moves it: after <start> (one row
// per image) and after each named word, the `beams` words of the next position are raised by 100,
// or <end> once the length is reached. The logits are raised after the model's whole step has
// run: a step costs what the model's does.
class LengthForcedDecoder : public ForwardingDecoderImpl {
 public:
  LengthForcedDecoder(std::shared_ptr<CaptionDecoderImpl> model, std::vector<int64_t> lengths, int64_t beams)
      : ForwardingDecoderImpl(std::move(model)), lengths_(std::move(lengths)), beams_(beams) {}
  DecoderStep step(
      const DecoderState& state,
      const torch::Tensor& prev_tokens,
      HardRead read,
      const torch::Tensor& locations) override {
    DecoderStep step = ForwardingDecoderImpl::step(state, prev_tokens, read, locations);
    const auto previous = prev_tokens.cpu().contiguous();
    const int64_t rows = previous.size(0);
    std::vector<int64_t> raised_rows, raised_words;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t word = previous.data_ptr<int64_t>()[r];
      // The caption's length and the words named so far: (lengths[image], 0) after <start>.
      const int64_t code = (word - kFirstWord) / beams_;
      const int64_t length = word == kStartId ? lengths_.at(r / beams_) : code / kPeerSteps;
      const int64_t named = word == kStartId ? 0 : code % kPeerSteps + 1;
      for (int64_t variant = 0; variant < (named == length ? 1 : beams_); ++variant) {
        raised_rows.push_back(r);
        raised_words.push_back(
            named == length ? kEndId : kFirstWord + (length * kPeerSteps + named) * beams_ + variant);
      }
    }
    const auto device = step.logits.device();
    step.logits.index_put_(
        {torch::tensor(raised_rows, torch::kLong).to(device),
         torch::tensor(raised_words, torch::kLong).to(device)},
        torch::full({}, 100.0, step.logits.options()), true);
    return step;
  }

 private:
  static constexpr int64_t kStartId = Vocabulary::kStart, kEndId = Vocabulary::kEnd;
  static constexpr int64_t kFirstWord = 100;  // past the specials; the words named stay below V
  std::vector<int64_t> lengths_;
  int64_t beams_;
};

// ms per word of one image's captions of 10, 20 and 40 words, one decoder step per word after the
// state before the first word (the words are fixed, so every length runs the same work): flat
// when a step costs the same at any length, as the LSTM's does and the Transformer's does up to
// its O(t) attention over the cached words.
void print_ms_per_word(CaptionDecoderImpl& decoder, const torch::Tensor& annotations) {
  c10::InferenceMode inference;
  const DecoderState initial = decoder.init_state(annotations);
  std::printf("%-10s %18s\n", "words", "ms/word");
  for (const int64_t words : {10, 20, 40}) {
    const auto tokens =
        torch::randint(4, decoder.options().vocab_size, {1, words}, torch::kLong).to(annotations.device());
    double best = 0.0;
    for (int r = 0; r < 4; ++r) {  // the first is a warm-up
      const auto start = Clock::now();
      DecoderState state = initial;
      for (int64_t t = 0; t < words; ++t) state = decoder.step(state, tokens.select(1, t)).state;
      if (annotations.is_cuda()) torch::cuda::synchronize();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (r == 1 || (r > 1 && ms < best)) best = ms;
    }
    std::printf("%-10ld %18.2f\n", long(words), best / static_cast<double>(words));
  }
}

// The two largest products of a decoding step (the output layer and the LSTM's context product)
// for x of `rows` rows on the CPU: 5 (a beam of 5 on one image, few_rows_linear; GB/s of weights
// read) or 32 (a batch, the packed kernels; GFLOP/s), with fp32 weights, bf16 weights widened,
// and where the CPU has them bf16 dot products (AVX-512 BF16) and AMX tiles (the packed kernel,
// for every row count). Best of 30 after a warm-up.
void print_products(int64_t rows) {
  if (best_kernel_isa() == KernelIsa::none) return;
  c10::InferenceMode inference;
  const bool few = rows <= kMaxRows;
  const std::string title = "product (" + std::to_string(rows) + " rows)";
  std::printf(
      "%-24s %18s %20s %20s %20s\n", title.c_str(), "fp32", "bf16 widened", "bf16 dot products",
      "bf16 AMX tiles");
  for (const auto& [N, K] : std::vector<std::pair<int64_t, int64_t>>{{10000, 512}, {2048, 2048}}) {
    const auto x = torch::randn({rows, K});
    const auto weight = torch::randn({N, K});
    const auto bf16 = weight.to(torch::kBFloat16);
    const auto time = [&](WeightStorage storage, Bf16Product product) {
      const torch::Tensor& w = storage == WeightStorage::bf16 ? bf16 : weight;
      // Tiles take every row count (as decoding routes them); the other few-row products take
      // few_rows_linear.
      const bool rows_kernel = few && product != Bf16Product::amx;
      const std::optional<PackedWeight> packed =
          rows_kernel ? std::nullopt
                      : std::optional<PackedWeight>(std::in_place, weight, torch::Tensor(), storage, product);
      double best = 0.0;
      for (int r = 0; r <= 30; ++r) {
        const auto start = Clock::now();
        if (rows_kernel) {
          few_rows_linear(best_kernel_isa(), x, w, {}, product);
        } else {
          packed->linear(x);
        }
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        if (r == 1 || (r > 1 && ms < best)) best = ms;
      }
      const double per_ms = few ? static_cast<double>(N * K * (storage == WeightStorage::bf16 ? 2 : 4))
                                : 2.0 * static_cast<double>(rows * N * K);
      char text[32];
      std::snprintf(
          text, sizeof(text), "%.3f ms %4.0f %s", best, per_ms / best * 1e-6, few ? "GB/s" : "GFLOP/s");
      return std::string(text);
    };
    const std::string fp32 = time(WeightStorage::fp32, Bf16Product::widen);
    const std::string widened = time(WeightStorage::bf16, Bf16Product::widen);
    const std::string dot = has_avx512_bf16() ? time(WeightStorage::bf16, Bf16Product::dot) : "n/a";
    const std::string tiles = has_amx_bf16() ? time(WeightStorage::bf16, Bf16Product::amx) : "n/a";
    std::printf(
        "%-24s %18s %20s %20s %20s\n",
        ("[" + std::to_string(rows) + "," + std::to_string(K) + "] x [" + std::to_string(N) + "," +
         std::to_string(K) + "]")
            .c_str(),
        fp32.c_str(), widened.c_str(), dot.c_str(), tiles.c_str());
  }
}

// The peers' decoder, with the attention kind the config names (decoder.attention.kind, heads,
// window): the kinds' decoding side by side. L = 196 is a 14 x 14 grid.
DecoderOptions bench_decoder_options(const Config& config) {
  DecoderOptions options = peer_decoder_options(config);
  if (options.kind != DecoderKind::lstm) return options;
  options.lstm.attention_kind = config.get<std::string>("decoder.attention.kind");
  options.lstm.attention_heads = config.get<int64_t>("decoder.attention.heads");
  options.lstm.attention_window = config.get<int64_t>("decoder.attention.window");
  options.grid = {14, 14};
  return options;
}

}  // namespace

int bench_beam(const Job& job) {
  torch::manual_seed(0);
  const DecoderOptions options = bench_decoder_options(job.composition.config);
  CaptionDecoder decoder = build_decoder(options);
  decoder->eval();
  decoder->to(job.placement.device);
  // Every search copies its captions to the host at the end, so the clock needs no extra wait.
  const auto single = torch::randn({1, kPeerLocations, 2048}).to(job.placement.device);  // [1, L, D]
  const auto batched =
      torch::randn({kPeerBatch, kPeerLocations, 2048}).to(job.placement.device);  // [B, L, D]
  const InferencePrecision inference_precision(job.placement);
  const double matmul_gflops = measure_matmul_gflops(1024);
  std::printf(
      "machine: LibTorch threads %d, %s, matmul 1024x1024 %.1f GFLOP/s\n", at::get_num_threads(),
      runtime_environment().c_str(), matmul_gflops);
  std::printf(
      "%s; L=196, max_length %lld; on %s\n", describe_decoder(options).c_str(),
      static_cast<long long>(kPeerSteps), InferencePrecision::describe(job.placement).c_str());
  std::printf("%-10s %18s %22s\n", "search", "1 image (ms/img)", "32 images (ms/img)");

  SearchOptions greedy_options;
  greedy_options.max_length = kPeerSteps;
  const CaptionSearch greedy(SearchMethod::greedy, greedy_options);
  std::printf(
      "%-10s %18.1f %22.1f\n", greedy.describe().c_str(), ms_per_image(greedy, *decoder, single, 5),
      ms_per_image(greedy, *decoder, batched, 3));
  for (int64_t beam_size : {1, 3, 5}) {
    SearchOptions options;
    options.beam_size = beam_size;
    options.max_length = kPeerSteps;
    const CaptionSearch beam(SearchMethod::beam, options);
    std::printf(
        "%-10s %18.1f %22.1f\n", beam.describe().c_str(), ms_per_image(beam, *decoder, single, 5),
        ms_per_image(beam, *decoder, batched, 3));
  }
  SearchOptions beam5;
  beam5.beam_size = 5;
  beam5.max_length = kPeerSteps;
  // Captions of 8 to 20 words (mean 13.8), spread over the batch: finished rows leave the search
  // (RunningMembers), where the lines above run every row to max_length.
  std::vector<int64_t> lengths;
  for (int64_t b = 0; b < kPeerBatch; ++b) lengths.push_back(8 + b * 13 / kPeerBatch);
  for (const auto& [search, beams] : std::vector<std::pair<CaptionSearch, int64_t>>{
           {greedy, 1}, {CaptionSearch(SearchMethod::beam, beam5), 5}}) {
    LengthForcedDecoder ending(decoder.ptr(), lengths, beams);
    std::printf(
        "%-10s %18s %22.1f   (captions of 8-20 words)\n", search.describe().c_str(), "",
        ms_per_image(search, ending, batched, 3));
  }
  if (options.kind == DecoderKind::lstm) {
    // The products' floor under the greedy line over 32 images: its steps (max_length words and
    // <end>) at the matmul's speed, the attention's reads of the grids not counted.
    const int64_t steps = kPeerSteps + 1;
    const double gflop =
        lstm_forward_flops(options, kPeerBatch, kPeerLocations).total(kPeerBatch * steps) / 1e9;
    std::printf(
        "greedy over 32 images makes %.1f GFLOP of products in %lld steps: %.1f ms per image at the matmul's "
        "speed\n",
        gflop, static_cast<long long>(steps), gflop / matmul_gflops / kPeerBatch * 1e3);
  }
  print_op_profile(
      "beam 5, 1 image", [&] { CaptionSearch(SearchMethod::beam, beam5).search(*decoder, single); }, 12);
  print_op_profile(
      "greedy, 32 images", [&] { greedy.search(*decoder, batched); }, 12);
  print_ms_per_word(*decoder, single);
  if (job.placement.device.is_cpu()) {
    print_products(5);
    print_products(32);
  }
  return 0;
}

}  // namespace saccade::cli
