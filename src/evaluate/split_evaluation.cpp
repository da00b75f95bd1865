// measure_split, score_split, evaluate_split and the printout (see split_evaluation.h).
#include "evaluate/split_evaluation.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <unordered_set>

#include "eval/diversity.h"
#include "evaluate/shapes_evaluator.h"
#include "io/log.h"
#include "models/weights.h"

namespace saccade {

MeasuredSplit measure_split(
    CaptionerImpl& model,
    Loader& loader,
    const CaptionSearch& search,
    const Vocabulary& vocabulary,
    DecodeSplitOptions decode,
    const DatasetOptions* shapes_world) {
  std::optional<ShapesEvaluator> shapes;
  if (shapes_world != nullptr) {
    shapes.emplace(*shapes_world);
    decode.keep_attention = true;
    // The forced relation choice: each probe's stated caption, then its swapped one.
    decode.forced_captions = [&shapes](const std::string& image_id) {
      std::vector<std::vector<std::string>> captions;
      for (RelationProbe& probe : shapes->relation_probes(image_id)) {
        captions.push_back(std::move(probe.stated));
        captions.push_back(std::move(probe.swapped));
      }
      return captions;
    };
  }
  MeasuredSplit measured{decode_split(model, loader, search, vocabulary, decode), std::nullopt};
  if (!shapes) return measured;
  const DecodedSplit& decoded = measured.decoded;
  for (const std::string& id : decoded.image_order) {
    const CaptionAttention& attention = decoded.attention.at(id);
    shapes->add(
        id, decoded.words.at(id), attention.alphas, attention.grid, attention.height, attention.width);
    const std::vector<double>& log_probs = decoded.forced_log_probs.at(id);
    for (size_t probe = 0; probe + 1 < log_probs.size(); probe += 2)
      shapes->add_relation_choice(log_probs[probe], log_probs[probe + 1]);
  }
  measured.shapes = shapes->scores();
  return measured;
}

SplitResults score_split(
    const MeasuredSplit& measured,
    const std::string& split,
    const std::string& search,
    int64_t checkpoint_epoch,
    const ScoreOptions& options,
    const std::unordered_set<std::string>* training_captions) {
  const DecodedSplit& decoded = measured.decoded;
  return {
      split,
      search,
      checkpoint_epoch,
      decoded.image_order,
      decoded.candidates,
      score_captions(decoded.references, decoded.candidates, options, decoded.image_order),
      measured.shapes,
      decoded.n_best,
      caption_diversity(decoded.candidates, decoded.n_best, training_captions)};
}

EvaluatedSplit evaluate_split(
    TrainedRun& run,
    const PreparedSplit& images,
    const CaptionSearch& search,
    const FeatureCache* features,
    ProcessGroup* group,
    const std::string& results_name) {
  const Split split = images.split;
  const auto dataset = make_caption_dataset(images, run.vocabulary, run.dataset.vocabulary);
  LoaderOptions loader_options =
      loader_options_from(run.config, split, run.config.get<int64_t>("train.batch_size"));
  validate(loader_options);
  Loader loader(dataset, loader_options, run.dataset.image);
  log::info() << "Evaluating " << run.checkpoint.string() << " (epoch " << run.epoch << ") on "
              << to_string(split) << " (" << dataset->size() << " images) with " << search.describe()
              << " search";

  DecodeSplitOptions options;
  options.features = features;
  options.group = group;
  options.precision = run.placement.precision;
  options.seed = static_cast<uint64_t>(run.config.get<int64_t>("seed"));
  const MeasuredSplit measured = measure_split(
      *run.model, loader, search, run.vocabulary, options,
      run.dataset.kind == "shapes" ? &run.dataset : nullptr);
  EvaluatedSplit evaluated;
  evaluated.decoded = measured.decoded;
  evaluated.skipped = images.skipped;
  add_distinct(evaluated.skipped, loader.skipped());
  if (group != nullptr && !group->is_main()) return evaluated;  // the main rank scores and writes
  std::unordered_set<std::string> training_captions;
  const auto& train_labels = split_labels(run.dataset, Split::train);
  for (const auto& image : read_corpus(run.dataset).images) {
    if (std::find(train_labels.begin(), train_labels.end(), image.split) == train_labels.end()) continue;
    for (const auto& caption : image.captions) training_captions.insert(join_words(caption.words));
  }
  evaluated.results = score_split(
      measured, to_string(split), search.describe(), run.epoch, score_options_from(run.config),
      &training_captions);
  evaluated.results.parameters = parameter_count(*run.model);
  SplitResults named = evaluated.results;
  if (!results_name.empty()) named.split = results_name;
  write_split_results(run.dir / "results", named);
  const CaptionScores& scores = evaluated.results.scores;
  log::info() << to_string(split) << " (checkpoint epoch " << run.epoch << "): BLEU-4 " << scores.bleu[3]
              << ", CIDEr-D " << scores.cider_d << " (" << evaluated.decoded.image_order.size() << " images)";
  return evaluated;
}

std::string describe(const SplitResults& results) {
  const CaptionScores& scores = results.scores;
  std::ostringstream out;
  out << std::fixed << std::setprecision(4);
  out << "Split " << results.split << ", " << results.image_order.size() << " images, " << results.search
      << " search, checkpoint epoch " << results.checkpoint_epoch << "\n";
  out << "  BLEU-1   " << scores.bleu[0] << "\n  BLEU-2   " << scores.bleu[1] << "\n  BLEU-3   "
      << scores.bleu[2] << "\n  BLEU-4   " << scores.bleu[3] << "\n";
  if (scores.meteor) {
    out << "  METEOR   " << *scores.meteor << "\n";
  } else {
    out << "  METEOR   unavailable (" << scores.meteor_unavailable << ")\n";
  }
  out << "  ROUGE-L  " << scores.rouge_l << "\n  CIDEr-D  " << scores.cider_d << "\n";
  if (results.shapes) out << describe(*results.shapes);
  if (results.diversity) out << describe(*results.diversity);
  return out.str();
}

}  // namespace saccade
