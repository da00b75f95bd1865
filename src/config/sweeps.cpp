// Multirun sweeps: Hydra's basic sweeper (cartesian product, first key slowest) and the single-run check.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/text.h"
#include "config/config.h"
#include "config/overrides.h"

namespace saccade {

namespace config_detail {

void reject_sweep(const Override& parsed) {
  if (parsed.sweep == SweepKind::kSimple) {
    throw ConfigError(
        "Ambiguous value for argument '" + parsed.input +
        "': 1. To use it as a list, use key=[value1,value2];"
        " 2. To use it as string, quote the value: key=\\'value1,value2\\';"
        " 3. To sweep over it, add --multirun to your command line");
  }
  if (parsed.sweep != SweepKind::kNone) {
    throw ConfigError("Sweep parameters '" + parsed.input + "' requires --multirun");
  }
}

}  // namespace config_detail

namespace {

// Code points of UTF-8 text (an invalid byte stands for itself), as Python's fnmatch sees a name.
std::u32string code_points(const std::string& text) {
  std::u32string out;
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8_sequence_length(bytes + i, text.size() - i);
    if (length <= 1) {
      out += bytes[i++];
      continue;
    }
    char32_t code = bytes[i] & (0x7F >> length);
    for (size_t k = 1; k < length; ++k) code = (code << 6) | (bytes[i + k] & 0x3F);
    out += code;
    i += length;
  }
  return out;
}

// One [...] of a pattern, as fnmatch.translate turns it into a regular-expression set: a leading
// '!' negates; a '-' between two characters is a range, unless it comes first or last; a range
// running backwards is dropped with its two ends; '^' and '\' are plain characters.
struct CharacterSet {
  bool negated = false;
  std::u32string single;
  std::vector<std::pair<char32_t, char32_t>> ranges;

  // The set written `body` (the text between the brackets).
  static CharacterSet parse(const std::u32string& body) {
    CharacterSet set;
    // Python's chunks: the body cut at each '-' that can make a range; consecutive chunks are
    // joined by a range from the end of one to the start of the next.
    std::vector<std::u32string> chunks;
    size_t start = 0;
    for (size_t k = !body.empty() && body[0] == U'!' ? 2 : 1;;) {
      k = body.find(U'-', k);
      if (k == std::u32string::npos) break;
      chunks.push_back(body.substr(start, k - start));
      start = k + 1;
      k += 3;
    }
    std::u32string last = body.substr(start);
    if (!last.empty() || chunks.empty()) {
      chunks.push_back(last);
    } else {
      chunks.back() += U'-';
    }
    for (size_t k = chunks.size() - 1; k > 0; --k) {
      if (chunks[k - 1].back() > chunks[k].front()) {
        chunks[k - 1] = chunks[k - 1].substr(0, chunks[k - 1].size() - 1) + chunks[k].substr(1);
        chunks.erase(chunks.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    std::u32string flat;  // the chunks as one text, ranges marked by where chunks meet
    std::vector<size_t> range_ends;
    for (const auto& chunk : chunks) {
      if (!flat.empty()) range_ends.push_back(flat.size());
      flat += chunk;
    }
    size_t i = 0;
    if (!flat.empty() && flat[0] == U'!') {
      set.negated = true;
      i = 1;
    }
    for (; i < flat.size(); ++i) {
      const bool starts_range = std::find(range_ends.begin(), range_ends.end(), i + 1) != range_ends.end();
      if (starts_range) {
        set.ranges.emplace_back(flat[i], flat[i + 1]);
        ++i;
      } else {
        set.single += flat[i];
      }
    }
    return set;
  }

  bool contains(char32_t c) const {
    bool in = single.find(c) != std::u32string::npos ||
              std::any_of(
                  ranges.begin(), ranges.end(), [c](const auto& r) { return r.first <= c && c <= r.second; });
    return in != negated;
  }
};

// Python's fnmatch.fnmatchcase (fnmatch on POSIX): * ? [abc] [!abc] [a-z] over code points, a
// '[' without its ']' a plain character, no escape character.
bool python_fnmatch(const std::u32string& name, const std::u32string& pattern) {
  // The pattern's pieces: '*', '?', a set, or one plain character.
  struct Piece {
    enum Kind { kStar, kAny, kSet, kCharacter } kind;
    char32_t character = 0;
    CharacterSet set;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i < pattern.size();) {
    const char32_t c = pattern[i++];
    if (c == U'*') {
      if (pieces.empty() || pieces.back().kind != Piece::kStar) pieces.push_back({Piece::kStar, 0, {}});
    } else if (c == U'?') {
      pieces.push_back({Piece::kAny, 0, {}});
    } else if (c == U'[') {
      size_t j = i;
      if (j < pattern.size() && pattern[j] == U'!') ++j;
      if (j < pattern.size() && pattern[j] == U']') ++j;
      j = pattern.find(U']', j);
      if (j == std::u32string::npos) {
        pieces.push_back({Piece::kCharacter, U'[', {}});
      } else {
        pieces.push_back({Piece::kSet, 0, CharacterSet::parse(pattern.substr(i, j - i))});
        i = j + 1;
      }
    } else {
      pieces.push_back({Piece::kCharacter, c, {}});
    }
  }
  // Matching with one backtrack point, the last '*': it takes one more character each retry.
  size_t p = 0, n = 0, star = std::string::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pieces.size() && pieces[p].kind == Piece::kStar) {
      star = p++;
      star_n = n;
    } else if (
        p < pieces.size() && (pieces[p].kind == Piece::kAny ||
                              (pieces[p].kind == Piece::kCharacter && pieces[p].character == name[n]) ||
                              (pieces[p].kind == Piece::kSet && pieces[p].set.contains(name[n])))) {
      ++p;
      ++n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++star_n;
    } else {
      return false;
    }
  }
  while (p < pieces.size() && pieces[p].kind == Piece::kStar) ++p;
  return p == pieces.size();
}

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  const std::u32string text = code_points(name);
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& pattern) {
    return python_fnmatch(text, code_points(pattern));
  });
}

}  // namespace

