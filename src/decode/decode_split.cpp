// decode_split and caption_images (see decode_split.h).
#include "decode/decode_split.h"

#include <c10/core/InferenceMode.h>
#include <torch/utils.h>

#include <algorithm>
#include <array>
#include <limits>

#include "data/rng.h"
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

// One image as this rank decoded it; the attention's alphas only with keep_attention.
struct DecodedImage {
  int64_t position = 0;  // in the split's decoding order
  std::string image_id;
  std::vector<std::string> words;
  std::vector<std::string> references;
  std::vector<ScoredCaption> n_best;
  CaptionAttention attention;
  std::vector<double> forced_log_probs;  // of options.forced_captions(image_id), in order
};

Json to_json(const DecodedImage& image) {
  Json::Array words(image.words.begin(), image.words.end());
  Json::Array references(image.references.begin(), image.references.end());
  Json::Array shape, alphas;
  if (image.attention.alphas.defined()) {
    const auto values = image.attention.alphas.to(torch::kCPU, torch::kFloat).contiguous();
    for (const int64_t size : values.sizes()) shape.emplace_back(size);
    for (int64_t i = 0; i < values.numel(); ++i)
      alphas.emplace_back(static_cast<double>(values.data_ptr<float>()[i]));
  }
  Json::Array n_best;
  for (const ScoredCaption& alternative : image.n_best)
    n_best.push_back(Json::array({alternative.caption, alternative.log_prob}));
  Json::Array forced(image.forced_log_probs.begin(), image.forced_log_probs.end());
  const CaptionAttention& attention = image.attention;
  return Json::array(
      {image.position, image.image_id, Json(std::move(words)), Json(std::move(references)),
       Json(std::move(shape)), Json(std::move(alphas)), attention.grid[0], attention.grid[1],
       attention.height, attention.width, Json(std::move(n_best)), Json(std::move(forced))});
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
  CaptionAttention& attention = image.attention;
  if (!shape.empty()) attention.alphas = torch::tensor(alphas, torch::kFloat).reshape(shape);
  attention.grid = {fields.at(6).as_int64(), fields.at(7).as_int64()};
  attention.height = fields.at(8).as_int64();
  attention.width = fields.at(9).as_int64();
  for (const Json& alternative : fields.at(10).as_array())
    image.n_best.push_back(
        {alternative.as_array().at(0).as_string(), alternative.as_array().at(1).as_double()});
  for (const Json& log_prob : fields.at(11).as_array())
    image.forced_log_probs.push_back(log_prob.as_double());
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
    const Vocabulary& vocabulary,
    HardRead read) {
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
  const DecoderOutput output = decoder.forward(
      annotations.index_select(0, rows), tokens.slice(1, 0, -1), lengths.to(device), {}, read);
  const auto log_probs = torch::log_softmax(output.logits.to(torch::kDouble), -1)
                             .gather(2, tokens.slice(1, 1).unsqueeze(2))
                             .squeeze(2);  // [N, T]
  const auto steps = torch::arange(longest - 1, device).unsqueeze(0) < lengths.to(device).unsqueeze(1);
  const auto totals = (log_probs * steps).sum(1).to(torch::kCPU).contiguous();
  return {totals.data_ptr<double>(), totals.data_ptr<double>() + count};
}

namespace {

// One batch of a split decoded: its images from `position` on, as many as `room` allows.
std::vector<DecodedImage> decode_batch(
    CaptionerImpl& model,
    const Batch& batch,
    const CaptionDataset& dataset,
    const CaptionSearch& search,
    const Vocabulary& vocabulary,
    const DecodeSplitOptions& options,
    int64_t position,
    int64_t room) {
  const int64_t height = batch.images.size(2), width = batch.images.size(3);
  const auto grid = model.encoder->grid_size(height, width);
  const auto annotations = annotations_of(model, batch, dataset, options.features);
  const auto captions = search.search(*model.decoder, annotations);
  // The forced captions of every image of the batch, scored in one pass.
  std::vector<int64_t> forced_rows, forced_counts;
  std::vector<std::vector<std::string>> forced_captions;
  for (int64_t b = 0; b < batch.size() && options.forced_captions; ++b) {
    auto image_captions = options.forced_captions(batch.image_ids[b]);
    forced_counts.push_back(static_cast<int64_t>(image_captions.size()));
    forced_rows.insert(forced_rows.end(), image_captions.size(), b);
    for (auto& caption : image_captions) forced_captions.push_back(std::move(caption));
  }
  const std::vector<double> forced_log_probs = caption_log_probs(
      *model.decoder, annotations, forced_rows, forced_captions, vocabulary, search.options().hard_read);
  std::vector<DecodedImage> images;
  auto forced = forced_log_probs.begin();
  for (int64_t b = 0; b < std::min(batch.size(), room); ++b) {
    DecodedImage image;
    image.position = position + b;
    image.image_id = batch.image_ids[b];
    image.words = vocabulary.decode(captions[b].tokens);
    image.references = batch.scored_references[b];
    for (const DecodedCaption& alternative : captions[b].n_best)
      image.n_best.push_back({join_words(vocabulary.decode(alternative.tokens)), alternative.log_prob});
    if (options.keep_attention) image.attention.alphas = captions[b].alphas;
    image.attention.grid = grid;
    image.attention.height = height;
    image.attention.width = width;
    if (!forced_counts.empty()) {
      image.forced_log_probs.assign(forced, forced + forced_counts[b]);
      forced += forced_counts[b];
    }
    images.push_back(std::move(image));
  }
  return images;
}

}  // namespace

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
  const int64_t limit = options.max_images > 0 ? options.max_images : std::numeric_limits<int64_t>::max();
  const auto& dataset = static_cast<const CaptionDataset&>(loader.dataset());
  std::vector<DecodedImage> images;
  int64_t position = 0;
  loader.start_epoch(0);
  for (int64_t number = 0; std::optional<Batch> batch = loader.next(); ++number) {
    if (position >= limit) break;
    // Another rank's batch is skipped: the ranks decode the same batches one process does.
    if (number % ranks == rank) {
      torch::manual_seed(mix_seed({options.seed, static_cast<uint64_t>(number)}));
      for (DecodedImage& image :
           decode_batch(model, *batch, dataset, search, vocabulary, options, position, limit - position))
        images.push_back(std::move(image));
    }
    position += batch->size();
  }
  if (ranks > 1) images = gather(images, *options.group);

  DecodedSplit decoded;
  for (DecodedImage& image : images) {
    const std::string& id = image.image_id;
    decoded.image_order.push_back(id);
    decoded.candidates[id] = join_words(image.words);
    decoded.words[id] = std::move(image.words);
    decoded.references[id] = std::move(image.references);
    if (!image.n_best.empty()) decoded.n_best[id] = std::move(image.n_best);
    if (options.keep_attention) decoded.attention[id] = std::move(image.attention);
    if (options.forced_captions) decoded.forced_log_probs[id] = std::move(image.forced_log_probs);
  }
  return decoded;
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
