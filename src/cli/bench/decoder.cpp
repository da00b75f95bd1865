// `saccade bench decoder` and `bench scst`: the speed of one decoder training step (forward,
// backward, Adam; or self-critical: sampling with autograd, greedy baseline, CIDEr-D) on
// synthetic annotation grids, in the configuration the peer implementations publish numbers for:
// B=32, L=196, D=2048, attention 512, embedding 512, LSTM 512, V=10000, T=20, additive attention,
// vector gate, no deep output, dropout 0.5; with decoder=transformer, the Transformer decoder at
// the peers' base size (bench.h). Prints images/s, ms/step by phase, the achieved GFLOP/s with the
// FLOP formula, the machine's matmul GFLOP/s and a per-op profile of one step.
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench/bench.h"
#include "cli/runtime.h"
#include "decode/search.h"
#include "dist/process_group.h"
#include "eval/metrics.h"
#include "models/decoder.h"
#include "train/fused_adam.h"
#include "train/objectives.h"
#include "train/scst.h"

extern "C" int openblas_get_num_threads(void);  // OpenBLAS is linked first (src/cli/CMakeLists.txt)
extern "C" void openblas_set_num_threads(int threads);

namespace saccade::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kWarmupSteps = 2, kTimedSteps = 10;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Useful FLOPs of one Transformer training step, counted as for the LSTM below; the causal pass
// scores all T x T word pairs.
double transformer_training_flops(const DecoderOptions& o, int64_t batch, int64_t locations, int64_t steps) {
  const double B = batch, L = locations, T = steps, D = o.annotation_dim, d = o.transformer.model_dim,
               F = o.transformer.ffn_dim, V = o.vocab_size, layers = o.transformer.layers;
  const double grid = B * (2 * L * D * d + layers * 4 * L * d * d);  // grid_proj, cross keys and values
  const double per_word = layers * (12 * d * d + 4 * T * d + 4 * L * d + 4 * d * F) + 2 * d * V;
  const double forward = grid + B * T * per_word;
  const double total = 3 * forward - B * 2 * L * D * d;  // no gradient for the features
  std::printf(
      "FLOPs per step: forward F = B*[2LDd + layers*4Ld^2] + B*T*[layers*(12d^2 + 4Td + 4Ld + 4dF) + 2dV]\n"
      "                with B=%.0f L=%.0f D=%.0f d=%.0f F=%.0f V=%.0f T=%.0f layers=%.0f\n"
      "                = %.2f (grid) + %.2f (words) = %.2f GFLOP; training = 3F - B*2LDd = %.2f GFLOP\n",
      B, L, D, d, F, V, T, layers, grid / 1e9, B * T * per_word / 1e9, forward / 1e9, total / 1e9);
  return total;
}

}  // namespace

LstmForwardFlops lstm_forward_flops(const DecoderOptions& o, int64_t batch, int64_t locations) {
  const double B = batch, L = locations, D = o.annotation_dim, E = o.lstm.embed_dim, H = o.lstm.hidden_dim;
  const double A = o.lstm.attention_dim, V = o.vocab_size,
               G = o.lstm.gate == Gate::vector ? D : (o.lstm.gate == Gate::scalar ? 1 : 0);
  LstmForwardFlops flops;
  flops.keys = 2 * B * L * D * A;                // W_a a, once per image
  flops.init = 2 * B * 2 * D * H;                // f_init_h, f_init_c
  flops.per_word = 2 * (H * (A + G + 4 * H)      // h_{t-1} -> query | gate | LSTM U
                        + L * A + L * D          // scores w^T tanh(.), context sum alpha a
                        + D * 4 * H + E * 4 * H  // LSTM input weights
                        + H * V);                // output layer
  return flops;
}

