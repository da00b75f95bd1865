#include "serve/explorer.h"

#include <torch/utils.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <utility>

#include "base/text.h"
#include "data/image_pipeline.h"
#include "decode/caption_record.h"
#include "decode/decode_split.h"
#include "io/log.h"
#include "models/transformer_decoder.h"
#include "serve/request_error.h"

namespace saccade {
namespace {

// The images of `dataset`'s test split, or none (with a warning) when the dataset cannot be read.
std::vector<ImageRecord> read_test_images(
    const DatasetOptions& dataset, const std::filesystem::path& run_dir) {
  try {
    const auto& labels = split_labels(dataset, Split::test);
    const std::set<std::string> test(labels.begin(), labels.end());
    std::vector<ImageRecord> images;
    for (ImageRecord& image : read_corpus(dataset).images) {
      if (test.count(image.split) > 0) images.push_back(std::move(image));
    }
    return images;
  } catch (const std::exception& error) {
    log::warn() << run_dir.string() << ": its test images cannot be offered: " << first_line(error.what());
    return {};
  }
}

std::optional<ShapesTruth> read_truth(const DatasetOptions& dataset) {
  if (dataset.kind != "shapes") return std::nullopt;
  try {
    return load_shapes_truth(dataset.root / "shapes_truth.json");
  } catch (const std::exception& error) {
    log::warn() << "The shapes world's boxes cannot be drawn: " << first_line(error.what());
    return std::nullopt;
  }
}

// Attention heads the decoder's alphas carry (1: [n, L] maps).
int64_t heads_of(const DecoderOptions& decoder) {
  if (decoder.kind == DecoderKind::transformer) return decoder.transformer.heads;
  return decoder.lstm.attention_kind == "multihead" ? decoder.lstm.attention_heads : 1;
}

Json decoder_json(const DecoderOptions& decoder) {
  Json description = Json::object(
      {{"kind", to_string(decoder.kind)},
       {"attention_mode", to_string(decoder.attention_mode)},
       {"heads", heads_of(decoder)}});
  if (decoder.kind == DecoderKind::transformer) {
    description.set("layers", decoder.transformer.layers);
    description.set("maps_layer", decoder.transformer.maps_layer);
  } else {
    description.set("attention_kind", decoder.lstm.attention_kind);
  }
  return description;
}

// "group=option" overrides as {group: option}.
Json choices_json(const std::vector<std::string>& choices) {
  Json object = Json::object();
  for (const std::string& choice : choices) {
    const auto equals = choice.find('=');
    if (equals != std::string::npos) object.set(choice.substr(0, equals), choice.substr(equals + 1));
  }
  return object;
}

// The test split's scores the run left (results/test_scores.json: search, corpus, shapes), or null.
Json scores_json(const std::filesystem::path& run_dir) {
  const auto file = run_dir / "results" / "test_scores.json";
  std::error_code missing;
  if (!std::filesystem::exists(file, missing)) return Json();
  try {
    const Json scores = read_json_file(file);
    Json kept = Json::object();
    for (const char* key : {"search", "checkpoint_epoch", "corpus", "shapes"}) {
      if (const Json* value = scores.find(key)) kept.set(key, *value);
    }
    return kept;
  } catch (const std::exception& error) {
    log::warn() << first_line(error.what()) << "; the run's scores are not shown";
    return Json();
  }
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

Explorer::Explorer(std::vector<ExploredRun> runs) {
  Json::Array described;
  for (ExploredRun& explored : runs) {
    Loaded loaded{std::move(explored.trained), {}, {}, {}};
    const TrainedRun& trained = loaded.trained;
    loaded.test_images = read_test_images(trained.dataset, trained.dir);
    for (size_t row = 0; row < loaded.test_images.size(); ++row)
      loaded.image_index.emplace(loaded.test_images[row].image_id, row);
    loaded.truth = read_truth(trained.dataset);
    const int64_t crop = trained.dataset.image.crop;
    const auto grid = trained.model->encoder->grid_size(crop, crop);
    described.push_back(Json::object(
        {{"index", static_cast<int64_t>(runs_.size())},
         {"name", (trained.dir.parent_path().filename() / trained.dir.filename()).string()},
         {"dir", trained.dir.string()},
         {"checkpoint", trained.checkpoint.filename().string()},
         {"epoch", trained.epoch},
         {"choices", choices_json(explored.choices)},
         {"decoder", decoder_json(trained.model->decoder->options())},
         {"grid", Json::array({Json(grid[0]), Json(grid[1])})},
         {"image_size", static_cast<int64_t>(crop)},
         {"vocabulary", static_cast<int64_t>(trained.vocabulary.size())},
         {"dataset", trained.dataset.kind},
         {"test_images", static_cast<int64_t>(loaded.test_images.size())},
         {"search", Json::object(
                        {{"method", to_string(trained.search.method)},
                         {"max_length", trained.search.max_length},
                         {"temperature", trained.search.temperature},
                         {"top_p", trained.search.top_p}})},
         {"scores", scores_json(trained.dir)}}));
    runs_.push_back(std::move(loaded));
  }
  runs_json_ = Json::object({{"runs", Json(std::move(described))}});
}

Json Explorer::images_json(size_t run) const {
  if (run >= runs_.size()) throw RequestError(404, "no run " + std::to_string(run) + " is loaded");
  Json::Array images;
  for (const ImageRecord& image : runs_[run].test_images) {
    Json::Array references;
    for (const std::string& reference : scored_references(image)) references.emplace_back(reference);
    images.push_back(Json::object(
        {{"id", image.image_id},
         {"file", image.path.filename().string()},
         {"references", Json(std::move(references))}}));
  }
  return Json::object(
      {{"run", static_cast<int64_t>(run)}, {"split", "test"}, {"images", Json(std::move(images))}});
}

std::vector<SearchOptions> Explorer::searches() const {
  std::vector<SearchOptions> searches;
  for (const Loaded& run : runs_) searches.push_back(run.trained.search);
  return searches;
}

torch::Tensor Explorer::crop_of(const Loaded& run, const CaptionQuery& query, const std::string& body) const {
  std::string bytes = body;
  std::filesystem::path name = "the upload";
  if (!query.image_id.empty()) {
    if (!body.empty()) throw RequestError(400, "give image=ID or an image in the body, not both");
    const auto row = run.image_index.find(query.image_id);
    if (row == run.image_index.end()) {
      throw RequestError(404, "image=" + query.image_id + " is not an image of the run's test split");
    }
    name = run.test_images[row->second].path;
    bytes = read_bytes(name);
  } else if (body.empty()) {
    throw RequestError(
        400, "no image: send the image file as the request body, or name a test image with image=ID");
  }
  try {
    const ImageOptions& options = run.trained.dataset.image;
    return crop_decoded_image(decode_image_bytes(bytes, name, options.max_pixels), name, options);
  } catch (const BadImageError& error) {
    const std::string message =
        query.image_id.empty() ? "the uploaded image: " + error.reason() : error.what();
    throw RequestError(error.too_large() ? 413 : 415, message);
  }
}

DecodedCaption Explorer::decode(Loaded& run, const CaptionQuery& query, const torch::Tensor& crop) {
  TrainedRun& trained = run.trained;
  const std::lock_guard<std::mutex> one_at_a_time(decode_mutex_);
  auto* transformer = dynamic_cast<TransformerDecoderImpl*>(trained.model->decoder.get());
  if (query.layer && transformer == nullptr)
    throw RequestError(400, "parameter layer: the run's decoder is not a Transformer");
  if (transformer != nullptr) {
    try {
      transformer->set_maps_layer(query.layer.value_or(trained.config.get<int64_t>("decoder.maps_layer")));
    } catch (const std::invalid_argument& error) {
      throw RequestError(400, std::string("parameter ") + error.what());
    }
  }
  // As `saccade caption`: the run's seed, so that a sampled caption repeats.
  torch::manual_seed(query.seed.value_or(static_cast<uint64_t>(trained.config.get<int64_t>("seed"))));
  return caption_images(
             *trained.model, crop.unsqueeze(0), trained.dataset.image, query.search,
             trained.placement.precision)
      .front();
}

Json Explorer::boxes_json(const Loaded& run, const std::string& image_id) const {
  Json boxes = Json::array();
  const ShapesImageTruth* truth = run.truth ? run.truth->find(image_id) : nullptr;
  if (truth == nullptr) return boxes;
  for (const ShapeObject& object : truth->objects) {
    const int size = run.truth->image_size;
    const Box box = map_box(object.box, size, size, run.trained.dataset.image);
    boxes.push_back(Json::object(
        {{"label", object.size + " " + object.color + " " + object.shape},
         {"box",
          Json::array(
              {Json(double(box.x0)), Json(double(box.y0)), Json(double(box.x1)), Json(double(box.y1))})}}));
  }
  return boxes;
}

Json Explorer::caption(const CaptionQuery& query, const std::string& body) {
  if (query.run >= runs_.size())
    throw RequestError(404, "no run " + std::to_string(query.run) + " is loaded");
  Loaded& run = runs_[query.run];
  const torch::Tensor crop = crop_of(run, query, body);  // uint8 [crop, crop, 3]
  const DecodedCaption caption = decode(run, query, crop);
  const DecoderOptions& decoder = run.trained.model->decoder->options();
  Json record = caption_record(
      caption, run.trained.vocabulary, run.trained.model->encoder->grid_size(crop.size(0), crop.size(1)));
  record.set("run", static_cast<int64_t>(query.run));
  Json image = Json::object({{"width", crop.size(1)}, {"height", crop.size(0)}});
  if (!query.image_id.empty()) image.set("id", query.image_id);
  record.set("image", std::move(image));
  record.set("crop", "data:image/png;base64," + base64_encode(encode_png(crop)));
  record.set("attention_mode", to_string(decoder.attention_mode));
  record.set("heads", heads_of(decoder));
  if (decoder.kind == DecoderKind::transformer)
    record.set("layer", query.layer.value_or(run.trained.config.get<int64_t>("decoder.maps_layer")));
  record.set("search", make_caption_search(query.search)->describe());
  if (!query.image_id.empty()) record.set("boxes", boxes_json(run, query.image_id));
  return record;
}

}  // namespace saccade
