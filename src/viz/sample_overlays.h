// Sample overlays: draw where each word of a caption looked, for `saccade caption`, `saccade
// visualize` and the end of training.
//
//   // test_set: a per-image CaptionDataset
//   write_sample_overlays(*model, vocabulary, *test_set, viz.sample_images, image_options, search,
//                         viz, run_dir / "samples");
//
// Shapes: B images, crop = ImageOptions::crop, n words, L grid locations.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image_pipeline.h"
#include "data/image_source.h"
#include "data/vocabulary.h"
#include "decode/search.h"
#include "device/placement.h"
#include "models/captioner.h"
#include "viz/attention_overlay.h"

namespace saccade {

// The figure of one captioned crop: the words of `caption`, its alphas on the encoder's grid for
// that crop, and `notes` below the panels.
AttentionFigure make_attention_figure(
    CaptionerImpl& model,
    const torch::Tensor& crop,
    const DecodedCaption& caption,
    const Vocabulary& vocabulary,
    std::vector<std::string> notes);

// The refiner's self-attention of one crop: a panel per head showing where one location looked in
// layer viz.refiner_layer, that location framed. `maps` holds every layer's [N, L, L] for the
// crop; the location is viz.refiner_location, or the peak cell of the caption's first word (the
// grid's centre for an empty caption). Throws std::invalid_argument naming the viz key when the
// layer or the location is outside the refiner or the grid.
AttentionFigure make_refiner_figure(
    const torch::Tensor& crop,
    const std::vector<torch::Tensor>& maps,
    const std::array<int64_t, 2>& grid,
    const DecodedCaption& caption,
    const VizOptions& viz);

// One written overlay.
struct SampleOverlay {
  std::string image_id;
  std::string caption;                  // the generated words joined by spaces
  double log_prob = 0.0;                // the caption's log-probability under the model
  std::vector<std::string> references;  // the image's reference captions
  std::filesystem::path file;           // the PNG
  std::filesystem::path refiner_file;   // with a refiner: its maps' PNG (<file's stem>_refiner.png)
  int64_t height = 0;                   // its size in pixels
  int64_t width = 0;
};

// The index of the overlays in a samples folder: [{"image_id", "caption", "log_prob", "references",
// "file"[, "refiner_file"]}], file names relative to the folder. The run report reads it.
inline constexpr const char* kSamplesIndex = "samples.json";

// Captions the first `count` samples of `dataset` (one sample per image: a val/test
// CaptionDataset, or a SubsetDataset of one) with `search` in `precision` and writes each figure, with the
// generated caption and the references as notes, to out_dir/<position, 3 digits>_<image id>.png (characters
// other than letters, digits, '-', '_' and '.' in the id become '_') and their index to out_dir/samples.json;
// with a refiner, also each image's make_refiner_figure beside it. An image that cannot be read is
// a BadImageError, or under BadImagePolicy::skip a warning, and the next image takes its place.
// Creates out_dir. Returns what was written, in dataset order. Throws std::runtime_error when a
// file cannot be written.
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
    Precision precision = Precision::fp32);

}  // namespace saccade
