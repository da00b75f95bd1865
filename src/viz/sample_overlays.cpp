// Sample overlays: one figure file per captioned image, and their index.
#include "viz/sample_overlays.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "decode/decode_split.h"
#include "io/json.h"
#include "io/log.h"
#include "kernels/inference_precision.h"

namespace saccade {
namespace {

// Images decoded and drawn per model call.
constexpr int64_t kBatch = 16;

std::string file_safe(const std::string& id) {
  std::string name = id;
  for (char& c : name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    if (!keep) c = '_';
  }
  return name;
}

// Every refiner layer's maps [B, N, L, L] over `crops` (uint8 [B, H, W, 3]).
std::vector<torch::Tensor> refiner_maps(
    CaptionerImpl& model, const torch::Tensor& crops, const ImageOptions& image, Precision precision) {
  c10::InferenceMode inference;
  EvalModeGuard eval_mode(model);
  const InferencePrecision inference_precision({model.device(), precision});
  const auto images = normalize_images(crops, image).to(model.device());
  const auto grid = model.encoder->grid_size(images.size(2), images.size(3));
  std::vector<torch::Tensor> maps;
  for (const auto& map : model.refiner->refine(model.encoder->forward(images), grid).maps) {
    maps.push_back(map.to(torch::kCPU, torch::kFloat));
  }
  return maps;
}

}  // namespace

AttentionFigure make_refiner_figure(
    const torch::Tensor& crop,
    const std::vector<torch::Tensor>& maps,
    const std::array<int64_t, 2>& grid,
    const DecodedCaption& caption,
    const VizOptions& viz) {
  const auto layers = static_cast<int64_t>(maps.size());
  const int64_t layer = viz.refiner_layer < 0 ? layers + viz.refiner_layer : viz.refiner_layer;
  if (layer < 0 || layer >= layers) {
    throw std::invalid_argument(
        "viz.refiner_layer=" + std::to_string(viz.refiner_layer) + " is not a layer of the " +
        std::to_string(layers) + "-layer refiner");
  }
  int64_t cell = (grid[0] / 2) * grid[1] + grid[1] / 2;
  if (viz.refiner_location) {
    const auto [row, column] = *viz.refiner_location;
    if (row >= grid[0] || column >= grid[1]) {
      throw std::invalid_argument(
          "viz.refiner_location [" + std::to_string(row) + ", " + std::to_string(column) +
          "] is outside the " + std::to_string(grid[0]) + " x " + std::to_string(grid[1]) + " grid");
    }
    cell = row * grid[1] + column;
  } else if (caption.alphas.defined() && caption.alphas.size(0) > 0) {
    const auto first = caption.alphas[0];  // [L] or [N, L]
    cell = (first.dim() == 2 ? first.to(torch::kFloat).mean(0) : first).argmax().item<int64_t>();
  }
  AttentionFigure figure;
  figure.image = crop;
  figure.alphas = maps[static_cast<size_t>(layer)].select(1, cell);  // [N, L]
  for (int64_t head = 1; head <= figure.alphas.size(0); ++head)
    figure.words.push_back("head " + std::to_string(head));
  figure.grid = grid;
  figure.framed_cell = cell;
  figure.panel_subject = "head";
  figure.notes = {
      "refiner layer " + std::to_string(layer + 1) + " of " + std::to_string(layers) +
      ": where the framed cell (row " + std::to_string(cell / grid[1]) + ", column " +
      std::to_string(cell % grid[1]) + ") looks, one panel per head"};
  figure.legend = true;
  return figure;
}

AttentionFigure make_attention_figure(
    CaptionerImpl& model,
    const torch::Tensor& crop,
    const DecodedCaption& caption,
    const Vocabulary& vocabulary,
    std::vector<std::string> notes) {
  AttentionFigure figure;
  figure.image = crop;
  figure.words = vocabulary.decode(caption.tokens);
  figure.alphas = caption.alphas;
  figure.grid = model.encoder->grid_size(crop.size(0), crop.size(1));
  figure.notes = std::move(notes);
  figure.outline_read_cell = model.decoder->options().attention_mode == AttentionMode::hard;
  figure.legend = true;
  return figure;
}

namespace {

// Up to `wanted` samples of `dataset` from `next` on, which it advances past what it read; an
// image that cannot be read is skipped with a warning under BadImagePolicy::skip.
std::vector<Sample> read_samples(
    const Dataset& dataset, int64_t& next, int64_t wanted, BadImagePolicy on_bad_image) {
  std::vector<Sample> samples;
  while (static_cast<int64_t>(samples.size()) < wanted && next < dataset.size()) {
    try {
      samples.push_back(dataset.get(next++));
    } catch (const BadImageError& error) {
      if (on_bad_image == BadImagePolicy::fail) throw;
      log::warn() << error.what() << "; skipped (data.on_bad_image=skip)";
    }
  }
  return samples;
}

}  // namespace

std::vector<SampleOverlay> write_sample_overlays(
    CaptionerImpl& model,
    const Vocabulary& vocabulary,
    const Dataset& dataset,
    int64_t count,
    const ImageOptions& image,
    const SearchOptions& search,
    const VizOptions& viz,
    const std::filesystem::path& out_dir,
    BadImagePolicy on_bad_image,
    Precision precision) {
  validate(viz);
  std::filesystem::create_directories(out_dir);
  std::vector<SampleOverlay> written;
  int64_t next = 0;  // the next sample to read
  while (static_cast<int64_t>(written.size()) < count && next < dataset.size()) {
    const int64_t start = static_cast<int64_t>(written.size());
    const std::vector<Sample> samples =
        read_samples(dataset, next, std::min(kBatch, count - start), on_bad_image);
    if (samples.empty()) break;
    std::vector<torch::Tensor> crops;
    for (const Sample& sample : samples) crops.push_back(sample.image);
    const auto batch = torch::stack(crops);
    const auto captions = caption_images(model, batch, image, search, precision);  // B captions
    const auto maps =
        model.refiner ? refiner_maps(model, batch, image, precision) : std::vector<torch::Tensor>();
    for (size_t b = 0; b < samples.size(); ++b) {
      SampleOverlay overlay;
      overlay.image_id = samples[b].image_id;
      overlay.caption = join_words(vocabulary.decode(captions[b].tokens));
      overlay.log_prob = captions[b].log_prob;
      std::vector<std::string> notes = {"generated: " + overlay.caption};
      for (const auto& reference : samples[b].references) {
        overlay.references.push_back(join_words(reference));
        notes.push_back("reference: " + overlay.references.back());
      }
      const auto figure = make_attention_figure(model, samples[b].image, captions[b], vocabulary, notes);
      char position[24];
      std::snprintf(position, sizeof(position), "%03lld", static_cast<long long>(start + b));
      overlay.file = out_dir / (std::string(position) + "_" + file_safe(overlay.image_id) + ".png");
      const torch::Tensor grid = render_attention_figure(figure, viz);  // uint8 [H, W, 3]
      overlay.height = grid.size(0);
      overlay.width = grid.size(1);
      write_image_file(overlay.file, grid);
      if (!maps.empty()) {
        std::vector<torch::Tensor> own;
        for (const auto& map : maps) own.push_back(map[static_cast<int64_t>(b)]);  // [N, L, L]
        overlay.refiner_file = overlay.file.parent_path() / (overlay.file.stem().string() + "_refiner.png");
        write_image_file(
            overlay.refiner_file,
            render_attention_figure(
                make_refiner_figure(samples[b].image, own, figure.grid, captions[b], viz), viz));
      }
      written.push_back(std::move(overlay));
    }
  }
  Json index = Json::array();
  for (const SampleOverlay& overlay : written) {
    Json references = Json::array();
    for (const auto& reference : overlay.references) references.push_back(reference);
    Json entry = Json::object(
        {{"image_id", overlay.image_id},
         {"caption", overlay.caption},
         {"log_prob", overlay.log_prob},
         {"references", references},
         {"file", overlay.file.filename().string()}});
    if (!overlay.refiner_file.empty()) entry.set("refiner_file", overlay.refiner_file.filename().string());
    index.push_back(std::move(entry));
  }
  write_json_file(out_dir / kSamplesIndex, index, 2);
  return written;
}

}  // namespace saccade
