// decode_split, score_split and caption_images (see decode_split.h).
#include "decode/decode_split.h"

#include <c10/core/InferenceMode.h>
#include <torch/utils.h>

#include <algorithm>
#include <array>

#include "data/rng.h"
#include "decode/shapes_evaluator.h"
#include "eval/diversity.h"
#include "io/json.h"
#include "kernels/inference_precision.h"

namespace saccade {
torch::Tensor annotations_of(
    CaptionerImpl& model, const Batch& batch, const CaptionDataset& dataset, const FeatureCache* features) {
  TORCH_CHECK(
      batch.image_rows.defined() && batch.image_rows.size(0) == batch.size(),
      "annotations_of: the batch has no image row for each sample");
  torch::Tensor annotations;  // [U, L, D]
  if (features == nullptr) {
    annotations = model.encode(batch.images);
  } else {
    std::vector<int64_t> images(static_cast<size_t>(batch.images.size(0)));  // each row's image in `dataset`
    const auto image_rows = batch.image_rows.accessor<int64_t, 1>();
    for (int64_t b = 0; b < batch.size(); ++b)
      images[static_cast<size_t>(image_rows[b])] = dataset.image_of(batch.indices[static_cast<size_t>(b)]);
    annotations = model.refine(
        features->batch(images).to(model.device(), /*non_blocking=*/true), features->grid_size());
  }
  if (annotations.size(0) == batch.size()) return annotations;                    // image_rows is 0 .. B-1
  return annotations.index_select(0, batch.image_rows.to(annotations.device()));  // [B, L, D]
}

namespace {

// One image as this rank decoded it; `alphas` float [n, (N,) L] on its [H', W'] grid, kept only
// for the shapes metrics.
struct DecodedImage {
  int64_t position = 0;  // in the split's decoding order
  std::string image_id;
  std::vector<std::string> words;
  std::vector<std::string> references;
  std::vector<ScoredCaption> n_best;
  torch::Tensor alphas;
  std::array<int64_t, 2> grid{0, 0};
  int64_t height = 0, width = 0;  // of the model's input image
  // The forced choice: per relation probe, log p(stated caption) and log p(swapped caption).
  std::vector<std::array<double, 2>> relation_choices;
};

Json to_json(const DecodedImage& image) {
  Json::Array words(image.words.begin(), image.words.end());
  Json::Array references(image.references.begin(), image.references.end());
  Json::Array shape, alphas;
  if (image.alphas.defined()) {
    const auto values = image.alphas.to(torch::kCPU, torch::kFloat).contiguous();
    for (const int64_t size : values.sizes()) shape.emplace_back(size);
    for (int64_t i = 0; i < values.numel(); ++i)
      alphas.emplace_back(static_cast<double>(values.data_ptr<float>()[i]));
  }
  Json::Array n_best;
  for (const ScoredCaption& alternative : image.n_best)
    n_best.push_back(Json::array({alternative.caption, alternative.log_prob}));
  Json::Array choices;
  for (const auto& [stated, swapped] : image.relation_choices)
    choices.push_back(Json::array({stated, swapped}));
  return Json::array(
      {image.position, image.image_id, Json(std::move(words)), Json(std::move(references)),
       Json(std::move(shape)), Json(std::move(alphas)), image.grid[0], image.grid[1], image.height,
       image.width, Json(std::move(n_best)), Json(std::move(choices))});
}

DecodedImage from_json(const Json& json) {
  const Json::Array& fields = json.as_array();
  DecodedImage image;
  image.position = fields.at(0).as_int64();
  image.image_id = fields.at(1).as_string();
  for (const Json& word : fields.at(2).as_array()) image.words.push_back(word.as_string());
  for (const Json& reference : fields.at(3).as_array()) image.references.push_back(reference.as_string());
  std::vector<int64_t> shape;
  for (const Json& size : fields.at(4).as_array()) shape.push_back(size.as_int64());
  std::vector<float> alphas;
  for (const Json& value : fields.at(5).as_array()) alphas.push_back(static_cast<float>(value.as_double()));
  if (!shape.empty()) image.alphas = torch::tensor(alphas, torch::kFloat).reshape(shape);
  image.grid = {fields.at(6).as_int64(), fields.at(7).as_int64()};
  image.height = fields.at(8).as_int64();
  image.width = fields.at(9).as_int64();
  for (const Json& alternative : fields.at(10).as_array())
    image.n_best.push_back(
        {alternative.as_array().at(0).as_string(), alternative.as_array().at(1).as_double()});
  for (const Json& choice : fields.at(11).as_array())
    image.relation_choices.push_back(
        {choice.as_array().at(0).as_double(), choice.as_array().at(1).as_double()});
  return image;
}

// Every rank's images, in decoding order.
std::vector<DecodedImage> gather(const std::vector<DecodedImage>& mine, ProcessGroup& group) {
  Json::Array local;
  for (const DecodedImage& image : mine) local.push_back(to_json(image));
  std::vector<DecodedImage> all;
  for (const std::string& text : group.all_gather(dump_json(Json(std::move(local))))) {
    const Json images = parse_json(text, "decoded images");
    for (const Json& image : images.as_array()) all.push_back(from_json(image));
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.position < b.position; });
  return all;
}

}  // namespace