namespace {

// Useful FLOPs of one training step. Prints the formula with this configuration's numbers.
double training_flops(const DecoderOptions& o, int64_t batch, int64_t locations, int64_t words) {
  if (o.kind == DecoderKind::transformer)
    return transformer_training_flops(o, batch, locations, words / batch);
  const double B = batch, L = locations, N = words, D = o.annotation_dim, E = o.lstm.embed_dim,
               H = o.lstm.hidden_dim;
  const double A = o.lstm.attention_dim, V = o.vocab_size,
               G = o.lstm.gate == Gate::vector ? D : (o.lstm.gate == Gate::scalar ? 1 : 0);
  const auto flops = lstm_forward_flops(o, batch, locations);
  const double keys = flops.keys, init = flops.init, per_word = flops.per_word;
  const double forward = flops.total(words);
  // Backward costs two products per forward product, except W_a a: the features need no gradient.
  const double total = 3 * forward - keys;
  std::printf(
      "FLOPs per step: forward F = B*2LDA + B*4DH + N*2*[H(A+G+4H) + LA + LD + 4DH + 4EH + HV]\n"
      "                with B=%.0f L=%.0f D=%.0f A=%.0f E=%.0f H=%.0f G=%.0f V=%.0f, N = B*T = %.0f words\n"
      "                = %.2f (keys) + %.2f (init) + %.2f (per word) = %.2f GFLOP\n"
      "                training = 3F - B*2LDA (no gradient for the features) = %.2f GFLOP\n",
      B, L, D, A, E, H, G, V, N, keys / 1e9, init / 1e9, N * per_word / 1e9, forward / 1e9, total / 1e9);
  return total;
}

struct OpTime {
  double self_us = 0;
  int64_t calls = 0;
};

// Self time per op (name and input shapes) of `step`, from LibTorch's profiler.
std::map<std::string, OpTime> profile(const std::function<void()>& step) {
  namespace profiler = torch::autograd::profiler;
  profiler::enableProfilerLegacy(torch::profiler::impl::ProfilerConfig(
      torch::profiler::impl::ProfilerState::CPU, /*report_input_shapes=*/true));
  step();
  const auto events = profiler::disableProfilerLegacy();
  std::map<std::string, OpTime> ops;
  for (const auto& thread_events : events) {
    struct Open {
      const profiler::LegacyEvent* push;
      double children_us;
    };
    std::vector<Open> open;
    for (const auto& event : thread_events) {
      if (event.kind() == profiler::EventKind::PushRange) {
        open.push_back({&event, 0.0});
      } else if (event.kind() == profiler::EventKind::PopRange && !open.empty()) {
        const Open range = open.back();
        open.pop_back();
        const double total_us = range.push->cpuElapsedUs(event);
        std::ostringstream key;
        key << range.push->name();
        for (const auto& shape : range.push->shapes()) {
          if (shape.empty()) continue;
          key << " [";
          for (size_t i = 0; i < shape.size(); ++i) key << (i ? "," : "") << shape[i];
          key << "]";
        }
        auto& op = ops[key.str()];
        op.self_us += total_us - range.children_us;
        op.calls += 1;
        if (!open.empty()) open.back().children_us += total_us;
      }
    }
  }
  return ops;
}

}  // namespace

void print_op_profile(const std::string& what, const std::function<void()>& run, size_t top) {
  const auto start = Clock::now();
  const auto ops = profile(run);
  const double profiled_us = 1e6 * seconds_since(start);
  std::vector<std::pair<std::string, OpTime>> sorted(ops.begin(), ops.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.self_us > b.second.self_us;
  });
  std::printf(
      "profile of %s (%.1f ms with the profiler on), self time per op and input shapes:\n", what.c_str(),
      profiled_us / 1e3);
  for (size_t i = 0; i < std::min(sorted.size(), top); ++i) {
    const auto& [name, op] = sorted[i];
    std::printf(
        "  %7.1f ms %5.1f%% %5ld x  %s\n", op.self_us / 1e3, 100 * op.self_us / profiled_us, long(op.calls),
        name.c_str());
  }
}

