// `saccade caption` and `saccade visualize`: apply a trained run's best checkpoint to images and
// draw where each word looked.
//
// Both load the run once (decode/trained_run.h): its config over today's defaults, so they work
// whatever the repository's configs say now, with the command line's overrides on top. The
// search is the run's decode.* with --beam K as the beam size (default 1, greedy).
// caption: every file given (folders expanded to their image files, sorted) is captioned;
// `file<TAB>caption` per image on stdout (or one JSON array with --json), one overlay grid PNG
// per image in --out. A file that cannot be read, or a folder entry that cannot be looked at,
// is reported on stderr and the others still run; the exit code is then 1. Nothing to caption
// at all, an overlay that would replace an input, or one that would replace an earlier overlay
// (unless --replace), is refused before anything is written.
// visualize: the first n images of a split of the run's dataset, with their references, into
// <run>/visualize/<split>/ or --out; overlays already there (training's own in <run>/samples/,
// say) are refused before anything is decoded, unless --replace.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>
#include <system_error>

#include "base/text.h"
#include "cli/command.h"
#include "decode/caption_record.h"
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

// One thing caption was given: an image file to caption into `overlay`, or, with `problem` set,
// a folder entry (or folder) that cannot be one, named and skipped as an unreadable image is.
struct CaptionInput {
  std::filesystem::path file;
  std::string problem;            // empty: caption `file`
  std::filesystem::path overlay;  // where its overlay goes; empty with a problem
};

// A folder's image files (by extension), its entries whose kind cannot be read (a symbolic
// link loop, a dangling link) and a listing that fails, so that one bad entry skips only itself.
// A folder with nothing of these is a problem of its own: it was given to be captioned.
std::vector<CaptionInput> folder_inputs(const std::filesystem::path& folder) {
  std::vector<CaptionInput> inputs;
  std::error_code listing;
  std::filesystem::directory_iterator entry(folder, listing);
  for (; !listing && entry != std::filesystem::directory_iterator(); entry.increment(listing)) {
    std::error_code kind;
    const bool regular = entry->is_regular_file(kind);
    if (kind) {
      inputs.push_back({entry->path(), "cannot tell what it is: " + kind.message(), {}});
    } else if (regular && has_image_extension(entry->path())) {
      inputs.push_back({entry->path(), "", {}});
    }
  }
  if (listing) inputs.push_back({folder, "cannot list the folder: " + listing.message(), {}});
  if (inputs.empty()) inputs.push_back({folder, "the folder holds no image files (by extension)", {}});
  std::sort(inputs.begin(), inputs.end(), [](const CaptionInput& a, const CaptionInput& b) {
    return a.file < b.file;
  });
  return inputs;
}

// The inputs in order: a folder becomes its entries (sorted); anything else is kept as given,
// whatever it is (decoding reports it if it is no image).
std::vector<CaptionInput> expand_inputs(const std::vector<std::string>& arguments) {
  std::vector<CaptionInput> inputs;
  for (const auto& argument : arguments) {
    std::error_code unreadable;  // a loop or a missing path: decoding names it
    if (!std::filesystem::is_directory(argument, unreadable)) {
      inputs.push_back({argument, "", {}});
      continue;
    }
    const auto found = folder_inputs(argument);
    inputs.insert(inputs.end(), found.begin(), found.end());
  }
  return inputs;
}

