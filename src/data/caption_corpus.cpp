// Readers for Karpathy split files and COCO captions files.
#include "data/caption_corpus.h"

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "base/text.h"
#include "data/vocabulary.h"
#include "io/json.h"
#include "io/log.h"

namespace saccade {
namespace {

// Warnings beyond this many of one kind per file are only counted.
constexpr int kMaxWarnings = 10;

// Counts and logs what a reader leaves out, so nothing disappears silently.
class LeftOut {
 public:
  LeftOut(std::filesystem::path file, std::string what) : file_(std::move(file)), what_(std::move(what)) {}
  void add(const std::string& detail) {
    if (++count_ <= kMaxWarnings) log::warn() << file_.string() << ": left out " << what_ << ": " << detail;
  }
  void summarize() const {
    if (count_ > kMaxWarnings)
      log::warn() << file_.string() << ": left out " << count_ << " " << what_ << " in all";
  }

 private:
  std::filesystem::path file_;
  std::string what_;
  int64_t count_ = 0;
};

// An id or name field that may be written as a number or a string.
std::string id_text(const Json& value) {
  if (value.is_string()) return value.as_string();
  return std::to_string(value.as_int64());
}

Caption read_sentence(const Json& sentence) {
  Caption caption;
  const Json* raw = sentence.find("raw");
  const Json* tokens = sentence.find("tokens");
  if (raw == nullptr && tokens == nullptr) throw std::invalid_argument("missing key \"tokens\" (or \"raw\")");
  if (raw != nullptr) caption.raw = raw->as_string();
  if (tokens != nullptr) {
    const Json::Array& list = tokens->as_array();
    for (size_t i = 0; i < list.size(); ++i) {
      // A token is one word: scoring keys n-grams by words joined with spaces, and vocab.json
      // and the results files hold words.
      const std::string& token = list[i].as_string();
      const bool blank =
          std::any_of(token.begin(), token.end(), [](unsigned char c) { return std::isspace(c); });
      if (token.empty() || blank) {
        throw std::invalid_argument(
            "tokens[" + std::to_string(i) + "] " +
            (token.empty() ? "is empty" : "'" + token + "' holds whitespace") + ": a token is one word");
      }
      if (Vocabulary::is_special(token)) {
        throw std::invalid_argument(
            "tokens[" + std::to_string(i) + "] '" + token +
            "' is spelled like one of the vocabulary's own tokens (<pad> <start> <end> <unk>), which no "
            "caption may hold");
      }
      caption.words.push_back(token);
    }
  } else {
    caption.words = tokenize(caption.raw);
  }
  return caption;
}

// Error for the entry `where` of `file`, keeping the reason.
[[noreturn]] void entry_error(
    const std::filesystem::path& file, const std::string& where, const std::string& what) {
  throw std::invalid_argument(file.string() + ": " + where + ": " + what);
}

std::string at_index(const std::string& array, size_t index) {
  return array + "[" + std::to_string(index) + "]";
}

// One entry of a Karpathy file's "images". Errors name the field relative to the entry.
ImageRecord read_karpathy_image(
    const Json& image,
    const std::filesystem::path& images_dir,
    const std::string& where,
    LeftOut& empty_captions) {
  ImageRecord record;
  const std::string& filename = image.at("filename").as_string();
  if (filename.empty()) throw std::invalid_argument("empty \"filename\"");
  const Json* filepath = image.find("filepath");
  record.path = filepath != nullptr ? images_dir / filepath->as_string() / filename : images_dir / filename;
  record.split = image.at("split").as_string();
  if (const Json* cocoid = image.find("cocoid")) {
    record.image_id = id_text(*cocoid);
  } else if (const Json* imgid = image.find("imgid")) {
    record.image_id = id_text(*imgid);
  } else {
    record.image_id = filename;
  }
  const Json::Array& sentences = image.at("sentences").as_array();
  for (size_t j = 0; j < sentences.size(); ++j) {
    Caption caption;
    try {
      caption = read_sentence(sentences[j]);
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument(at_index("sentences", j) + ": " + error.what());
    }
    if (caption.words.empty()) {
      empty_captions.add(where + ": " + at_index("sentences", j) + " of " + record.path.string());
      record.wordless_references.push_back(std::move(caption.raw));
    } else {
      record.captions.push_back(std::move(caption));
    }
  }
  return record;
}

const Json::Array& top_level_array(const Json& document, const char* key, const std::filesystem::path& file) {
  try {
    return document.at(key).as_array();
  } catch (const std::invalid_argument& error) {
    entry_error(file, "top level", error.what());
  }
}

// Tracks ids and files already seen so that an image listed twice is an error.
// Images listed twice, by id or by file, in one file or across the captions files of a corpus
// (2014 val and 2017 train hold the same images).
class DuplicateCheck {
 public:
  void add(
      const std::string& id,
      const std::filesystem::path& image,
      const std::filesystem::path& file,
      const std::string& where) {
    const Entry entry{file, where};
    const auto by_id = ids_.emplace(id, entry);
    if (!by_id.second)
      entry_error(file, where, "image id " + id + " is listed twice" + also(by_id.first->second, file));
    const auto by_path = paths_.emplace(image.string(), entry);
    if (!by_path.second)
      entry_error(
          file, where, "image " + image.string() + " is listed twice" + also(by_path.first->second, file));
  }

