// Caption corpora: images with their reference captions and split labels, read from the files
// researchers have.
//
//   CaptionCorpus corpus = read_karpathy_split("coco/dataset_coco.json", "coco");
//   std::vector<ImageRecord> train = select_splits(corpus, {"train", "restval"});
//
// Two formats:
//  - Karpathy split files (dataset_flickr8k.json, dataset_flickr30k.json, dataset_coco.json):
//    {"images": [{"filename", "filepath" (COCO only), "split", "sentences": [{"tokens", "raw"}],
//    "cocoid" | "imgid", "sentids"}], "dataset"}. The image file is images_dir/filepath/filename,
//    or images_dir/filename without a filepath.
//  - COCO's own captions_train2014.json / captions_val2014.json ({"images": [{"id",
//    "file_name"}], "annotations": [{"image_id", "caption"}]}) plus a split list: a text file
//    with one "<image id or file name> <split>" per line ('#' starts a comment). Images missing
//    from the list are left out (counted in the log).
//
// What every reader guarantees: each image appears once (a repeated file or id is an error),
// every kept image has at least one non-empty caption, all captions of an image are kept (some
// COCO images have more than 5), and nothing is left out without a warning in the log. Malformed
// JSON and missing or mistyped fields are std::invalid_argument naming the file and the entry
// ("dataset.json: images[3]: sentences[0]: missing key \"tokens\" (or \"raw\")").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace saccade {

struct Caption {
  std::string raw;  // as written in the file ("A dog runs."); may be empty if only tokens were given
  std::vector<std::string> words;  // the Karpathy `tokens` when present, else tokenize(raw)
};

// The text a caption is scored by, as coco-caption reads captions: the raw text, which its
// tokenizer splits (so "man's" is "man 's", not the Karpathy token "mans"), or the words joined
// by spaces where the file gave no raw text.
std::string scored_text(const Caption& caption);

struct ImageRecord {
  std::string image_id;           // evaluation id: `cocoid` (COCO), else `imgid`, else the file name
  std::filesystem::path path;     // the image file
  std::string split;              // the file's label: "train", "val", "test", "restval", ...
  std::vector<Caption> captions;  // every reference caption with words, in file order; never empty
  // The raw text of the captions without words ("."), left out of `captions` but, as in
  // coco-caption, still references to score against.
  std::vector<std::string> wordless_references;
};

// Every reference an image's caption is scored against: scored_text of each caption, then the
// wordless ones.
std::vector<std::string> scored_references(const ImageRecord& image);

struct CaptionCorpus {
  std::string name;                 // the file's "dataset" field, or the file name
  std::filesystem::path source;     // the split file (or captions file) it came from, for messages
  std::vector<ImageRecord> images;  // in file order
};

// Reads a Karpathy split file. Empty captions (no words) are left out of training with a warning
// naming the image (they stay wordless references); an image left with no caption is left out
// the same way.
CaptionCorpus read_karpathy_split(
    const std::filesystem::path& split_file, const std::filesystem::path& images_dir);

// Reads COCO captions files; `image_dirs[i]` is where the images of `captions_files[i]` live
// (captions_train2014.json -> <root>/train2014). `split_list` assigns splits (see above).
CaptionCorpus read_coco_captions(
    const std::vector<std::filesystem::path>& captions_files,
    const std::vector<std::filesystem::path>& image_dirs,
    const std::filesystem::path& split_list);

// The images whose split label is one of `splits`, in corpus order (so `{"train", "restval"}`
// joins restval to train). Throws std::invalid_argument naming the corpus, the splits asked
// for and the splits present when no image matches.
std::vector<ImageRecord> select_splits(const CaptionCorpus& corpus, const std::vector<std::string>& splits);

}  // namespace saccade