namespace {

// The phases of timed steps, in seconds.
struct StepTimes {
  std::vector<double> forward, backward, gradients, optimizer, total;
};

// Runs `step` kWarmupSteps times, then kTimedSteps times keeping what it recorded.
StepTimes time_steps(const std::function<void(StepTimes&)>& step) {
  StepTimes warmup, timed;
  for (int i = 0; i < kWarmupSteps; ++i) step(warmup);
  for (int i = 0; i < kTimedSteps; ++i) step(timed);
  return timed;
}

void print_step(const StepTimes& times) {
  char gradients[48] = "";
  if (!times.gradients.empty())
    std::snprintf(gradients, sizeof(gradients), " + gradient sum %.1f", 1e3 * median(times.gradients));
  std::printf(
      "step (median of %d): %.1f ms = forward %.1f + backward %.1f%s + optimizer %.1f (min %.1f, max %.1f)\n",
      kTimedSteps, 1e3 * median(times.total), 1e3 * median(times.forward), 1e3 * median(times.backward),
      gradients, 1e3 * median(times.optimizer),
      1e3 * *std::min_element(times.total.begin(), times.total.end()),
      1e3 * *std::max_element(times.total.begin(), times.total.end()));
}

void set_threads(int threads) {
  at::set_num_threads(threads);
  openblas_set_num_threads(threads);
}

// The benchmark's decoder, its optimizer and a synthetic batch (seed LibTorch's generator first).
struct DecoderBench {
  // Everything moved to placement.device; the forward pass under its autocast.
  DecoderBench(const Placement& where, DecoderOptions decoder_options)
      : placement(where), options(std::move(decoder_options)) {
    decoder->to(placement.device);  // the optimizer keeps the same parameters, now on the device
    for (torch::Tensor* tensor : {&features, &tokens, &targets, &lengths})
      *tensor = tensor->to(placement.device);
  }

  // Waits for the device's queued work, so the clock reads what it took.
  void synchronize() const {
    if (placement.device.is_cuda()) torch::cuda::synchronize(placement.device.index());
  }

  Placement placement;
  DecoderOptions options;
  CaptionDecoder decoder{build_decoder(options)};
  FusedAdam optimizer{decoder->parameters(), torch::optim::AdamOptions(4e-4)};
  torch::Tensor features =
      torch::randn({kPeerBatch, kPeerLocations, options.annotation_dim}).relu_();  // like conv features
  torch::Tensor tokens = torch::randint(options.vocab_size, {kPeerBatch, kPeerSteps}, torch::kLong);
  torch::Tensor targets = torch::randint(options.vocab_size, {kPeerBatch, kPeerSteps}, torch::kLong);
  torch::Tensor lengths = torch::full({kPeerBatch}, kPeerSteps, torch::kLong);

