// Sample overlays: one figure file per captioned image, and their index.
#include "viz/sample_overlays.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "decode/decode_split.h"
#include "io/json.h"

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

}  // namespace

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

std::vector<SampleOverlay> write_sample_overlays(
    CaptionerImpl& model,
    const Vocabulary& vocabulary,
    const Dataset& dataset,
    int64_t count,
    const ImageOptions& image,
    const SearchOptions& search,
    const VizOptions& viz,
    const std::filesystem::path& out_dir,
    Precision precision) {
  validate(viz);
  std::filesystem::create_directories(out_dir);
  const int64_t total = std::min(count, dataset.size());
  std::vector<SampleOverlay> written;
  for (int64_t start = 0; start < total; start += kBatch) {
    std::vector<Sample> samples;
    std::vector<torch::Tensor> crops;
    for (int64_t i = start; i < std::min(total, start + kBatch); ++i) {
      samples.push_back(dataset.get(i));
      crops.push_back(samples.back().image);
    }
    const auto captions = caption_images(model, torch::stack(crops), image, search, precision);  // B captions
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
      char position[16];
      std::snprintf(position, sizeof(position), "%03lld", static_cast<long long>(start + b));
      overlay.file = out_dir / (std::string(position) + "_" + file_safe(overlay.image_id) + ".png");
      const torch::Tensor grid = render_attention_figure(figure, viz);  // uint8 [H, W, 3]
      overlay.height = grid.size(0);
      overlay.width = grid.size(1);
      write_image_file(overlay.file, grid);
      written.push_back(std::move(overlay));
    }
  }
  Json index = Json::array();
  for (const SampleOverlay& overlay : written) {
    Json references = Json::array();
    for (const auto& reference : overlay.references) references.push_back(reference);
    index.push_back(Json::object(
        {{"image_id", overlay.image_id},
         {"caption", overlay.caption},
         {"log_prob", overlay.log_prob},
         {"references", references},
         {"file", overlay.file.filename().string()}}));
  }
  write_json_file(out_dir / kSamplesIndex, index, 2);
  return written;
}

}  // namespace saccade