std::vector<std::vector<std::string>> expand_sweeps(
    const std::vector<std::string>& overrides, const std::filesystem::path& config_dir) {
  // One list of alternatives per key; a repeated key replaces the earlier one in its place.
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  for (const auto& text : overrides) {
    const config_detail::Override parsed = config_detail::parse_override(text);
    const std::string key = parsed.key_element();
    std::vector<std::string> alternatives;
    if (parsed.sweep == config_detail::SweepKind::kNone) {
      alternatives.push_back(text);
    } else if (parsed.sweep == config_detail::SweepKind::kGlob) {
      for (const auto& option : group_options(config_dir, parsed.key)) {
        if (matches_any(option, parsed.glob.include) && !matches_any(option, parsed.glob.exclude))
          alternatives.push_back(key + "=" + config_detail::escape_special_characters(option));
      }
      if (alternatives.empty())
        throw ConfigError(
            "The sweep '" + text + "' matches no option of the config group '" + parsed.key + "'");
    } else {
      for (const auto& value : parsed.sweep_values) alternatives.push_back(key + "=" + value);
      if (alternatives.empty()) throw ConfigError("The sweep '" + text + "' has no values: no job would run");
    }
    auto axis = axes.begin();
    while (axis != axes.end() && axis->first != key) ++axis;
    if (axis == axes.end()) {
      axes.emplace_back(key, alternatives);
    } else {
      axis->second = alternatives;
    }
  }
  std::vector<std::vector<std::string>> jobs = {{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<std::string>> extended;
    for (const auto& job : jobs) {
      for (const auto& alternative : axis.second) {
        extended.push_back(job);
        extended.back().push_back(alternative);
      }
    }
    jobs = std::move(extended);
  }
  return jobs;
}

void reject_sweeps(const std::vector<std::string>& overrides) {
  for (const auto& text : overrides) config_detail::reject_sweep(config_detail::parse_override(text));
}

}  // namespace saccade
