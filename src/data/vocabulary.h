// Vocabulary: tokenization, the word <-> id map with its special tokens, and caption encoding.
//
//   Vocabulary vocab = build_vocabulary(train_images, /*min_word_count=*/5);
//   std::vector<int64_t> ids = vocab.encode({"a", "red", "circle"});  // <start> a red circle <end>
//   vocab.decode(ids);                                                 // {"a", "red", "circle"}
//   vocab.save(run_dir / "checkpoints/best/vocab.json");
//
// Ids: <pad> = 0, <start> = 1, <end> = 2, <unk> = 3, then the kept words by descending training
// count (ties alphabetical), so the same captions always give the same ids.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "data/caption_corpus.h"
#include "io/json.h"

namespace saccade {

// What happens to a training caption longer than max_caption_length words.
enum class LongCaptionPolicy {
  truncate,  // keep its first max_caption_length words
  drop,      // leave the (image, caption) pair out of training
};
std::string to_string(LongCaptionPolicy policy);
// "truncate" | "drop"; throws std::invalid_argument naming the value otherwise.
LongCaptionPolicy parse_long_caption_policy(const std::string& name);

struct VocabularyOptions {
  // A word is kept when it occurs at least this many times in the training captions; rarer
  // words read as <unk>. 1 keeps every word. (sgrvinod's `min_word_freq = 5` and neuraltalk2's
  // `count_thr = 5` keep words seen more than 5 times, i.e. min_word_count = 6.)
  int min_word_count = 5;
  // Words per training caption, not counting <start> and <end>; 0 = no limit. Validation and
  // test references are never shortened.
  int max_caption_length = 50;
  // What happens to a training caption longer than that.
  LongCaptionPolicy on_long_caption = LongCaptionPolicy::truncate;
};

// Reads dataset.min_word_count, dataset.max_caption_length, dataset.on_long_caption.
VocabularyOptions vocabulary_options_from(const Config& config);
// Throws std::invalid_argument: min_word_count must be >= 1, max_caption_length >= 0.
void validate(const VocabularyOptions& options);

// Splits a raw caption into words the way neuraltalk2's prepro.py made the Karpathy `tokens`:
// ASCII letters lower-cased, ASCII punctuation deleted (so "man's" -> "mans",
// "t-shirt" -> "tshirt"), split on whitespace. Non-ASCII bytes stay inside their word.
std::vector<std::string> tokenize(std::string_view raw);

// Words as one caption line: joined by single spaces.
std::string join_words(const std::vector<std::string>& words);

class Vocabulary {
 public:
  static constexpr int64_t kPad = 0;
  static constexpr int64_t kStart = 1;
  static constexpr int64_t kEnd = 2;
  static constexpr int64_t kUnk = 3;
  static constexpr int64_t kSpecialCount = 4;

  // Whether `word` is spelled like a special token ("<pad>", "<start>", "<end>", "<unk>").
  static bool is_special(const std::string& word);

  // Only the four special tokens.
  Vocabulary();
  // The special tokens followed by `words` (ids 4, 5, ...). Throws std::invalid_argument for an
  // empty word, a repeated word, or a word spelled like a special token.
  explicit Vocabulary(const std::vector<std::string>& words);

  // Number of ids, special tokens included (V).
  int64_t size() const { return static_cast<int64_t>(words_.size()); }
  // The id of a word; kUnk when the word is not in the vocabulary.
  int64_t id(const std::string& word) const;
  bool contains(const std::string& word) const { return ids_.count(word) > 0; }
  // The word (or special token text, "<unk>") of an id; throws std::invalid_argument out of range.
  const std::string& word(int64_t id) const;
  // Every word in id order, special tokens first.
  const std::vector<std::string>& words() const { return words_; }

  // <start> id(w1) ... id(wn) <end>.
  std::vector<int64_t> encode(const std::vector<std::string>& words) const;
  // The words of `ids`, stopping at the first <end>, skipping <start> and <pad> (<unk> is kept
  // as "<unk>"). decode(encode(w)) == w for words in the vocabulary.
  std::vector<std::string> decode(const std::vector<int64_t>& ids) const;

  // {"format": "saccade-vocabulary", "version": 1, "words": [every word in id order]}.
  Json to_json() const;
  // Throws std::invalid_argument naming `source` when the document is not such a vocabulary.
  static Vocabulary from_json(const Json& document, const std::string& source);
  // Atomic write / read of to_json(); load throws std::runtime_error for a missing file.
  void save(const std::filesystem::path& path) const;
  static Vocabulary load(const std::filesystem::path& path);

  bool operator==(const Vocabulary& other) const { return words_ == other.words_; }

 private:
  std::vector<std::string> words_;
  std::unordered_map<std::string, int64_t> ids_;
};

// Counts the words of every caption of `images` (untruncated) and keeps those seen at least
// `min_word_count` times. Logs the vocabulary size and the share of word occurrences that the
// kept words cover.
Vocabulary build_vocabulary(const std::vector<ImageRecord>& images, int min_word_count);

// Applies max_caption_length/on_long_caption to a caption's words: returns false when the
// caption must be dropped, otherwise shortens `words` in place if needed.
bool fit_caption_length(std::vector<std::string>& words, const VocabularyOptions& options);

}  // namespace saccade
