// `saccade bench encoder`: images/s of the frozen ImageNet encoders in eval mode, as `saccade
// extract` runs them: ResNet-50, ResNet-101 and VGG-19 (or only the network `encoder=` names) at
// 224 and 448 px, batches of 1 and 8, through LibTorch's modules and through oneDNN with prepared,
// BatchNorm-folded weights (models/conv_batchnorm.h), side by side. Each cell is the best of the
// timed runs (at least 2, and at least 3 s of them; the two paths alternate) after one warm-up run,
// on random images and random weights (the speed does not depend on the values).
// scripts/bench_torchvision_encoder.py prints the same table for torchvision.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli/bench.h"
#include "cli/runtime.h"
#include "models/encoder.h"

namespace saccade::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Best images/s of encoder->forward_grid(images) through LibTorch's modules and through oneDNN,
// timed alternately (so that a slow spell of a shared machine hits both) after a warm-up run of
// each, until each has at least 2 runs and 3 s.
std::pair<double, double> images_per_second(EncoderImpl& encoder, const torch::Tensor& images) {
  double best[2] = {0.0, 0.0}, spent[2] = {0.0, 0.0};
  for (int runs = 0; runs < 3 || spent[0] < 3.0 || spent[1] < 3.0; ++runs) {
    for (const int onednn : {0, 1}) {
      encoder.set_onednn_inference(onednn == 1);
      const auto start = Clock::now();
      encoder.forward_grid(images);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (runs == 0) continue;  // warm-up: first allocations, oneDNN's weight preparation
      spent[onednn] += seconds;
      best[onednn] = std::max(best[onednn], static_cast<double>(images.size(0)) / seconds);
    }
  }
  return {best[0], best[1]};
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
  std::printf(
      "%-10s %5s %6s %22s %22s %7s\n", "network", "size", "batch", "LibTorch (img/s)",
      "oneDNN prepared (img/s)", "ratio");
  for (const std::string& name : networks(job)) {
    EncoderOptions options;
    options.name = name;
    Encoder encoder = build_encoder(options);
    encoder->eval();
    c10::InferenceMode inference;
    std::string path;
    for (const int64_t size : {224, 448}) {
      for (const int64_t batch : {1, 8}) {
        torch::manual_seed(0);
        const torch::Tensor images = torch::randn({batch, 3, size, size});  // [B, 3, S, S]
        const auto [modules, prepared] = images_per_second(*encoder, images);
        path = encoder->inference_path(images);
        std::printf(
            "%-10s %5ld %6ld %22.2f %22.2f %6.2fx\n", name.c_str(), long(size), long(batch), modules,
            prepared, prepared / modules);
        std::fflush(stdout);
      }
    }
    std::printf("  %s's prepared column ran: %s\n", name.c_str(), path.c_str());
  }
  return 0;
}

}  // namespace saccade::cli