  // One training step on rows [first, first + rows) of the batch; with `peers`, the gradients
  // are summed over the ranks before the update.
  void step(StepTimes& times, int64_t first, int64_t rows, ProcessGroup* peers) {
    const auto start = Clock::now();
    for (auto& parameter : decoder->parameters()) parameter.mutable_grad() = torch::Tensor();  // no memset
    const auto part = [&](const torch::Tensor& x) { return x.narrow(0, first, rows); };
    torch::Tensor loss;
    {
      const Autocast autocast(placement);
      const auto out = decoder->forward(part(features), part(tokens), part(lengths));
      loss = soft_attention_loss(
                 out.logits, part(targets), part(lengths), out.alphas, 1.0, XentReduction::per_token)
                 .total;
    }
    synchronize();
    const double forward = seconds_since(start);
    loss.backward();
    synchronize();
    const double backward = seconds_since(start) - forward;
    if (peers != nullptr) {
      sum_gradients(*peers, decoder->parameters());
      synchronize();
      times.gradients.push_back(seconds_since(start) - forward - backward);
    }
    const double before_update = seconds_since(start);
    optimizer.step();
    synchronize();
    const double total = seconds_since(start);
    times.forward.push_back(forward);
    times.backward.push_back(backward);
    times.optimizer.push_back(total - before_update);
    times.total.push_back(total);
  }
};

// One process on every core of the machine first (the other ranks wait), then every rank on its
// part of the same global batch; the main rank prints both and their ratio.
void bench_data_parallel(DecoderBench& bench, ProcessGroup& group) {
  double one_process = 0.0;
  if (group.is_main()) {
    const int threads = at::get_num_threads();
    set_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    one_process =
        median(time_steps([&](StepTimes& times) { bench.step(times, 0, kPeerBatch, nullptr); }).total);
    std::printf(
        "one process, %d threads: step %.1f ms, %.1f images/s\n", at::get_num_threads(), 1e3 * one_process,
        kPeerBatch / one_process);
    set_threads(threads);
  }
  group.barrier();
  const int64_t first = group.rank() * kPeerBatch / group.size();
  const int64_t rows = (group.rank() + 1) * kPeerBatch / group.size() - first;
  const StepTimes times = time_steps([&](StepTimes& t) { bench.step(t, first, rows, &group); });
  if (!group.is_main()) return;
  const double seconds = median(times.total);
  std::printf(
      "%d ranks of %ld images, %d thread%s each, gradients summed over c10d (%s):\n", group.size(),
      long(rows), at::get_num_threads(), at::get_num_threads() == 1 ? "" : "s",
      group.backend_for(bench.placement.device).c_str());
  print_step(times);
  std::printf(
      "speed: %.1f images/s; against one process on the same cores: %.0f%%\n", kPeerBatch / seconds,
      100.0 * one_process / seconds);
}

void print_machine() {
  std::printf(
      "machine: %u cores, LibTorch threads %d, OpenBLAS threads %d, %s\n",
      std::thread::hardware_concurrency(), at::get_num_threads(), openblas_get_num_threads(),
      runtime_environment().c_str());
  std::printf("matmul 2048x2048: %.1f GFLOP/s\n", measure_matmul_gflops(2048));
}

void print_decoder(const DecoderOptions& options, const Placement& placement) {
  std::printf(
      "%s; B=%ld L=%ld T=%ld, Adam; on %s\n", describe_decoder(options).c_str(), long(kPeerBatch),
      long(kPeerLocations), long(kPeerSteps), describe(placement).c_str());
}

// Word ids as the words a reward reads ("17").
Tokens id_words(const std::vector<int64_t>& ids) {
  Tokens words;
  for (const int64_t id : ids) words.push_back(std::to_string(id));
  return words;
}

// The references of a synthetic corpus of 5000 images, 5 of 10 random words each: CIDEr-D's
// document frequencies come from them.
std::vector<std::vector<Tokens>> synthetic_references(int64_t vocab_size) {
  constexpr int64_t kImages = 5000, kReferences = 5, kWords = 10;
  std::vector<std::vector<Tokens>> corpus(kImages);
  for (auto& references : corpus) {
    for (int64_t i = 0; i < kReferences; ++i) {
      const auto ids = torch::randint(4, vocab_size, {kWords}, torch::kLong);
      references.push_back(
          id_words(std::vector<int64_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + kWords)));
    }
  }
  return corpus;
}

// A self-critical step's phases, in seconds.
struct ScstTimes {
  std::vector<double> sample, greedy, reward, backward, optimizer, total;
};

}  // namespace

int bench_decoder(const Job& job) {
  const bool main_rank = job.group == nullptr || job.group->is_main();
  if (main_rank) print_machine();
  torch::manual_seed(job.composition.config.has("seed") ? job.composition.config.get<int>("seed") : 0);
  DecoderBench bench(job.placement, peer_decoder_options(job.composition.config));
  bench.decoder->train();
  const DecoderOptions& options = bench.options;
  if (main_rank) print_decoder(options, job.placement);
  if (job.group != nullptr) {
    if (main_rank) training_flops(options, kPeerBatch, kPeerLocations, kPeerBatch * kPeerSteps);
    bench_data_parallel(bench, *job.group);
    return 0;
  }
  const double flops = training_flops(options, kPeerBatch, kPeerLocations, kPeerBatch * kPeerSteps);
  const auto step = [&](StepTimes& times) { bench.step(times, 0, kPeerBatch, nullptr); };
  const StepTimes times = time_steps(step);
  const double seconds = median(times.total);
  print_step(times);
  std::printf("speed: %.1f images/s, %.1f GFLOP/s achieved\n", kPeerBatch / seconds, flops / seconds / 1e9);
  StepTimes profiled;
  print_op_profile(
      "one step", [&] { step(profiled); }, 20);
  return 0;
}

