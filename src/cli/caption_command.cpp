// `saccade caption` and `saccade visualize`: apply a trained run's best checkpoint to images and
// draw where each word looked.
//
// Both load the run once (decode/trained_run.h): its config over today's defaults, so they work
// whatever the repository's configs say now, with visualize's overrides on top. The search is
// the run's decode.* with --beam K as the beam size (default 1, greedy).
// caption: every file given (folders expanded to their image files, sorted) is captioned;
// `file<TAB>caption` per image on stdout (or one JSON array with --json), one overlay grid PNG
// per image in --out. A file that cannot be read is reported on stderr and the others still
// run; the exit code is then 1.
// visualize: the first n images of a split of the run's dataset, with their references, into
// <run>/samples/.
#include <algorithm>
#include <iostream>
#include <set>
#include <stdexcept>

#include "cli/command.h"
#include "decode/decode_split.h"
#include "decode/trained_run.h"
#include "io/json.h"
#include "io/log.h"
#include "viz/sample_overlays.h"

namespace saccade::cli {
namespace {

std::filesystem::path required_run(const Invocation& invocation) {
  if (!invocation.has_flag("--run")) {
    throw std::invalid_argument(
        "saccade " + invocation.command->name + " needs --run DIR (a training run folder)");
  }
  return invocation.flag("--run");
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

// The run's search with --beam K (default 1: greedy) as the beam size, a beam search whenever
// --beam is given (unless the run samples), and --n-best N (caption; default 1) captions kept.
SearchOptions search_with_beam_flag(const TrainedRun& run, const Invocation& invocation) {
  SearchOptions search = run.search;
  search.beam_size = invocation.positive_flag("--beam", "1");
  if (invocation.has_flag("--beam") && search.method == SearchMethod::greedy)
    search.method = SearchMethod::beam;
  search.n_best = invocation.positive_flag("--n-best", "1");
  validate(search);
  return search;
}

// The run's viz.* (with the overrides given).
VizOptions viz_options_of(const TrainedRun& run) {
  VizOptions options = viz_options_from(run.config);
  validate(options);
  return options;
}

}  // namespace

int run_caption(const Job& job) {
  const Invocation& invocation = *job.invocation;
  const std::filesystem::path run_dir = required_run(invocation);
  if (invocation.positional.empty()) {
    throw std::invalid_argument("saccade caption needs images or folders to caption");
  }
  const bool json = invocation.has_flag("--json");
  TrainedRun run =
      load_trained_run(run_dir, job.request(), job.placement, invocation.flag("--checkpoint", "best"));
  const SearchOptions search = search_with_beam_flag(run, invocation);
  const VizOptions viz = viz_options_of(run);
  torch::manual_seed(static_cast<uint64_t>(run.config.get<int64_t>("seed")));  // decode.method=sample repeats
  const std::filesystem::path out_dir = invocation.flag("--out", (run_dir / "captions").string());
  std::filesystem::create_directories(out_dir);

  Json::Array results;
  std::set<std::string> used_names;
  int failed = 0;
  for (const auto& file : expand_inputs(invocation.positional)) {
    try {
      const torch::Tensor crop = resize_and_crop(
          decode_image(file, run.dataset.image.max_pixels), run.dataset.image);  // uint8 [crop, crop, 3]
      const DecodedCaption caption =
          caption_images(*run.model, crop.unsqueeze(0), run.dataset.image, search, run.placement.precision)
              .front();
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
      if (!caption.n_best.empty()) {
        Json alternatives = Json::array();
        for (const DecodedCaption& alternative : caption.n_best) {
          alternatives.push_back(Json::object(
              {{"caption", join_words(run.vocabulary.decode(alternative.tokens))},
               {"log_prob", alternative.log_prob},
               {"finished", alternative.finished}}));
        }
        results.back().set("n_best", std::move(alternatives));
      }
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
  const int64_t count = invocation.positive_flag("--n", "16");
  TrainedRun run =
      load_trained_run(run_dir, job.request(), job.placement, invocation.flag("--checkpoint", "best"));
  const SearchOptions search = search_with_beam_flag(run, invocation);
  const VizOptions viz = viz_options_of(run);
  torch::manual_seed(static_cast<uint64_t>(run.config.get<int64_t>("seed")));  // decode.method=sample repeats

  const PreparedDataset data = ensure_prepared(run.dataset, {split});
  const auto images = make_caption_dataset(data.split(split), run.vocabulary, run.dataset.vocabulary);
  const auto written = write_sample_overlays(
      *run.model, run.vocabulary, *images, count, run.dataset.image, search, viz, run_dir / "samples",
      run.dataset.on_bad_image, run.placement.precision);
  for (const auto& overlay : written) {
    std::cout << overlay.file.string() << "\t" << overlay.caption << "\n";
  }
  log::info() << "Wrote " << written.size() << " overlays of the " << to_string(split) << " split into "
              << (run_dir / "samples").string();
  return 0;
}

}  // namespace saccade::cli
