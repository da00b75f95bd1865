// `saccade caption` and `saccade visualize`: apply a trained run's best checkpoint to images and
// draw where each word looked.
//
// Both rebuild the model from the run's own checkpoints/best/config.yaml (architecture and image
// preprocessing) and vocab.json, so they work whatever the repository's configs say now.
// caption: greedy search, or beam search with --beam K > 1 (the run's decode.* for the rest);
// every file given (folders expanded to their image files, sorted) is captioned;
// `file<TAB>caption` per image on stdout (or one JSON array with --json), one overlay grid PNG
// per image in --out. A file that cannot be read is reported on stderr and the others still
// run; the exit code is then 1.
// visualize: the first n images of a split of the run's dataset, with their references, into
// <run>/samples/.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <stdexcept>

#include "cli/command.h"
#include "data/prepare.h"
#include "io/json.h"
#include "io/log.h"
#include "train/checkpoint.h"
#include "viz/sample_overlays.h"

namespace saccade::cli {
namespace {

// A trained model ready to caption, with what it was trained under.
struct TrainedRun {
  Config config;  // the run's resolved config
  Captioner model{nullptr};
  Vocabulary vocabulary;
  ImageOptions image;
  // The run's decode.* when its config has them; otherwise greedy with train.max_length.
  BeamOptions search;
};

// Loads <run>/checkpoints/best. Throws std::runtime_error, one line, for a missing checkpoint or
// one whose weights do not fit its config.yaml and vocab.json.
TrainedRun load_trained_run(const std::filesystem::path& run_dir) {
  const std::filesystem::path best = run_dir / "checkpoints" / "best";
  check_checkpoint(best);
  TrainedRun run;
  try {
    run.config = Config(YAML::LoadFile((best / "config.yaml").string()));
    EncoderOptions encoder = encoder_options_from(run.config);
    encoder.weights.reset();  // the checkpoint holds every weight
    validate(encoder);
    run.image = image_options_from(run.config);
    validate(run.image);
    run.vocabulary = load_checkpoint_vocabulary(best);
    run.model = build_captioner(encoder, decoder_options_from(run.config), run.vocabulary.size());
    load_checkpoint(best, *run.model, nullptr);
    if (run.config.has("decode")) {
      run.search = beam_options_from(run.config);
    } else {
      run.search.beam_size = 1;
      run.search.max_length = run.config.get<int64_t>("train.max_length");
    }
  } catch (const std::exception& error) {
    const std::string message = error.what();
    throw std::runtime_error(
        "The checkpoint " + best.string() +
        " does not match its config.yaml and vocab.json: " + message.substr(0, message.find('\n')));
  }
  run.search.start_id = Vocabulary::kStart;
  run.search.end_id = Vocabulary::kEnd;
  run.model->eval();
  return run;
}

std::filesystem::path required_run(const Invocation& invocation) {
  if (!invocation.has_flag("--run")) {
    throw std::invalid_argument(
        "saccade " + invocation.command->name + " needs --run DIR (a training run folder)");
  }
  return invocation.flag("--run");
}

int64_t positive_flag(const Invocation& invocation, const std::string& name, const std::string& fallback) {
  const std::string text = invocation.flag(name, fallback);
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || used == 0 || value < 1) {
    throw std::invalid_argument(name + " must be a positive integer, got '" + text + "'");
  }
  return value;
}

bool has_image_extension(const std::filesystem::path& path) {
  static const std::set<std::string> kExtensions = {".jpg",  ".jpeg", ".png", ".bmp", ".tif", ".tiff",
                                                    ".webp", ".pnm",  ".ppm", ".pgm", ".pbm"};
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return kExtensions.count(extension) > 0;
}

// The inputs in order: a folder becomes its image files (by extension, sorted); a file is kept
// as given, whatever it holds (decoding reports it if it is no image).
std::vector<std::filesystem::path> expand_inputs(const std::vector<std::string>& arguments) {
  std::vector<std::filesystem::path> files;
  for (const auto& argument : arguments) {
    if (!std::filesystem::is_directory(argument)) {
      files.emplace_back(argument);
      continue;
    }
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(argument)) {
      if (entry.is_regular_file() && has_image_extension(entry.path())) found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

// <out>/<stem>.png, or <stem>-2.png, ... when an earlier input had the same stem.
std::filesystem::path overlay_path(
    const std::filesystem::path& out_dir, const std::filesystem::path& input, std::set<std::string>& used) {
  const std::string stem = input.stem().string();
  std::string name = stem;
  for (int suffix = 2; used.count(name) > 0; ++suffix) name = stem + "-" + std::to_string(suffix);
  used.insert(name);
  return out_dir / (name + ".png");
}

// A tensor of any rank as nested JSON arrays of numbers.
Json tensor_json(const torch::Tensor& tensor) {
  Json::Array items;
  if (tensor.dim() == 1) {
    const auto values = tensor.to(torch::kDouble).contiguous();
    const auto access = values.accessor<double, 1>();
    for (int64_t i = 0; i < values.size(0); ++i) items.emplace_back(access[i]);
  } else {
    for (int64_t i = 0; i < tensor.size(0); ++i) items.push_back(tensor_json(tensor[i]));
  }
  return Json(std::move(items));
}

VizOptions viz_options_or_defaults(const Config& config) {
  VizOptions options = config.has("viz") ? viz_options_from(config) : VizOptions{};
  validate(options);
  return options;
}

}  // namespace

int run_caption(const Job& job) {
  const Invocation& invocation = *job.invocation;
  const std::filesystem::path run_dir = required_run(invocation);
  const int64_t beam_size = positive_flag(invocation, "--beam", "1");
  if (invocation.positional.empty()) {
    throw std::invalid_argument("saccade caption needs images or folders to caption");
  }
  const bool json = invocation.has_flag("--json");
  TrainedRun run = load_trained_run(run_dir);
  run.search.beam_size = beam_size;
  validate(run.search);
  const VizOptions viz = viz_options_or_defaults(run.config);
  const std::filesystem::path out_dir = invocation.flag("--out", (run_dir / "captions").string());
  std::filesystem::create_directories(out_dir);

  Json::Array results;
  std::set<std::string> used_names;
  int failed = 0;
  for (const auto& file : expand_inputs(invocation.positional)) {
    try {
      const torch::Tensor crop = resize_and_crop(decode_image(file), run.image);  // uint8 [crop, crop, 3]
      const DecodedCaption caption =
          caption_images(*run.model, crop.unsqueeze(0), run.image, run.search).front();
      const std::string text = join_words(run.vocabulary.decode(caption.tokens));
      const auto figure = make_attention_figure(*run.model, crop, caption, run.vocabulary, {text});
      const std::filesystem::path overlay = overlay_path(out_dir, file, used_names);
      write_image_file(overlay, render_attention_figure(figure, viz));
      if (!json) {
        std::cout << file.string() << "\t" << text << std::endl;
        continue;
      }
      Json::Array words;
      for (const auto& word : figure.words) words.emplace_back(word);
      results.push_back(Json::object(
          {{"file", file.string()},
           {"caption", text},
           {"words", Json(std::move(words))},
           {"log_prob", caption.log_prob},
           {"finished", caption.finished},
           {"grid", Json::array({Json(figure.grid[0]), Json(figure.grid[1])})},
           {"attention", tensor_json(caption.alphas)},
           {"overlay", overlay.string()}}));
    } catch (const std::exception& error) {
      ++failed;
      const std::string message = error.what();
      std::cerr << "saccade: " << file.string() << ": " << message.substr(0, message.find('\n')) << std::endl;
      if (json)
        results.push_back(
            Json::object({{"file", file.string()}, {"error", message.substr(0, message.find('\n'))}}));
    }
  }
  if (json) std::cout << dump_json(Json(std::move(results)), 2) << std::endl;
  if (failed > 0) log::warn() << failed << " of the inputs could not be captioned";
  return failed > 0 ? kExitFailure : 0;
}

int run_visualize(const Job& job) {
  const Invocation& invocation = *job.invocation;
  const std::filesystem::path run_dir = required_run(invocation);
  const Split split = parse_split(invocation.flag("--split", "test"));
  const int64_t count = positive_flag(invocation, "--n", "16");
  const VizOptions viz = viz_options_from(job.composition.config);
  validate(viz);
  TrainedRun run = load_trained_run(run_dir);

  DatasetOptions dataset = dataset_options_from(run.config);
  validate(dataset);
  const PreparedDataset data = ensure_prepared(dataset, {split});
  const auto images = make_caption_dataset(data.split(split), run.vocabulary, dataset.vocabulary);
  const auto written = write_sample_overlays(
      *run.model, run.vocabulary, *images, count, run.image, greedy_options_of(run.search), viz,
      run_dir / "samples");
  for (const auto& overlay : written) {
    std::cout << overlay.file.string() << "\t" << overlay.caption << "\n";
  }
  log::info() << "Wrote " << written.size() << " overlays of the " << to_string(split) << " split into "
              << (run_dir / "samples").string();
  return 0;
}

}  // namespace saccade::cli