 private:
  struct Entry {
    std::filesystem::path file;
    std::string where;
  };
  static std::string also(const Entry& first, const std::filesystem::path& file) {
    return " (also " + (first.file == file ? "" : first.file.string() + ": ") + first.where + ")";
  }

  std::unordered_map<std::string, Entry> ids_;
  std::unordered_map<std::string, Entry> paths_;
};

}  // namespace

CaptionCorpus read_karpathy_split(
    const std::filesystem::path& split_file, const std::filesystem::path& images_dir) {
  const Json document = read_json_file(split_file);
  CaptionCorpus corpus;
  corpus.source = split_file;
  const Json* name = document.find("dataset");
  corpus.name = name != nullptr && name->is_string() ? name->as_string() : split_file.stem().string();

  LeftOut empty_captions(split_file, "empty captions");
  LeftOut captionless_images(split_file, "images without captions");
  DuplicateCheck duplicates;
  const Json::Array& images = top_level_array(document, "images", split_file);
  for (size_t i = 0; i < images.size(); ++i) {
    const std::string where = at_index("images", i);
    ImageRecord record;
    try {
      record = read_karpathy_image(images[i], images_dir, where, empty_captions);
    } catch (const std::invalid_argument& error) {
      entry_error(split_file, where, error.what());
    }
    duplicates.add(record.image_id, record.path, split_file, where);
    if (record.captions.empty()) {
      captionless_images.add(where + " (" + record.path.string() + ")");
      continue;
    }
    corpus.images.push_back(std::move(record));
  }
  empty_captions.summarize();
  captionless_images.summarize();
  return corpus;
}

namespace {

// The split list: "<image id or file name> <split>" per line, '#' comments.
std::unordered_map<std::string, std::string> read_split_list(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("Could not open the split list " + path.string());
  std::unordered_map<std::string, std::string> splits;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    std::string key;
    std::string split;
    std::string extra;
    if (!(fields >> key)) continue;
    if (!(fields >> split) || (fields >> extra)) {
      throw std::invalid_argument(
          path.string() + ":" + std::to_string(number) +
          ": expected '<image id or file name> <split>', got '" + line + "'");
    }
    if (!splits.emplace(key, split).second) {
      throw std::invalid_argument(
          path.string() + ":" + std::to_string(number) + ": image " + key + " is listed twice");
    }
  }
  return splits;
}

// One COCO captions file's images (its "images" list) under `image_dir`, and each id's place.
struct CocoImages {
  std::vector<ImageRecord> records;
  std::unordered_map<int64_t, size_t> by_id;
};

CocoImages read_coco_images(
    const std::filesystem::path& file,
    const Json::Array& images,
    const std::filesystem::path& image_dir,
    DuplicateCheck& duplicates) {
  CocoImages read;
  for (size_t i = 0; i < images.size(); ++i) {
    ImageRecord record;
    int64_t id = 0;
    try {
      id = images[i].at("id").as_int64();
      const std::string& file_name = images[i].at("file_name").as_string();
      if (file_name.empty()) throw std::invalid_argument("empty \"file_name\"");
      record.image_id = std::to_string(id);
      record.path = image_dir / file_name;
    } catch (const std::invalid_argument& error) {
      entry_error(file, at_index("images", i), error.what());
    }
    duplicates.add(record.image_id, record.path, file, at_index("images", i));
    read.by_id.emplace(id, read.records.size());
    read.records.push_back(std::move(record));
  }
  return read;
}

// The file's "annotations" added to its images: a caption with no words is kept only as a
// reference (coco-caption scores against it), and counted.
void add_coco_captions(
    const std::filesystem::path& file, const Json::Array& annotations, CocoImages& images) {
  LeftOut empty_captions(file, "empty captions");
  for (size_t a = 0; a < annotations.size(); ++a) {
    Caption caption;
    int64_t image_id = 0;
    try {
      image_id = annotations[a].at("image_id").as_int64();
      caption.raw = annotations[a].at("caption").as_string();
    } catch (const std::invalid_argument& error) {
      entry_error(file, at_index("annotations", a), error.what());
    }
    const auto it = images.by_id.find(image_id);
    if (it == images.by_id.end()) {
      entry_error(
          file, at_index("annotations", a), "image_id " + std::to_string(image_id) + " is not in \"images\"");
    }
    ImageRecord& record = images.records[it->second];
    caption.words = tokenize(caption.raw);
    if (caption.words.empty()) {
      empty_captions.add(at_index("annotations", a) + " of image " + std::to_string(image_id));
      record.wordless_references.push_back(std::move(caption.raw));
      continue;
    }
    record.captions.push_back(std::move(caption));
  }
  empty_captions.summarize();
}

}  // namespace