std::vector<double> caption_log_probs(
    CaptionDecoderImpl& decoder,
    const torch::Tensor& annotations,
    const std::vector<int64_t>& image_rows,
    const std::vector<std::vector<std::string>>& captions,
    const Vocabulary& vocabulary) {
  if (captions.empty()) return {};
  const int64_t count = static_cast<int64_t>(captions.size());
  int64_t longest = 0;
  for (const auto& words : captions)
    longest = std::max<int64_t>(longest, static_cast<int64_t>(words.size()) + 2);
  auto tokens = torch::full({count, longest}, Vocabulary::kPad, torch::kLong);  // <start> w1 .. wn <end>
  auto lengths = torch::empty({count}, torch::kLong);                           // steps: words + <end>
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<int64_t> ids = vocabulary.encode(captions[static_cast<size_t>(i)]);
    tokens[i].narrow(0, 0, static_cast<int64_t>(ids.size())).copy_(torch::tensor(ids, torch::kLong));
    lengths[i] = static_cast<int64_t>(ids.size()) - 1;
  }
  const auto device = annotations.device();
  tokens = tokens.to(device);
  const auto rows = torch::tensor(image_rows, torch::kLong).to(device);
  const DecoderOutput output =
      decoder.forward(annotations.index_select(0, rows), tokens.slice(1, 0, -1), lengths.to(device));
  const auto log_probs = torch::log_softmax(output.logits.to(torch::kDouble), -1)
                             .gather(2, tokens.slice(1, 1).unsqueeze(2))
                             .squeeze(2);  // [N, T]
  const auto steps = torch::arange(longest - 1, device).unsqueeze(0) < lengths.to(device).unsqueeze(1);
  const auto totals = (log_probs * steps).sum(1).to(torch::kCPU).contiguous();
  return {totals.data_ptr<double>(), totals.data_ptr<double>() + count};
}

