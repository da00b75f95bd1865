// `saccade eval --run DIR [--split NAME] [decode.beam_size=K ...]`: decodes a split with a run's
// best checkpoint, scores it and writes the results into the run folder:
//   <run>/results/<split>.json          COCO results format [{"image_id": .., "caption": ..}]
//   <run>/results/<split>_scores.json   corpus scores, per-image scores and captions, the search
//                                       used, and for the shapes world the shapes metrics
// The model (encoder, decoder, dataset, image pipeline) comes from the run's own saved
// config.yaml, never from the current defaults; the search (decode.*) and METEOR
// (eval.meteor_jar) come from the composed config, so overrides on the command line apply.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "cli/command.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "decode/beam_search.h"
#include "eval/caption_scores.h"
#include "eval/split_results.h"
#include "io/log.h"
#include "models/captioner.h"
#include "train/checkpoint.h"
#include "train/shapes_evaluator.h"
#include "viz/run_report.h"

namespace saccade::cli {

int run_eval(const Job& job) {
  const Invocation& invocation = *job.invocation;
  const std::filesystem::path run = invocation.flag("--run");
  if (run.empty()) throw ConfigError("saccade eval needs --run DIR (a training run folder)");
  const std::string split_name = invocation.flag("--split", "test");
  const Split split = parse_split(split_name);
  const auto checkpoint = run / "checkpoints" / "best";
  check_checkpoint(checkpoint);

  // The model's world comes from the run; the search and scoring from the command line.
  const Config run_config(YAML::LoadFile(CheckpointFiles{checkpoint}.config().string()));
  const Config& config = job.composition.config;
  BeamOptions search_options = beam_options_from(config);
  search_options.start_id = Vocabulary::kStart;
  search_options.end_id = Vocabulary::kEnd;
  search_options.unk_id = Vocabulary::kUnk;
  const auto search = make_caption_search(search_options);
  const ScoreOptions score_options = score_options_from(config);

  DatasetOptions dataset = dataset_options_from(run_config);
  validate(dataset);
  EncoderOptions encoder = encoder_options_from(run_config);
  encoder.weights.reset();  // every weight comes from the checkpoint
  validate(encoder);
  const DecoderOptions decoder = decoder_options_from(run_config);
  const int64_t batch_size = run_config.get<int64_t>("train.batch_size");
  LoaderOptions loader_options = loader_options_from(run_config, split, batch_size);
  validate(loader_options);

  const PreparedDataset data = ensure_prepared(dataset, {split});
  const Vocabulary vocabulary = load_checkpoint_vocabulary(checkpoint);
  Captioner model = build_captioner(encoder, decoder, vocabulary.size());
  const TrainState state = load_checkpoint(checkpoint, *model, nullptr);
  model->eval();
  const auto samples = make_caption_dataset(data.split(split), vocabulary, dataset.vocabulary);
  Loader loader(samples, loader_options, dataset.image);
  log::info() << "Evaluating " << checkpoint.string() << " (epoch " << state.epoch << ") on " << split_name
              << " (" << samples->size() << " images) with " << search->describe() << " search";

  std::optional<ShapesEvaluator> shapes;
  if (dataset.kind == "shapes") shapes.emplace(dataset);
  std::map<std::string, std::vector<std::string>> references;
  std::map<std::string, std::string> candidates;
  std::vector<std::string> order;
  {
    torch::NoGradGuard no_grad;
    loader.start_epoch(0);
    while (std::optional<Batch> batch = loader.next()) {
      const auto captions = search->search(*model->decoder, model->encode(batch->images));
      for (int64_t b = 0; b < batch->size(); ++b) {
        const std::string& id = batch->image_ids[b];
        const std::vector<std::string> words = vocabulary.decode(captions[b].tokens);
        candidates[id] = join_words(words);
        for (const auto& reference : batch->references[b]) references[id].push_back(join_words(reference));
        order.push_back(id);
        if (shapes) {
          shapes->add(id, words, captions[b].alphas, batch->images.size(2), batch->images.size(3));
        }
      }
    }
  }
  const CaptionScores scores = score_captions(references, candidates, score_options);

  SplitResults split_results{split_name, search->describe(), state.epoch, order, candidates, scores, {}};
  if (shapes) split_results.shapes = shapes->scores();
  const auto results_dir = run / "results";
  write_split_results(results_dir, split_results);
  // A checkpoint folder copied on its own (no config.yaml beside it) is evaluated, not reported.
  if (std::filesystem::exists(run / "config.yaml")) write_run_report(run);

  std::cout << std::fixed << std::setprecision(4);
  std::cout << "Split " << split_name << ", " << order.size() << " images, " << search->describe()
            << " search, checkpoint epoch " << state.epoch << "\n";
  std::cout << "  BLEU-1   " << scores.bleu[0] << "\n  BLEU-2   " << scores.bleu[1] << "\n  BLEU-3   "
            << scores.bleu[2] << "\n  BLEU-4   " << scores.bleu[3] << "\n";
  if (scores.meteor) {
    std::cout << "  METEOR   " << *scores.meteor << "\n";
  } else {
    std::cout << "  METEOR   unavailable (" << scores.meteor_unavailable << ")\n";
  }
  std::cout << "  ROUGE-L  " << scores.rouge_l << "\n  CIDEr-D  " << scores.cider_d << "\n";
  if (split_results.shapes) std::cout << describe(*split_results.shapes);
  std::cout << "Results: " << (results_dir / (split_name + ".json")).string() << "\n";
  return 0;
}

}  // namespace saccade::cli
