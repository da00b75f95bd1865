// decode_split, score_split and caption_images (see decode_split.h).
#include "decode/decode_split.h"

#include <c10/core/InferenceMode.h>
#include <torch/utils.h>

#include "decode/shapes_evaluator.h"

namespace saccade {
namespace {

// Restores a module's training flag when it goes out of scope.
class EvalModeGuard {
 public:
  explicit EvalModeGuard(torch::nn::Module& module) : module_(module), was_training_(module.is_training()) {
    module_.eval();
  }
  ~EvalModeGuard() { module_.train(was_training_); }

 private:
  torch::nn::Module& module_;
  bool was_training_;
};

}  // namespace

torch::Tensor annotations_of(
    CaptionerImpl& model, const Batch& batch, const CaptionDataset& dataset, const FeatureCache* features) {
  if (features == nullptr) return model.encode(batch.images);  // [B, L, D]
  std::vector<int64_t> rows;
  for (const int64_t index : batch.indices) rows.push_back(dataset.image_of(index));
  return features->batch(rows);  // [B, L, D]
}

DecodedSplit decode_split(
    CaptionerImpl& model,
    Loader& loader,
    const CaptionSearch& search,
    const Vocabulary& vocabulary,
    const DecodeSplitOptions& options) {
  torch::NoGradGuard no_grad;
  EvalModeGuard eval_mode(model);
  std::optional<ShapesEvaluator> shapes;
  if (options.shapes_world != nullptr) shapes.emplace(*options.shapes_world);
  const auto full = [&](const DecodedSplit& decoded) {
    return options.max_images > 0 && static_cast<int64_t>(decoded.image_order.size()) >= options.max_images;
  };
  const auto& dataset = static_cast<const CaptionDataset&>(loader.dataset());
  DecodedSplit decoded;
  loader.start_epoch(0);
  while (std::optional<Batch> batch = loader.next()) {
    const int64_t height = batch->images.size(2), width = batch->images.size(3);
    const auto grid = model.encoder->grid_size(height, width);
    const auto captions =
        search.search(*model.decoder, annotations_of(model, *batch, dataset, options.features));
    for (int64_t b = 0; b < batch->size() && !full(decoded); ++b) {
      const std::string& id = batch->image_ids[b];
      const std::vector<std::string> words = vocabulary.decode(captions[b].tokens);
      decoded.image_order.push_back(id);
      decoded.candidates[id] = join_words(words);
      for (const auto& reference : batch->references[b])
        decoded.references[id].push_back(join_words(reference));
      if (shapes) shapes->add(id, words, captions[b].alphas, grid, height, width);
    }
    if (full(decoded)) break;
  }
  if (shapes) decoded.shapes = shapes->scores();
  return decoded;
}

SplitResults score_split(
    const DecodedSplit& decoded,
    const std::string& split,
    const std::string& search,
    int64_t checkpoint_epoch,
    const ScoreOptions& options) {
  return {
      split,
      search,
      checkpoint_epoch,
      decoded.image_order,
      decoded.candidates,
      score_captions(decoded.references, decoded.candidates, options),
      decoded.shapes};
}

std::vector<DecodedCaption> caption_images(
    CaptionerImpl& model,
    const torch::Tensor& crops,
    const ImageOptions& image,
    const SearchOptions& search) {
  const auto strategy = make_caption_search(search);
  c10::InferenceMode inference;
  EvalModeGuard eval_mode(model);
  const auto annotations = model.encode(normalize_images(crops, image));  // [B, L, D]
  return strategy->search(*model.decoder, annotations);
}

}  // namespace saccade
