// Tokenization, vocabulary building and its JSON form.
#include "data/vocabulary.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <stdexcept>

#include "base/enum_names.h"
#include "base/text.h"
#include "io/log.h"

namespace saccade {
namespace {

const char* const kSpecialTokens[] = {"<pad>", "<start>", "<end>", "<unk>"};

}  // namespace

const EnumNames<LongCaptionPolicy> kLongCaptionPolicyNames(
    "long-caption policy", {{LongCaptionPolicy::truncate, "truncate"}, {LongCaptionPolicy::drop, "drop"}});

std::string to_string(LongCaptionPolicy policy) {
  return kLongCaptionPolicyNames.name(policy);
}

LongCaptionPolicy parse_long_caption_policy(const std::string& name) {
  return kLongCaptionPolicyNames.parse(name);
}

VocabularyOptions vocabulary_options_from(const Config& config) {
  VocabularyOptions options;
  options.min_word_count = config.get<int>("dataset.min_word_count");
  options.max_caption_length = config.get<int>("dataset.max_caption_length");
  options.on_long_caption = config.get_parsed("dataset.on_long_caption", parse_long_caption_policy);
  return options;
}

void validate(const VocabularyOptions& options) {
  if (options.min_word_count < 1) {
    throw std::invalid_argument(
        "dataset.min_word_count must be >= 1 (1 keeps every word), got " +
        std::to_string(options.min_word_count));
  }
  if (options.max_caption_length < 0) {
    throw std::invalid_argument(
        "dataset.max_caption_length must be >= 0 (0 = no limit), got " +
        std::to_string(options.max_caption_length));
  }
}

std::vector<std::string> tokenize(std::string_view raw) {
  std::vector<std::string> words;
  std::string word;
  for (const char c : raw) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte == ' ' || byte == '\t' || byte == '\n' || byte == '\r' || byte == '\v' || byte == '\f') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else if (byte < 0x80 && std::ispunct(byte)) {
      continue;  // Python's string.punctuation, deleted as neuraltalk2 does
    } else {
      word += (byte >= 'A' && byte <= 'Z') ? static_cast<char>(byte - 'A' + 'a') : c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

Vocabulary::Vocabulary() : Vocabulary(std::vector<std::string>{}) {}

bool Vocabulary::is_special(const std::string& word) {
  return std::find(std::begin(kSpecialTokens), std::end(kSpecialTokens), word) != std::end(kSpecialTokens);
}

Vocabulary::Vocabulary(const std::vector<std::string>& words) {
  words_.assign(std::begin(kSpecialTokens), std::end(kSpecialTokens));
  words_.insert(words_.end(), words.begin(), words.end());
  for (size_t id = 0; id < words_.size(); ++id) {
    const std::string& word = words_[id];
    if (word.empty())
      throw std::invalid_argument("A vocabulary word is empty (id " + std::to_string(id) + ")");
    // Captions are words joined by spaces: such a word would come back as two.
    if (word.find_first_of(" \t\n\r\f\v") != std::string::npos) {
      throw std::invalid_argument(
          "The vocabulary word '" + word + "' (id " + std::to_string(id) + ") holds whitespace");
    }
    if (!ids_.emplace(word, static_cast<int64_t>(id)).second) {
      throw std::invalid_argument("The vocabulary word '" + word + "' appears twice (or is a special token)");
    }
  }
}

int64_t Vocabulary::id(const std::string& word) const {
  const auto it = ids_.find(word);
  return it == ids_.end() ? kUnk : it->second;
}

const std::string& Vocabulary::word(int64_t id) const {
  if (id < 0 || id >= size()) {
    throw std::invalid_argument(
        "Token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(size()));
  }
  return words_[static_cast<size_t>(id)];
}

std::vector<int64_t> Vocabulary::encode(const std::vector<std::string>& words) const {
  std::vector<int64_t> ids;
  ids.reserve(words.size() + 2);
  ids.push_back(kStart);
  for (const auto& word : words) ids.push_back(id(word));
  ids.push_back(kEnd);
  return ids;
}

std::string join_words(const std::vector<std::string>& words) {
  return join(words, " ");
}

std::vector<std::string> Vocabulary::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> words;
  for (const int64_t id : ids) {
    if (id == kEnd) break;
    if (id == kStart || id == kPad) continue;
    words.push_back(word(id));
  }
  return words;
}

Json Vocabulary::to_json() const {
  Json::Array words(words_.begin(), words_.end());
  return Json::object({{"format", "saccade-vocabulary"}, {"version", 1}, {"words", std::move(words)}});
}

Vocabulary Vocabulary::from_json(const Json& document, const std::string& source) {
  try {
    if (document.at("format").as_string() != "saccade-vocabulary" || document.at("version").as_int64() != 1) {
      throw std::invalid_argument("not a version 1 saccade vocabulary");
    }
    const Json::Array& items = document.at("words").as_array();
    if (items.size() < kSpecialCount) throw std::invalid_argument("fewer words than the 4 special tokens");
    std::vector<std::string> words;
    for (size_t id = 0; id < items.size(); ++id) {
      const std::string& word = items[id].as_string();
      if (id < kSpecialCount) {
        if (word != kSpecialTokens[id]) {
          throw std::invalid_argument(
              "id " + std::to_string(id) + " must be " + kSpecialTokens[id] + ", got '" + word + "'");
        }
      } else {
        words.push_back(word);
      }
    }
    return Vocabulary(words);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(source + ": " + error.what());
  }
}

void Vocabulary::save(const std::filesystem::path& path) const {
  write_json_file(path, to_json(), 1);
}

Vocabulary Vocabulary::load(const std::filesystem::path& path) {
  return from_json(read_json_file(path), path.string());
}

Vocabulary build_vocabulary(const std::vector<ImageRecord>& images, int min_word_count) {
  std::unordered_map<std::string, int64_t> counts;
  int64_t occurrences = 0;
  for (const auto& image : images) {
    for (const auto& caption : image.captions) {
      for (const auto& word : caption.words) ++counts[word];
      occurrences += static_cast<int64_t>(caption.words.size());
    }
  }
  std::vector<std::pair<std::string, int64_t>> kept;
  int64_t covered = 0;
  for (const auto& [word, count] : counts) {
    if (count >= min_word_count) {
      kept.emplace_back(word, count);
      covered += count;
    }
  }
  // Descending count, ties alphabetical.
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> words;
  words.reserve(kept.size());
  for (const auto& entry : kept) words.push_back(entry.first);
  char coverage[16];
  std::snprintf(
      coverage, sizeof(coverage), "%.2f%%",
      occurrences > 0 ? 100.0 * static_cast<double>(covered) / static_cast<double>(occurrences) : 100.0);
  log::info() << "Vocabulary: " << words.size() << " of " << counts.size()
              << " distinct words seen >= " << min_word_count << " times, covering " << coverage << " of "
              << occurrences << " training word occurrences";
  return Vocabulary(words);
}

bool fit_caption_length(std::vector<std::string>& words, const VocabularyOptions& options) {
  const auto limit = static_cast<size_t>(options.max_caption_length);
  if (options.max_caption_length == 0 || words.size() <= limit) return true;
  if (options.on_long_caption == LongCaptionPolicy::drop) return false;
  words.resize(limit);
  return true;
}

}  // namespace saccade