DecodedSplit decode_split(
    CaptionerImpl& model,
    Loader& loader,
    const CaptionSearch& search,
    const Vocabulary& vocabulary,
    const DecodeSplitOptions& options) {
  torch::NoGradGuard no_grad;
  EvalModeGuard eval_mode(model);
  const InferencePrecision inference_precision({model.device(), options.precision});
  const int rank = options.group ? options.group->rank() : 0,
            ranks = options.group ? options.group->size() : 1;
  const auto& dataset = static_cast<const CaptionDataset&>(loader.dataset());
  const auto full = [&](int64_t position) {
    return options.max_images > 0 && position >= options.max_images;
  };
  std::optional<ShapesEvaluator> shapes;
  if (options.shapes_world != nullptr) shapes.emplace(*options.shapes_world);
  std::vector<DecodedImage> images;
  int64_t position = 0;
  loader.start_epoch(0);
  for (int64_t number = 0; std::optional<Batch> batch = loader.next(); ++number) {
    if (full(position)) break;
    if (number % ranks != rank) {  // another rank's batch: the same batches as one process decodes
      position += batch->size();
      continue;
    }
    torch::manual_seed(mix_seed({options.seed, static_cast<uint64_t>(number)}));
    const int64_t height = batch->images.size(2), width = batch->images.size(3);
    const auto grid = model.encoder->grid_size(height, width);
    const auto annotations = annotations_of(model, *batch, dataset, options.features);
    const auto captions = search.search(*model.decoder, annotations);
    // The forced choice's captions of every image of the batch, scored in one pass.
    std::vector<int64_t> probe_rows;
    std::vector<std::vector<std::string>> probe_captions;
    if (shapes) {
      for (int64_t b = 0; b < batch->size(); ++b) {
        for (RelationProbe& probe : shapes->relation_probes(batch->image_ids[b])) {
          probe_rows.insert(probe_rows.end(), {b, b});
          probe_captions.push_back(std::move(probe.stated));
          probe_captions.push_back(std::move(probe.swapped));
        }
      }
    }
    const std::vector<double> probe_log_probs =
        caption_log_probs(*model.decoder, annotations, probe_rows, probe_captions, vocabulary);
    size_t probe = 0;
    for (int64_t b = 0; b < batch->size() && !full(position); ++b) {
      DecodedImage image;
      image.position = position++;
      image.image_id = batch->image_ids[b];
      image.words = vocabulary.decode(captions[b].tokens);
      image.references = batch->scored_references[b];
      for (const DecodedCaption& alternative : captions[b].n_best)
        image.n_best.push_back({join_words(vocabulary.decode(alternative.tokens)), alternative.log_prob});
      if (options.shapes_world != nullptr) image.alphas = captions[b].alphas;
      image.grid = grid;
      image.height = height;
      image.width = width;
      for (; probe < probe_rows.size() && probe_rows[probe] == b; probe += 2)
        image.relation_choices.push_back({probe_log_probs[probe], probe_log_probs[probe + 1]});
      images.push_back(std::move(image));
    }
  }
  if (ranks > 1) images = gather(images, *options.group);

  DecodedSplit decoded;
  for (const DecodedImage& image : images) {
    decoded.image_order.push_back(image.image_id);
    decoded.candidates[image.image_id] = join_words(image.words);
    decoded.references[image.image_id] = image.references;
    if (!image.n_best.empty()) decoded.n_best[image.image_id] = image.n_best;
    if (shapes) {
      shapes->add(image.image_id, image.words, image.alphas, image.grid, image.height, image.width);
      for (const auto& [stated, swapped] : image.relation_choices)
        shapes->add_relation_choice(stated, swapped);
    }
  }
  if (shapes) decoded.shapes = shapes->scores();
  return decoded;
}

SplitResults score_split(
    const DecodedSplit& decoded,
    const std::string& split,
    const std::string& search,
    int64_t checkpoint_epoch,
    const ScoreOptions& options,
    const std::unordered_set<std::string>* training_captions) {
  return {
      split,
      search,
      checkpoint_epoch,
      decoded.image_order,
      decoded.candidates,
      score_captions(decoded.references, decoded.candidates, options, decoded.image_order),
      decoded.shapes,
      decoded.n_best,
      caption_diversity(decoded.candidates, decoded.n_best, training_captions)};
}

std::vector<DecodedCaption> caption_images(
    CaptionerImpl& model,
    const torch::Tensor& crops,
    const ImageOptions& image,
    const SearchOptions& search,
    Precision precision) {
  const auto strategy = make_caption_search(search);
  c10::InferenceMode inference;
  EvalModeGuard eval_mode(model);
  const InferencePrecision inference_precision({model.device(), precision});
  const auto annotations = model.encode(normalize_images(crops, image));  // [B, L, D]
  return strategy->search(*model.decoder, annotations);
}

}  // namespace saccade
