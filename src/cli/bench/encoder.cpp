// `saccade bench encoder`: images/s of the frozen ImageNet encoders in eval mode, as `saccade
// extract` runs them: ResNet-50, ResNet-101 and VGG-19 (or only the network `encoder=` names) at
// 224 and 448 px, batches of 1 and 8, through LibTorch's modules, through oneDNN with prepared,
// BatchNorm-folded weights (models/conv_batchnorm.h) and, on CPUs with AVX-512 BF16, through the
// same in bf16 (runtime.precision=bf16), side by side. Each cell is the best of the timed runs
// (at least 2, and at least 3 s of them; the paths alternate) after one warm-up run, on random
// images and random weights (the speed does not depend on the values).
// scripts/bench_torchvision_encoder.py prints the same table for torchvision.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/bench/bench.h"
#include "cli/runtime.h"
#include "kernels/inference_precision.h"
#include "kernels/kernel_isa.h"
#include "models/encoder.h"

namespace saccade::cli {
namespace {

using Clock = std::chrono::steady_clock;

// A way to run the encoder: through oneDNN or the modules, in float32 or bf16.
struct EncoderPath {
  bool onednn;
  Precision precision;
};

// Best images/s of encoder->forward_grid(images) along each path, timed alternately (so that a
// slow spell of a shared machine hits all) after a warm-up run of each, until each has at least
// 2 runs and 3 s.
std::vector<double> images_per_second(
    EncoderImpl& encoder, const torch::Tensor& images, const std::vector<EncoderPath>& paths) {
  std::vector<double> best(paths.size(), 0.0), spent(paths.size(), 0.0);
  const auto slowest_spent = [&] { return *std::min_element(spent.begin(), spent.end()); };
  for (int runs = 0; runs < 3 || slowest_spent() < 3.0; ++runs) {
    for (size_t p = 0; p < paths.size(); ++p) {
      encoder.set_onednn_inference(paths[p].onednn);
      const InferencePrecision precision({torch::kCPU, paths[p].precision});
      const auto start = Clock::now();
      encoder.forward_grid(images);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (runs == 0) continue;  // warm-up: first allocations, oneDNN's weight preparation
      spent[p] += seconds;
      best[p] = std::max(best[p], static_cast<double>(images.size(0)) / seconds);
    }
  }
  encoder.set_onednn_inference(true);
  return best;
}

// The networks to time: the one `encoder=<name>` chose on the command line, or the default three.
std::vector<std::string> networks(const Job& job) {
  for (const auto& override_text : job.overrides) {
    if (override_text.rfind("encoder=", 0) == 0)
      return {job.composition.config.get<std::string>("encoder.name")};
  }
  return {"resnet50", "resnet101", "vgg19"};
}

}  // namespace

int bench_encoder(const Job& job) {
  if (!job.placement.device.is_cpu()) {
    throw ConfigError("saccade bench encoder times the CPU paths; run it with runtime.device=cpu");
  }
  std::printf(
      "machine: LibTorch threads %d, %s, matmul 1024x1024 %.1f GFLOP/s\n", at::get_num_threads(),
      runtime_environment().c_str(), measure_matmul_gflops(1024));
  std::vector<EncoderPath> paths = {{false, Precision::fp32}, {true, Precision::fp32}};
  if (has_avx512_bf16()) {
    paths.push_back({true, Precision::bf16});
  } else {
    std::printf("(no bf16 column: this CPU has no AVX-512 BF16, and bf16 runs the encoder in float32)\n");
  }
  std::printf("%-10s %5s %6s %17s %17s", "network", "size", "batch", "LibTorch img/s", "oneDNN img/s");
  if (paths.size() == 3) std::printf(" %17s", "oneDNN bf16 img/s");
  std::printf(" %14s\n", paths.size() == 3 ? "ratios to LibTorch" : "ratio");
  for (const std::string& name : networks(job)) {
    EncoderOptions options;
    options.name = name;
    Encoder encoder = build_encoder(options);
    encoder->eval();
    c10::InferenceMode inference;
    for (const int64_t size : {224, 448}) {
      for (const int64_t batch : {1, 8}) {
        torch::manual_seed(0);
        const torch::Tensor images = torch::randn({batch, 3, size, size});  // [B, 3, S, S]
        const std::vector<double> speed = images_per_second(*encoder, images, paths);
        std::printf("%-10s %5ld %6ld", name.c_str(), long(size), long(batch));
        for (const double images_per_s : speed) std::printf(" %17.2f", images_per_s);
        for (size_t p = 1; p < speed.size(); ++p) std::printf(" %6.2fx", speed[p] / speed[0]);
        std::printf("\n");
        std::fflush(stdout);
      }
    }
    const torch::Tensor probe = torch::empty({1, 3, 224, 224});
    for (size_t p = 1; p < paths.size(); ++p) {
      const InferencePrecision precision({torch::kCPU, paths[p].precision});
      std::printf(
          "  %s's oneDNN column %zu ran: %s\n", name.c_str(), p, encoder->inference_path(probe).c_str());
    }
  }
  return 0;
}

}  // namespace saccade::cli
