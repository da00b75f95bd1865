// Fuzz targets over text: config composition, the overrides grammar, JSON, the PTB tokenizer.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/overrides.h"
#include "eval/ptb/tokenizer.h"
#include "fuzz_targets.h"
#include "io/json.h"

namespace saccade::fuzz {
namespace {

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace

void fuzz_config(std::string_view input) {
  std::string yaml;
  ComposeRequest request;
  for (const auto& line : lines_of(input)) {
    if (!line.empty() && line[0] == '%') {
      request.overrides.push_back(line.substr(1));
    } else {
      yaml += line + "\n";
    }
  }
  request.config_dir = std::filesystem::path(scratch_file(yaml, "config.yaml")).parent_path();
  expect_clean_refusal([&] {
    const Config config = compose(request).config;
    config.to_yaml(false);
    config.to_yaml(true);
    config.resolved();
  });
}

void fuzz_overrides(std::string_view input) {
  const std::vector<std::string> overrides = lines_of(input);
  for (const auto& line : overrides) expect_clean_refusal([&] { config_detail::parse_override(line); });
  expect_clean_refusal([&] { expand_sweeps(overrides); });
}

void fuzz_json(std::string_view input) {
  expect_clean_refusal([&] {
    const Json value = parse_json(input);
    for (const int indent : {0, 2}) {
      const std::string written = dump_json(value, indent);
      require(parse_json(written) == value, "a document does not read back as written: " + written);
    }
  });
}

// The input's lines as a list of captions, and each alone: a caption that a line starting with a
// lower-case letter follows is tokenized as it is alone.
void fuzz_ptb_tokenizer(std::string_view input) {
  std::vector<std::string> captions;
  for (size_t start = 0;;) {
    const size_t end = std::min(input.find('\n', start), input.size());
    captions.emplace_back(input.substr(start, end - start));
    if (end == input.size()) break;
    start = end + 1;
  }
  const std::vector<std::vector<std::string>> listed = ptb_tokenize_captions(captions);
  require(listed.size() == captions.size(), "not one token list per caption");
  for (size_t i = 0; i < captions.size(); ++i) {
    const std::vector<std::string> alone = ptb_tokenize(captions[i]);
    // A token holds no ' ' (PTBTokenizer's separator) and no line break (METEOR's protocol is by
    // line); other whitespace can stay inside one ("http://a\vb"), until BLEU's words split it.
    for (const auto& token : alone) {
      require(!token.empty(), "an empty token");
      require(
          token.find_first_of(" \n\r") == std::string::npos, "a token with a space or line break: " + token);
    }
    for (const auto& word : split_at_python_whitespace(alone)) {
      require(word.find_first_of(" \t\n\r\f\v") == std::string::npos, "a word with a space: " + word);
    }
    for (const auto& token : listed[i]) {
      require(
          token.find_first_of(" \n") == std::string::npos, "a listed token with a space or '\\n': " + token);
    }
    // What follows a caption changes its tokens only through rules that look past its end, which
    // a lower-case next line does not meet, or through an SGML tag with a quoted attribute, which
    // may run over line breaks: from a '<' in this caption or one before to a '>' in this one or
    // one after.
    const bool lower_case_next =
        i + 1 < captions.size() && std::islower(static_cast<unsigned char>(captions[i + 1][0]));
    const auto holds = [&](size_t j, char c) { return captions[j].find(c) != std::string::npos; };
    bool tag_opened = false, tag_closed = false;
    for (size_t j = 0; j < captions.size(); ++j) {
      tag_opened |= j <= i && holds(j, '<');
      tag_closed |= j >= i && holds(j, '>');
    }
    require(
        !lower_case_next || (tag_opened && tag_closed) || listed[i] == alone,
        "caption " + std::to_string(i) + " lexed apart from its list");
  }
}

}  // namespace saccade::fuzz