CaptionCorpus read_coco_captions(
    const std::vector<std::filesystem::path>& captions_files,
    const std::vector<std::filesystem::path>& image_dirs,
    const std::filesystem::path& split_list) {
  if (captions_files.size() != image_dirs.size() || captions_files.empty()) {
    throw std::invalid_argument(
        "dataset.captions_files and dataset.captions_image_dirs must be non-empty lists of "
        "the same length, got " +
        std::to_string(captions_files.size()) + " and " + std::to_string(image_dirs.size()));
  }
  const auto splits = read_split_list(split_list);
  CaptionCorpus corpus;
  corpus.name = "coco";
  corpus.source = captions_files.front();
  std::unordered_map<std::string, bool> listed_used;
  int64_t unlisted = 0;
  DuplicateCheck duplicates;
  for (size_t f = 0; f < captions_files.size(); ++f) {
    const auto& file = captions_files[f];
    const Json document = read_json_file(file);
    CocoImages images =
        read_coco_images(file, top_level_array(document, "images", file), image_dirs[f], duplicates);
    add_coco_captions(file, top_level_array(document, "annotations", file), images);
    LeftOut captionless_images(file, "images without captions");
    for (auto& record : images.records) {
      auto split = splits.find(record.image_id);
      if (split == splits.end()) split = splits.find(record.path.filename().string());
      if (split == splits.end()) {
        ++unlisted;
        continue;
      }
      listed_used[split->first] = true;
      if (record.captions.empty()) {
        captionless_images.add("image " + record.image_id + " (" + record.path.string() + ")");
        continue;
      }
      record.split = split->second;
      corpus.images.push_back(std::move(record));
    }
    captionless_images.summarize();
  }
  if (unlisted > 0)
    log::info() << split_list.string() << ": " << unlisted << " images of the captions files are in no split";
  const int64_t unknown = static_cast<int64_t>(splits.size() - listed_used.size());
  if (unknown > 0)
    log::warn() << split_list.string() << ": " << unknown << " entries name images not in the captions files";
  return corpus;
}

std::string scored_text(const Caption& caption) {
  return caption.raw.empty() ? join_words(caption.words) : caption.raw;
}

std::vector<std::string> scored_references(const ImageRecord& image) {
  std::vector<std::string> references;
  for (const Caption& caption : image.captions) references.push_back(scored_text(caption));
  references.insert(references.end(), image.wordless_references.begin(), image.wordless_references.end());
  return references;
}

std::vector<ImageRecord> select_splits(const CaptionCorpus& corpus, const std::vector<std::string>& splits) {
  std::vector<ImageRecord> selected;
  std::map<std::string, int64_t> present;
  for (const auto& image : corpus.images) {
    ++present[image.split];
    for (const auto& split : splits) {
      if (image.split == split) {
        selected.push_back(image);
        break;
      }
    }
  }
  if (selected.empty()) {
    const std::string asked = join(splits, ", ");
    std::vector<std::string> counts;
    for (const auto& [split, count] : present) counts.push_back(split + " (" + std::to_string(count) + ")");
    const std::string found = join(counts, ", ");
    throw std::invalid_argument(
        corpus.source.string() + " has no images in split " + (asked.empty() ? "(none)" : asked) +
        "; splits present: " + (found.empty() ? "none" : found));
  }
  return selected;
}

}  // namespace saccade
