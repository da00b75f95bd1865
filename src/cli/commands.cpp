// The table of saccade's commands: one function per command gives its name, help texts, flags and
// the function that runs it; commands() lists them in `--help` order.
#include "cli/command.h"

#include <limits>

namespace saccade::cli {

std::string Invocation::flag(const std::string& name, const std::string& fallback) const {
  const auto it = flags.find(name);
  return it == flags.end() ? fallback : it->second;
}

int64_t Invocation::positive_flag(const std::string& name, const std::string& fallback) const {
  return integer_flag(name, fallback, 1, std::numeric_limits<int64_t>::max(), "a positive integer");
}

int64_t Invocation::integer_flag(
    const std::string& name,
    const std::string& fallback,
    int64_t low,
    int64_t high,
    const std::string& expected) const {
  const std::string text = flag(name, fallback);
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || used == 0 || value < low || value > high) {
    throw std::invalid_argument(name + " must be " + expected + ", got '" + text + "'");
  }
  return value;
}

ComposeRequest Job::request() const {
  ComposeRequest request = invocation->request;
  request.overrides = overrides;
  return request;
}

namespace {

CommandSpec train_command() {
  return {
      "train",
      "Train a captioner; the run lands in experiments/<run.name>/<timestamp>/.",
      "Composes the config (configs/config.yaml plus overrides), creates the run folder with the\n"
      "resolved config, and trains. With -m, sweeps every combination of the comma-separated values,\n"
      "one numbered sub-folder per job. Data-parallel over N processes: --nproc N here, or under\n"
      "torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Example: saccade train experiment=shapes_soft",
      {{"--nproc", "N",
        "start N local workers of one data-parallel job (default 1; at most max(8, 4 x cores))"}},
      /*composes_config=*/true,
      /*creates_run_folder=*/true,
      /*accepts_positional=*/false,
      run_train,
      /*data_parallel=*/true,
      check_train};
}

CommandSpec eval_command() {
  return {
      "eval",
      "Decode a split with a trained run's best (or last) checkpoint and score it.",
      "Loads <run>/checkpoints/best with the run's config.yaml over today's defaults, decodes the split\n"
      "with decode.* (overrides apply), writes <run>/results/<split>.json (COCO results) and\n"
      "<split>_scores.json, and prints the scores. With overrides or --checkpoint last the files are\n"
      "<split>-<overrides>.json (or <split>-<digest>.json) beside the run's own, which --replace writes\n"
      "over instead. Overrides change how the model is used, never the model: a group switch\n"
      "(decoder=soft) or an architecture key (decoder.heads, encoder.grid) differing from the run's is\n"
      "refused. With --against FILE (read and checked before anything is decoded or written, so it may\n"
      "be the results file this run replaces), also how many captions the two share and both sets'\n"
      "scores side by side. Example: saccade eval --run DIR decode.beam_size=5",
      {{"--run", "DIR", "the training run folder whose checkpoints/best to evaluate"},
       {"--split", "NAME", "train | val | test (default test)"},
       {"--checkpoint", "NAME", "best (default) or last: the last finished epoch's"},
       {"--against", "FILE", "COCO results JSON of the same images to compare the captions with"},
       {"--replace", "", "with overrides, write results/<split>.json over the run's own results"}},
      /*composes_config=*/true,
      /*creates_run_folder=*/false,
      /*accepts_positional=*/false,
      run_eval};
}

CommandSpec score_command() {
  return {
      "score",
      "Score any captions (COCO results JSON) against references: BLEU, METEOR, ROUGE-L, CIDEr-D.",
      "Reads a COCO results file and a COCO or Karpathy reference file and prints the metrics as the\n"
      "coco-caption scorer computes them; with --against, another results file of the same images:\n"
      "how many captions the two share and both files' scores side by side. METEOR needs Java and\n"
      "eval.meteor_jar=/path/to/meteor-1.5.jar.",
      {{"--references", "FILE", "COCO captions JSON or Karpathy split JSON"},
       {"--results", "FILE", "COCO results JSON: [{\"image_id\": ..., \"caption\": ...}]"},
       {"--against", "FILE", "COCO results JSON of the same images to compare --results with"},
       {"--allow-partial", "", "score the intersection when ids differ"}},
      /*composes_config=*/true,
      /*creates_run_folder=*/false,
      /*accepts_positional=*/false,
      run_score};
}

CommandSpec caption_command() {
  return {
      "caption",
      "Caption images with a trained run and draw where the model looked.",
      "Captions every image given (files or folders), prints file<TAB>caption and writes overlays;\n"
      "decode.*, viz.* and runtime.* overrides apply, as for eval and visualize. An --out whose\n"
      "overlays would replace an input is refused, and one holding earlier overlays of the same\n"
      "names unless --replace. Example:\n"
      "saccade caption photos/ --run DIR --out overlays/ decode.max_length=12",
      {{"--run", "DIR", "the run folder whose best checkpoint to use"},
       {"--checkpoint", "NAME", "best (default) or last"},
       {"--beam", "K", "beam size"},
       {"--n-best", "N", "with --json: the N best captions of each image (N <= K)"},
       {"--out", "DIR", "where overlays go (default <run>/captions); never over an input"},
       {"--replace", "", "write over earlier overlays of the same names in that folder"},
       {"--json", "", "machine-readable output"}},
      /*composes_config=*/true,
      /*creates_run_folder=*/false,
      /*accepts_positional=*/true,
      run_caption};
}

CommandSpec serve_command() {
  return {
      "serve",
      "Explore attention in the browser: caption any image with one or more trained runs.",
      "Loads each run's best checkpoint once and serves a page and a JSON API (docs/serve.md): drop an\n"
      "image or pick one of a run's test images, choose the search, step through the words to see\n"
      "where each looked, put two runs side by side. Listens on 127.0.0.1 unless --host names another\n"
      "address; serve.* sets the limits, decode.* and runtime.* overrides apply. Ctrl-C stops it.\n"
      "Example: saccade serve --run experiments/shapes_soft/DIR --run experiments/shapes_hard/DIR",
      {{"--run", "DIR", "a training run folder to load (repeat for more runs side by side)"},
       {"--checkpoint", "NAME", "best (default) or last"},
       {"--port", "PORT", "the TCP port (default 8080; 0 = any free port, logged)"},
       {"--host", "ADDRESS", "the address to listen on (default 127.0.0.1: this machine only)"}},
      /*composes_config=*/true,
      /*creates_run_folder=*/false,
      /*accepts_positional=*/false,
      run_serve};
}

CommandSpec visualize_command() {
  return {
      "visualize",
      "Draw attention overlays for dataset images with their references.",
      "Writes overlay grids for n images of a split into <run>/visualize/<split>/ (or --out), with the\n"
      "references beside the caption; decode.* overrides apply (greedy unless --beam). Overlays\n"
      "already in that folder are refused unless --replace. Example:\n"
      "saccade visualize --run DIR --n 8 decode.hard_read=expectation",
      {{"--run", "DIR", "the run folder whose best checkpoint to use"},
       {"--checkpoint", "NAME", "best (default) or last"},
       {"--split", "NAME", "train, val or test (default test)"},
       {"--n", "COUNT", "how many images (default 16)"},
       {"--beam", "K", "beam size (default 1: greedy)"},
       {"--out", "DIR", "where overlays go (default <run>/visualize/<split>)"},
       {"--replace", "", "write over overlays already in that folder"}},
      /*composes_config=*/true,
      /*creates_run_folder=*/false,
      /*accepts_positional=*/false,
      run_visualize};
}

CommandSpec report_command() {
  return {
      "report",
      "Rebuild report.html of a run folder or a sweep folder.",
      "Writes <DIR>/report.html from the files the run left (metrics, scores, samples, config); for a\n"
      "multirun's sweep folder, every job's page, the sweep page, and comparison.md and comparison.csv\n"
      "(jobs alike but for their seed as one run, means and deviations over the seeds), which it prints.\n"
      "Training writes these pages itself; this rebuilds them, e.g. after `saccade eval` or by hand.",
      {{"--run", "DIR", "a run folder (with config.yaml) or a sweep folder (with multirun.yaml)"}},
      /*composes_config=*/false,
      /*creates_run_folder=*/false,
      /*accepts_positional=*/false,
      run_report};
}

CommandSpec extract_command() {
  return {
      "extract",
      "Run the encoder over a split or loose images and cache the annotation grids.",
      "Writes fp16 safetensors shards for every split of the dataset (in --out DIR, default\n"
      "<dataset.cache_dir>/features/<encoder.name>/<split>/), or with --images one f32 [D,H,W]\n"
      "tensor per image keyed by file name. Example: saccade extract --images photos/ --out g.safetensors\n"
      "encoder=resnet101 encoder.weights=resnet101.safetensors",
      {{"--images", "PATH", "image files or folders (more may follow as arguments) instead of a dataset"},
       {"--out", "PATH", "output safetensors file for --images, or the feature cache folder"}},
      /*composes_config=*/true,
      /*creates_run_folder=*/false,
      /*accepts_positional=*/true,
      run_extract};
}

CommandSpec prepare_command() {
  return {
      "prepare",
      "Materialize a dataset: the shapes world as PNGs + Karpathy JSON, image caches.",
      "For dataset=shapes, generates the images, captions and boxes deterministically from the seed.\n"
      "For every dataset, writes the preprocessed image cache of each split.",
      {},
      /*composes_config=*/true,
      /*creates_run_folder=*/false,
      /*accepts_positional=*/false,
      run_prepare};
}

CommandSpec bench_command() {
  return {
      "bench",
      "Measure speed: `saccade bench <case>` with case decoder, scst, beam, encoder, loader, serve or "
      "machine.",
      "Runs one benchmark case and prints its numbers beside the machine's matmul GFLOP/s.\n"
      "Run `saccade bench` with no case to list the cases. `saccade bench decoder --nproc N` times\n"
      "the training step data-parallel over N local processes beside one process on the same cores.",
      {{"--nproc", "N", "decoder only: N local data-parallel workers (default 1; at most max(8, 4 x cores))"},
       {"--run", "DIR", "serve only: the run folder to serve"},
       {"--image", "FILE", "serve only: the image every request sends (default the run's first test image)"},
       {"--requests", "N", "serve only: requests per measurement (default 200)"}},
      /*composes_config=*/true,
      /*creates_run_folder=*/false,
      /*accepts_positional=*/true,
      run_bench,
      /*data_parallel=*/true};
}

}  // namespace

const std::vector<CommandSpec>& commands() {
  static const std::vector<CommandSpec> table = {
      train_command(), eval_command(),   score_command(),   caption_command(), visualize_command(),
      serve_command(), report_command(), extract_command(), prepare_command(), bench_command()};
  return table;
}

}  // namespace saccade::cli