int bench_scst(const Job& job) {
  print_machine();
  torch::manual_seed(job.composition.config.has("seed") ? job.composition.config.get<int>("seed") : 0);
  DecoderBench bench(job.placement, peer_decoder_options(job.composition.config));
  bench.decoder->train();
  print_decoder(bench.options, job.placement);
  constexpr int64_t kSamples = 5;
  const auto corpus = synthetic_references(bench.options.vocab_size);
  const CiderD cider(corpus);
  const std::vector<std::vector<Tokens>> references(corpus.begin(), corpus.begin() + kPeerBatch);
  SearchOptions sampling;
  sampling.method = SearchMethod::sample;
  sampling.max_length = kPeerSteps;
  SearchOptions greedy_options = sampling;
  greedy_options.method = SearchMethod::greedy;
  const auto greedy_search = make_caption_search(greedy_options);
  ScstOptions scst_options;
  scst_options.samples = kSamples;

  const double xent =
      median(time_steps([&](StepTimes& times) { bench.step(times, 0, kPeerBatch, nullptr); }).total);
  std::printf("cross-entropy step: %.1f ms, %.1f images/s\n", 1e3 * xent, kPeerBatch / xent);
  ScstTimes warmup, timed;
  int64_t sampled_words = 0;
  const auto step = [&](ScstTimes& times) {
    const auto start = Clock::now();
    for (auto& parameter : bench.decoder->parameters()) parameter.mutable_grad() = torch::Tensor();
    SampledCaptions sampled;
    {
      const Autocast autocast(bench.placement);
      sampled = sample_captions(*bench.decoder, bench.features.repeat_interleave(kSamples, 0), sampling);
    }
    bench.synchronize();
    times.sample.push_back(seconds_since(start));
    const auto greedy = greedy_search->search(*bench.decoder, bench.features);
    times.greedy.push_back(seconds_since(start) - times.sample.back());
    const double before_reward = seconds_since(start);
    const ScstRewards scored = score_samples(cider, sampled, greedy, references, scst_options, id_words);
    times.reward.push_back(seconds_since(start) - before_reward);
    const double before_backward = seconds_since(start);
    scst_terms(sampled, scored.rewards, scored.baselines).loss.backward();
    bench.synchronize();
    times.backward.push_back(seconds_since(start) - before_backward);
    const double before_update = seconds_since(start);
    bench.optimizer.step();
    bench.synchronize();
    times.optimizer.push_back(seconds_since(start) - before_update);
    times.total.push_back(seconds_since(start));
    for (const auto& words : sampled.words) sampled_words += static_cast<int64_t>(words.size());
  };
  for (int i = 0; i < kWarmupSteps; ++i) step(warmup);
  sampled_words = 0;
  for (int i = 0; i < kTimedSteps; ++i) step(timed);
  const double scst = median(timed.total);
  std::printf(
      "SCST step, %ld images x %ld samples (mean %.1f words) + greedy baseline (median of %d): %.1f ms = "
      "sample with autograd %.1f + greedy %.1f + CIDEr-D %.1f + backward %.1f + optimizer %.1f\n",
      long(kPeerBatch), long(kSamples), double(sampled_words) / (kTimedSteps * kPeerBatch * kSamples),
      kTimedSteps, 1e3 * scst, 1e3 * median(timed.sample), 1e3 * median(timed.greedy),
      1e3 * median(timed.reward), 1e3 * median(timed.backward), 1e3 * median(timed.optimizer));
  std::printf(
      "speed: %.1f images/s (%.1f sampled captions/s); the cross-entropy step is %.1fx faster per image\n",
      kPeerBatch / scst, kPeerBatch * kSamples / scst, scst / xent);
  return 0;
}

}  // namespace saccade::cli
