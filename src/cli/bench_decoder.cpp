// `saccade bench decoder`: the speed of one decoder training step (forward, backward, Adam) on
// synthetic annotation grids, in the configuration the peer implementations publish numbers for:
// B=32, L=196, D=2048, attention 512, embedding 512, LSTM 512, V=10000, T=20, additive attention,
// vector gate, no deep output, dropout 0.5. Prints images/s, ms/step by phase, the achieved
// GFLOP/s with the FLOP formula, the machine's matmul GFLOP/s and a per-op profile of one step.
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench.h"
#include "cli/runtime.h"
#include "models/decoder.h"
#include "train/objectives.h"

extern "C" int openblas_get_num_threads(void);  // OpenBLAS is linked first (src/cli/CMakeLists.txt)

namespace saccade::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kBatch = 32, kLocations = 196, kSteps = 20;
constexpr int kWarmupSteps = 2, kTimedSteps = 10;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Useful FLOPs of one training step (multiply-adds count 2; elementwise work is not counted).
// Prints the formula with this configuration's numbers.
double training_flops(const DecoderOptions& o, int64_t batch, int64_t locations, int64_t words) {
  const double B = batch, L = locations, N = words, D = o.annotation_dim, E = o.embed_dim, H = o.hidden_dim;
  const double A = o.attention_dim, V = o.vocab_size,
               G = o.gate == Gate::vector ? D : (o.gate == Gate::scalar ? 1 : 0);
  const double keys = 2 * B * L * D * A;                // W_a a, once per image
  const double init = 2 * B * 2 * D * H;                // f_init_h, f_init_c
  const double per_word = 2 * (H * (A + G + 4 * H)      // h_{t-1} -> query | gate | LSTM U
                               + L * A + L * D          // scores w^T tanh(.), context sum alpha a
                               + D * 4 * H + E * 4 * H  // LSTM input weights
                               + H * V);                // output layer
  const double forward = keys + init + N * per_word;
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

int bench_decoder(const Job& job) {
  std::printf(
      "machine: %u cores, LibTorch threads %d, OpenBLAS threads %d, %s\n",
      std::thread::hardware_concurrency(), at::get_num_threads(), openblas_get_num_threads(),
      runtime_environment().c_str());
  std::printf("matmul 2048x2048: %.1f GFLOP/s\n", measure_matmul_gflops(2048));

  torch::manual_seed(job.composition.config.has("seed") ? job.composition.config.get<int>("seed") : 0);
  const DecoderOptions options = peer_decoder_options();
  AttentionLSTMDecoder decoder(options);
  decoder->train();
  torch::optim::Adam optimizer(decoder->parameters(), torch::optim::AdamOptions(4e-4));
  const auto features =
      torch::randn({kBatch, kLocations, options.annotation_dim}).relu_();  // like ReLU conv features
  const auto tokens = torch::randint(options.vocab_size, {kBatch, kSteps}, torch::kLong);
  const auto targets = torch::randint(options.vocab_size, {kBatch, kSteps}, torch::kLong);
  const auto lengths = torch::full({kBatch}, kSteps, torch::kLong);

  std::printf(
      "decoder: B=%ld L=%ld D=%ld A=%ld E=%ld H=%ld V=%ld T=%ld, %s attention, %s gate, deep output %s, "
      "dropout %.1f, Adam\n",
      long(kBatch), long(kLocations), long(options.annotation_dim), long(options.attention_dim),
      long(options.embed_dim), long(options.hidden_dim), long(options.vocab_size), long(kSteps),
      options.attention_kind.c_str(), to_string(options.gate).c_str(), options.deep_output ? "on" : "off",
      options.dropout);
  const double flops = training_flops(options, kBatch, kLocations, kBatch * kSteps);

  std::vector<double> forward_s, backward_s, optimizer_s, total_s;
  const auto step = [&] {
    const auto start = Clock::now();
    for (auto& parameter : decoder->parameters()) parameter.mutable_grad() = torch::Tensor();  // no memset
    const auto out = decoder->forward(features, tokens, lengths);
    const auto loss =
        soft_attention_loss(out.logits, targets, lengths, out.alphas, 1.0, XentReduction::per_token);
    const double forward = seconds_since(start);
    loss.total.backward();
    const double backward = seconds_since(start) - forward;
    optimizer.step();
    const double total = seconds_since(start);
    forward_s.push_back(forward);
    backward_s.push_back(backward);
    optimizer_s.push_back(total - forward - backward);
    total_s.push_back(total);
  };
  for (int i = 0; i < kWarmupSteps; ++i) step();
  forward_s.clear(), backward_s.clear(), optimizer_s.clear(), total_s.clear();
  for (int i = 0; i < kTimedSteps; ++i) step();

  const double seconds = median(total_s);
  std::printf(
      "step (median of %d): %.1f ms = forward %.1f + backward %.1f + optimizer %.1f (min %.1f, max %.1f)\n",
      kTimedSteps, 1e3 * seconds, 1e3 * median(forward_s), 1e3 * median(backward_s),
      1e3 * median(optimizer_s), 1e3 * *std::min_element(total_s.begin(), total_s.end()),
      1e3 * *std::max_element(total_s.begin(), total_s.end()));
  std::printf("speed: %.1f images/s, %.1f GFLOP/s achieved\n", kBatch / seconds, flops / seconds / 1e9);

  print_op_profile("one step", step, 20);
  return 0;
}

}  // namespace saccade::cli
