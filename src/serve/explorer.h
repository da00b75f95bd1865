// The explorer's runs: trained runs loaded once, described, and captioning images on request for
// `saccade serve` (serve/explorer_server.h carries the requests here over HTTP).
//
//   Explorer explorer({{load_trained_run(dir, today), run_choices(dir, today)}});
//   explorer.runs_json();                          // GET /runs
//   explorer.images_json(0);                       // GET /runs/0/images: the test split's ids
//   explorer.caption(parse_caption_query(...), body);   // POST /caption
//
// A run's test split is read once (the shapes world's truth with it, for the boxes); a dataset
// that cannot be read leaves the run without images to pick, with a warning. Captions come from
// the same functions as `saccade caption --json` (data/image_pipeline.h's decoding and crop,
// decode_split.h's caption_images, decode/caption_record.h), so the numbers agree to the bit.
// Requests decode one at a time: a decoder keeps packed weights that one thread may use at once,
// and sampling draws from LibTorch's one default generator, seeded per request.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "data/caption_corpus.h"
#include "data/shapes_world.h"
#include "decode/trained_run.h"
#include "io/json.h"
#include "serve/caption_query.h"

namespace saccade {

// A run to explore and the group options it chose ("decoder=transformer"), as run_choices gives.
struct ExploredRun {
  TrainedRun trained;
  std::vector<std::string> choices;
};

class Explorer {
 public:
  explicit Explorer(std::vector<ExploredRun> runs);

  // {"runs": [{index, name, dir, epoch, checkpoint, choices, decoder, grid, image_size,
  // vocabulary, dataset, test_images, search, scores}]}: what the page needs to offer each run.
  const Json& runs_json() const { return runs_json_; }

  // {"run", "split": "test", "images": [{"id", "file", "references"}]}. Throws RequestError (404)
  // for a run that is not loaded.
  Json images_json(size_t run) const;

  // The run's test split as read (none when its dataset cannot be read).
  const std::vector<ImageRecord>& test_images(size_t run) const { return runs_.at(run).test_images; }

  // Each run's decode.*, for parse_caption_query.
  std::vector<SearchOptions> searches() const;

  // The record caption_record gives, plus run, image {id (split images), width, height}, crop (a
  // data: URL of the PNG the model saw), attention_mode (soft | hard), heads, layer (Transformer)
  // and boxes (the shapes world's objects in crop pixels, for its split images). `body` is the
  // image file's bytes unless the query names a split image. Throws RequestError: 404 for an
  // image id the split lacks, 400 for a body beside an id or neither, 415 for bytes that are no
  // image, 413 for an image over data.max_pixels, 400 for a layer the decoder lacks.
  Json caption(const CaptionQuery& query, const std::string& body);

 private:
  struct Loaded {
    TrainedRun trained;
    std::vector<ImageRecord> test_images;
    std::map<std::string, size_t> image_index;  // image id -> test_images row
    std::optional<ShapesTruth> truth;
  };
  // uint8 [crop, crop, 3]: what the model sees of the query's image.
  torch::Tensor crop_of(const Loaded& run, const CaptionQuery& query, const std::string& body) const;
  DecodedCaption decode(Loaded& run, const CaptionQuery& query, const torch::Tensor& crop);
  Json boxes_json(const Loaded& run, const std::string& image_id) const;

  std::vector<Loaded> runs_;
  Json runs_json_;
  std::mutex decode_mutex_;
};

}  // namespace saccade