// With nothing that could be captioned, the problems are the error, in one line.
void require_an_image(const std::vector<CaptionInput>& inputs) {
  std::vector<std::string> problems;
  for (const auto& input : inputs) {
    if (input.problem.empty()) return;
    problems.push_back(input.file.string() + ": " + input.problem);
  }
  throw ConfigError("Nothing to caption: " + join(problems, "; "));
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

// The folder entry `path` names, its folder's links resolved but not its own name: an overlay
// is written by renaming a temporary onto its entry, so that entry is all a write replaces.
// A folder that cannot be resolved (a link loop) is taken as written; nothing is read or
// written through it.
std::filesystem::path resolved_entry(const std::filesystem::path& path) {
  const std::filesystem::path absolute = std::filesystem::absolute(path);
  std::error_code unresolvable;
  const std::filesystem::path folder =
      std::filesystem::weakly_canonical(absolute.parent_path(), unresolvable);
  return (unresolvable ? absolute.parent_path().lexically_normal() : folder) / absolute.filename();
}

// Refuses, before anything is written, an overlay that would replace an input: the input's own
// entry, or the file its symbolic links lead to (say --out is the folder being captioned).
void refuse_overlays_over_inputs(
    const std::vector<CaptionInput>& inputs, const std::filesystem::path& out_dir) {
  std::map<std::filesystem::path, std::filesystem::path> protected_paths;  // -> the input as given
  for (const auto& input : inputs) {
    if (!input.problem.empty()) continue;
    protected_paths.emplace(resolved_entry(input.file), input.file);
    std::error_code missing;
    const std::filesystem::path target = std::filesystem::canonical(input.file, missing);
    if (!missing) protected_paths.emplace(target, input.file);
  }
  for (const auto& input : inputs) {
    if (input.overlay.empty()) continue;
    const auto clash = protected_paths.find(resolved_entry(input.overlay));
    if (clash == protected_paths.end()) continue;
    throw ConfigError(
        "--out " + out_dir.string() + " would write the overlay " + input.overlay.string() +
        " over the input " + clash->second.string() + "; choose another folder");
  }
}

// Refuses, before anything is written, to write over `earlier`, what an earlier caption or
// visualize left, unless --replace: `refusal` is the line that says so.
void keep_earlier_output(
    const Invocation& invocation, const std::filesystem::path& earlier, const std::string& refusal) {
  std::error_code unreadable;  // a folder that cannot be looked into holds nothing to keep
  if (invocation.has_flag("--replace") || !std::filesystem::exists(earlier, unreadable)) return;
  throw ConfigError(refusal);
}

// The inputs with their overlays in `out_dir` (named once, before any is written), checked.
std::vector<CaptionInput> inputs_with_overlays(
    const Invocation& invocation, const std::filesystem::path& out_dir) {
  std::vector<CaptionInput> inputs = expand_inputs(invocation.positional);
  require_an_image(inputs);
  std::set<std::string> used_names;
  for (auto& input : inputs) {
    if (input.problem.empty()) input.overlay = overlay_path(out_dir, input.file, used_names);
  }
  refuse_overlays_over_inputs(inputs, out_dir);
  for (const auto& input : inputs) {
    if (input.overlay.empty()) continue;
    keep_earlier_output(
        invocation, input.overlay,
        "--out " + out_dir.string() + " already holds the overlay " + input.overlay.string() +
            "; --replace writes over it, --out DIR writes elsewhere");
  }
  return inputs;
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

// Captions one image with `search`, writes its overlay, and returns its JSON record.
Json caption_image(
    TrainedRun& run, const SearchOptions& search, const VizOptions& viz, const CaptionInput& input) {
  const torch::Tensor crop = load_image(input.file, run.dataset.image);  // uint8 [crop, crop, 3]
  const DecodedCaption caption =
      caption_images(*run.model, crop.unsqueeze(0), run.dataset.image, search, run.placement.precision)
          .front();
  const Json described =
      caption_record(caption, run.vocabulary, run.model->encoder->grid_size(crop.size(0), crop.size(1)));
  const auto figure =
      make_attention_figure(*run.model, crop, caption, run.vocabulary, {described.at("caption").as_string()});
  write_image_file(input.overlay, render_attention_figure(figure, viz));
  Json record = Json::object({{"file", input.file.string()}});
  for (const auto& [key, value] : described.as_object()) record.set(key, value);
  record.set("overlay", input.overlay.string());
  return record;
}

// --out, or the run's captions/ folder; a multirun job's overlays go into their own <job>/ in it.
std::filesystem::path caption_out_dir(const Job& job, const std::filesystem::path& run_dir) {
  const Invocation& invocation = *job.invocation;
  const std::filesystem::path out_dir = invocation.flag("--out", (run_dir / "captions").string());
  return invocation.multirun ? out_dir / std::to_string(job.number) : out_dir;
}

}  // namespace

int run_caption(const Job& job) {
  const Invocation& invocation = *job.invocation;
  const std::filesystem::path run_dir = required_run(invocation);
  if (invocation.positional.empty()) {
    throw std::invalid_argument("saccade caption needs images or folders to caption");
  }
  const bool json = invocation.has_flag("--json");
  const std::filesystem::path out_dir = caption_out_dir(job, run_dir);
  const std::vector<CaptionInput> inputs = inputs_with_overlays(invocation, out_dir);
  TrainedRun run =
      load_trained_run(run_dir, job.request(), job.placement, invocation.flag("--checkpoint", "best"));
  const SearchOptions search = search_with_beam_flag(run, invocation);
  const VizOptions viz = viz_options_of(run);
  torch::manual_seed(static_cast<uint64_t>(run.config.get<int64_t>("seed")));  // decode.method=sample repeats
  std::filesystem::create_directories(out_dir);

  Json::Array results;
  int failed = 0;
  for (const auto& input : inputs) {
    std::string problem = input.problem;
    if (problem.empty()) {
      try {
        Json record = caption_image(run, search, viz, input);
        if (json) {
          results.push_back(std::move(record));
        } else {
          std::cout << input.file.string() << "\t" << record.at("caption").as_string() << std::endl;
        }
        continue;
      } catch (const std::exception& error) {
        problem = first_line(error.what());
      }
    }
    // Skipped and named; the others still run.
    ++failed;
    std::cerr << "saccade: " << input.file.string() << ": " << problem << std::endl;
    if (json) results.push_back(Json::object({{"file", input.file.string()}, {"error", problem}}));
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
  const std::filesystem::path out_dir =
      invocation.flag("--out", (run_dir / "visualize" / to_string(split)).string());
  keep_earlier_output(
      invocation, out_dir / kSamplesIndex,
      (out_dir / kSamplesIndex).string() +
          " already indexes overlays; --replace writes over them, --out DIR writes elsewhere");
  TrainedRun run =
      load_trained_run(run_dir, job.request(), job.placement, invocation.flag("--checkpoint", "best"));
  const SearchOptions search = search_with_beam_flag(run, invocation);
  const VizOptions viz = viz_options_of(run);
  torch::manual_seed(static_cast<uint64_t>(run.config.get<int64_t>("seed")));  // decode.method=sample repeats

  const PreparedDataset data = ensure_prepared(run.dataset, {split});
  const auto images = make_caption_dataset(data.split(split), run.vocabulary, run.dataset.vocabulary);
  const auto written = write_sample_overlays(
      *run.model, run.vocabulary, *images, count, run.dataset.image, search, viz, out_dir,
      run.dataset.on_bad_image, run.placement.precision);
  for (const auto& overlay : written) {
    std::cout << overlay.file.string() << "\t" << overlay.caption << "\n";
  }
  log::info() << "Wrote " << written.size() << " overlays of the " << to_string(split) << " split into "
              << out_dir.string();
  return 0;
}

}  // namespace saccade::cli
