// Decoding a split: every image of a loader's dataset captioned by one search, with what scoring
// needs (evaluate/split_evaluation.h scores it). Training's validation and final test pass,
// `saccade eval`, `caption`, `visualize` and `serve` all decode through here.
//
//   Loader loader(images, loader_options, dataset.image);     // one sample per image, in order
//   DecodedSplit decoded = decode_split(*model, loader, *make_caption_search(search), vocabulary);
//
//   // Preprocessed crops (uint8 [B, crop, crop, 3], as the pipeline makes them):
//   std::vector<DecodedCaption> captions = caption_images(*model, crops, dataset.image, search);
#pragma once

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/scored_caption.h"
#include "data/feature_cache.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "data/vocabulary.h"
#include "decode/search.h"
#include "device/placement.h"
#include "dist/process_group.h"
#include "models/captioner.h"

namespace saccade {

struct DecodeSplitOptions {
  // Decode the first n images of the split; 0 = all.
  int64_t max_images = 0;
  // The split's annotations from a `saccade extract` cache (rows = the dataset's images) instead
  // of running the encoder; nullptr = run it.
  const FeatureCache* features = nullptr;
  // Keep each caption's attention maps (DecodedSplit::attention), for metrics of where it looked.
  bool keep_attention = false;
  // Captions to score under teacher forcing for an image, by its id (caption_log_probs; their
  // log-probabilities in DecodedSplit::forced_log_probs, in order): a forced choice between
  // captions. Empty = none.
  std::function<std::vector<std::vector<std::string>>(const std::string& image_id)> forced_captions;
  // Data-parallel: rank r decodes batches r, r + R, r + 2R, ... of the R ranks (the batches one
  // process would decode, so the captions are bit for bit a single process's) and every rank
  // gets the whole split back. nullptr = this process decodes everything.
  ProcessGroup* group = nullptr;
  // runtime.precision, for an InferencePrecision scope (kernels/inference_precision.h) around the
  // encoder and decoder on the model's device: autocast, or on the CPU with bf16 the decoder's
  // weights read as bf16 and the encoder in float32.
  Precision precision = Precision::fp32;
  // Sampled searches draw batch n's words after seeding LibTorch's generator from (seed, n): a
  // decode repeats, and is the same whichever rank decodes the batch.
  uint64_t seed = 0;
};

// Where one caption's words looked.
struct CaptionAttention {
  torch::Tensor alphas;               // [n, L] ([n, N, L] multihead), a row per word, as searched
  std::array<int64_t, 2> grid{0, 0};  // [H', W'] of the L = H' W' locations, row-major
  int64_t height = 0, width = 0;      // of the model's input image, in pixels
};

struct DecodedSplit {
  std::vector<std::string> image_order;                         // image ids in decoding order
  std::map<std::string, std::vector<std::string>> words;        // each image's caption
  std::map<std::string, std::string> candidates;                // the same, words joined
  std::map<std::string, std::vector<std::string>> references;   // each image's references
  std::map<std::string, std::vector<ScoredCaption>> n_best;     // with decode.n_best > 1
  std::map<std::string, CaptionAttention> attention;            // with options.keep_attention
  std::map<std::string, std::vector<double>> forced_log_probs;  // with options.forced_captions
};

// The annotations of `batch` [B, L, D] on the model's device, computed once per row of
// Batch::images and spread to the samples by Batch::image_rows: those images' rows of `features`
// (found through `dataset`), refined, when given, else the encoder run on Batch::images.
torch::Tensor annotations_of(
    CaptionerImpl& model, const Batch& batch, const CaptionDataset& dataset, const FeatureCache* features);

// The model's log-probability of each whole caption (its words, then <end>) under teacher
// forcing, caption i read against row image_rows[i] of annotations [B, L, D]; words outside the
// vocabulary read as <unk>. In the decoder's current mode, hard attention outside training reading
// as `read` says (decode_split passes its search's decode.hard_read); call under no-grad.
std::vector<double> caption_log_probs(
    CaptionDecoderImpl& decoder,
    const torch::Tensor& annotations,
    const std::vector<int64_t>& image_rows,
    const std::vector<std::vector<std::string>>& captions,
    const Vocabulary& vocabulary,
    HardRead read);

// Decodes `loader`'s dataset (one sample per image) from epoch 0's order under no-grad, in eval
// mode (the model's training flag is restored).
DecodedSplit decode_split(
    CaptionerImpl& model,
    Loader& loader,
    const CaptionSearch& search,
    const Vocabulary& vocabulary,
    const DecodeSplitOptions& options = {});

// Captions of `crops` uint8 [B, crop, crop, 3] (the pipeline's output, not normalized): normalizes
// them with `image`, encodes and searches with make_caption_search(search) under inference mode,
// on the model's device in `precision` (an InferencePrecision scope). The model's training mode is
// restored afterwards.
std::vector<DecodedCaption> caption_images(
    CaptionerImpl& model,
    const torch::Tensor& crops,
    const ImageOptions& image,
    const SearchOptions& search,
    Precision precision = Precision::fp32);

}  // namespace saccade
