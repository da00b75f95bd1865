// The captioning dataset and the subset decorator.
#include "data/dataset.h"

#include <limits>
#include <stdexcept>

#include "base/enum_names.h"
#include "io/log.h"

namespace saccade {

const EnumNames<Split> kSplitNames(
    "split", {{Split::train, "train"}, {Split::val, "val"}, {Split::test, "test"}});

std::string to_string(Split split) {
  return kSplitNames.name(split);
}

Split parse_split(const std::string& name) {
  return kSplitNames.parse(name);
}

CaptionDataset::CaptionDataset(
    std::vector<ImageRecord> images,
    std::shared_ptr<const ImageSource> source,
    const Vocabulary& vocabulary,
    const VocabularyOptions& options,
    SampleMode mode)
    : images_(std::move(images)), source_(std::move(source)), mode_(mode) {
  if (source_ == nullptr || source_->size() != static_cast<int64_t>(images_.size())) {
    throw std::invalid_argument(
        "CaptionDataset: the image source has " + std::to_string(source_ ? source_->size() : 0) +
        " rows for " + std::to_string(images_.size()) + " images");
  }
  if (images_.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw std::invalid_argument("CaptionDataset: more than 2^31 images");
  }
  offsets_.push_back(0);
  // A validation sample always exists: its tokens only feed a loss, so a long first reference
  // is truncated whatever on_long_caption says.
  VocabularyOptions truncating = options;
  truncating.on_long_caption = LongCaptionPolicy::truncate;
  auto add = [&](size_t image, std::vector<std::string> words, const VocabularyOptions& fit) {
    const size_t before = words.size();
    if (!fit_caption_length(words, fit)) {
      ++dropped_;
      return;
    }
    if (words.size() < before) ++truncated_;
    for (const int64_t id : vocabulary.encode(words)) tokens_.push_back(static_cast<int32_t>(id));
    item_images_.push_back(static_cast<int32_t>(image));
    offsets_.push_back(static_cast<int64_t>(tokens_.size()));
  };
  for (size_t image = 0; image < images_.size(); ++image) {
    const auto& captions = images_[image].captions;
    if (captions.empty()) {
      throw std::invalid_argument("CaptionDataset: image " + images_[image].image_id + " has no caption");
    }
    if (mode_ == SampleMode::per_caption) {
      for (const auto& caption : captions) add(image, caption.words, options);
    } else {
      add(image, captions.front().words, truncating);
    }
  }
  if (truncated_ > 0 || dropped_ > 0) {
    log::info() << "Captions longer than " << options.max_caption_length << " words: " << truncated_
                << " truncated, " << dropped_
                << " dropped (dataset.on_long_caption: " << to_string(options.on_long_caption) << ")";
  }
}

Sample CaptionDataset::get(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::invalid_argument(
        "Sample " + std::to_string(index) + " is out of range [0, " + std::to_string(size()) + ")");
  }
  const int64_t image = item_images_[static_cast<size_t>(index)];
  const ImageRecord& record = images_[static_cast<size_t>(image)];
  Sample sample;
  sample.index = index;
  sample.image_id = record.image_id;
  sample.image = source_->load(image);
  sample.tokens.assign(tokens_.begin() + offsets_[index], tokens_.begin() + offsets_[index + 1]);
  sample.references.reserve(record.captions.size());
  for (const auto& caption : record.captions) sample.references.push_back(caption.words);
  sample.scored_references = scored_references(record);
  return sample;
}

SubsetDataset::SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices)
    : base_(std::move(base)), indices_(std::move(indices)) {
  for (const int64_t index : indices_) {
    if (index < 0 || index >= base_->size()) {
      throw std::invalid_argument(
          "SubsetDataset: index " + std::to_string(index) + " is out of range [0, " +
          std::to_string(base_->size()) + ")");
    }
  }
}

Sample SubsetDataset::get(int64_t index) const {
  Sample sample = base_->get(indices_.at(static_cast<size_t>(index)));
  sample.index = index;
  return sample;
}

std::vector<int64_t> first_indices(int64_t n, int64_t size) {
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < std::min(n, size); ++i) indices.push_back(i);
  return indices;
}

}  // namespace saccade
