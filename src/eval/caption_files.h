// The caption files `saccade score` reads: references in either common layout, and candidates
// in the COCO results layout that coco-caption and the evaluation server take.
//
//   auto references = read_reference_captions("captions_val2014.json");  // or dataset_coco.json
//   auto candidates = read_result_captions("results/test.json");
//   CaptionScores s = score_captions(references.captions, candidates, options, references.image_order);
//
// Image ids become text: 42 and "42" are the same image. Malformed JSON (including bytes that
// are not UTF-8) is a std::invalid_argument "path:line:column: ..."; a well-formed file of the
// wrong shape is a std::invalid_argument naming the file and the entry ("results.json: [3].caption:
// expected a string, got null"). An unreadable file is a std::runtime_error.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace saccade {

struct ReferenceCaptions {
  std::map<std::string, std::vector<std::string>> captions;  // by image id, in the file's order
  // The images in the order the file lists them, which coco-caption scores in: a COCO file's
  // "images" (then any image only its annotations name, in their order); a split's entries.
  std::vector<std::string> image_order;
};

// Reference captions by image id, from either
//   COCO captions:  {"images": [{"id": 42}, ...], "annotations": [{"image_id": 42, "caption": "A dog ..."},
//   ...]} Karpathy split: {"images": [{"cocoid": 42, "sentences": [{"raw": "A dog ..."}, ...]}, ...]}
// (a Karpathy entry without "cocoid", as in Flickr8k/30k, is keyed by its "imgid"; every split
// in the file is read).
ReferenceCaptions read_reference_captions(const std::filesystem::path& path);

// Candidate captions by image id from a COCO results file: [{"image_id": 42, "caption": "..."}].
// An image id given twice is an error, as coco-caption accepts one caption per image.
std::map<std::string, std::string> read_result_captions(const std::filesystem::path& path);

}  // namespace saccade
