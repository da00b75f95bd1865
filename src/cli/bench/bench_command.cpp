// `saccade bench <case>`: speed measurements printed with the machine's matmul GFLOP/s.
// Each case is one function; the table below is the only place that lists them.
#include <unistd.h>

#include <cstdio>

#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench/bench.h"
#include "cli/runtime.h"

namespace saccade::cli {

DecoderOptions peer_decoder_options(const Config& config) {
  DecoderOptions options;
  options.vocab_size = 10000;
  options.annotation_dim = 2048;
  if (decoder_kind_from(config) == DecoderKind::transformer) {
    options.kind = DecoderKind::transformer;
    options.transformer.layers = 6;
    options.transformer.heads = 8;
    options.transformer.model_dim = 512;
    options.transformer.ffn_dim = 2048;
    options.dropout = 0.1;
    return options;
  }
  options.lstm.embed_dim = 512;
  options.lstm.hidden_dim = 512;
  options.lstm.attention_kind = "additive";
  options.lstm.attention_dim = 512;
  options.lstm.gate = Gate::vector;
  options.lstm.deep_output = false;
  options.dropout = 0.5;
  return options;
}

std::string describe_decoder(const DecoderOptions& o) {
  char text[256];
  if (o.kind == DecoderKind::transformer) {
    std::snprintf(
        text, sizeof(text),
        "Transformer decoder: D=%ld d=%ld, %ld layers, %ld heads, feed-forward %ld, V=%ld, dropout %.1f",
        long(o.annotation_dim), long(o.transformer.model_dim), long(o.transformer.layers),
        long(o.transformer.heads), long(o.transformer.ffn_dim), long(o.vocab_size), o.dropout);
  } else {
    std::snprintf(
        text, sizeof(text),
        "LSTM decoder: D=%ld A=%ld E=%ld H=%ld V=%ld, %s attention, %s gate, deep output %s, dropout %.1f",
        long(o.annotation_dim), long(o.lstm.attention_dim), long(o.lstm.embed_dim), long(o.lstm.hidden_dim),
        long(o.vocab_size),
        (o.lstm.attention_kind + (o.lstm.attention_kind == "multihead"
                                      ? " (" + std::to_string(o.lstm.attention_heads) + " heads)"
                                      : ""))
            .c_str(),
        to_string(o.lstm.gate).c_str(), o.lstm.deep_output ? "on" : "off", o.dropout);
  }
  return text;
}

namespace {

struct BenchCase {
  std::string name;
  std::string summary;
  int (*run)(const Job&);
};

// Prints the facts every benchmark result is read against: cores, threads, wait policy, BLAS speed.
int bench_machine(const Job&) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::cout << "host " << host << ", " << std::thread::hardware_concurrency() << " cores, "
            << runtime_environment() << "\n";
  for (int size : {256, 1024, 2048}) {
    std::cout << "matmul " << size << "x" << size << ": " << measure_matmul_gflops(size) << " GFLOP/s\n";
  }
  return 0;
}

const std::vector<BenchCase>& bench_cases() {
  static const std::vector<BenchCase> table = {
      {"machine", "cores, OpenMP wait policy and matmul GFLOP/s", bench_machine},
      {"decoder", "one decoder training step (peers' configuration): images/s, GFLOP/s, profile",
       bench_decoder},
      {"scst", "one self-critical step (5 samples per image, greedy baseline) beside the cross-entropy step",
       bench_scst},
      {"loader", "images/s: decode+resize from files, reads from the image cache, whole loader batches",
       bench_loader},
      {"beam",
       "caption search ms/image: greedy and beam 1, 3, 5; one image and 32 at once (decoder.attention.kind "
       "picks the LSTM's attention)",
       bench_beam},
      {"encoder",
       "images/s of ResNet-50/101 and VGG-19 (or encoder=<name>) at 224 and 448 px, batch 1 and 8: "
       "LibTorch modules beside oneDNN with prepared weights (and in bf16 on CPUs with AVX-512 BF16)",
       bench_encoder},
      {"serve",
       "latency percentiles and requests/s of POST /caption to `saccade serve` on --run DIR, concurrency 1 "
       "and 4, greedy and beam 3 (--image FILE, default the run's first test image; --requests N, default "
       "200)",
       bench_serve},
  };
  return table;
}

}  // namespace

int run_bench(const Job& job) {
  const auto& positional = job.invocation->positional;
  if (positional.empty()) {
    std::cout << "cases of saccade bench <case>:\n";
    for (const auto& bench : bench_cases()) std::cout << "  " << bench.name << "  " << bench.summary << "\n";
    return 0;
  }
  std::string names;
  for (const auto& bench : bench_cases()) names += (names.empty() ? "" : ", ") + bench.name;
  if (positional.size() > 1) {
    throw ConfigError(
        "saccade bench takes one case, got " + std::to_string(positional.size()) + "; cases: " + names);
  }
  if (job.group != nullptr && positional.front() != "decoder") {
    throw ConfigError(
        "Only `saccade bench decoder` runs on several processes, not '" + positional.front() + "'");
  }
  for (const auto& bench : bench_cases()) {
    if (bench.name == positional.front()) return bench.run(job);
  }
  throw ConfigError(
      "Unknown bench case '" + positional.front() + "'; cases: " + names +
      " (`saccade bench` describes them)");
}

}  // namespace saccade::cli
