// Sampled captions from Markov-chain decoders whose distributions are worked out by hand: word and
// caption frequencies match the tempered and truncated distributions, forbidden words never come,
// a seed repeats a decode, and the reported log-probabilities are the model's own.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "decode/search.h"
#include "test_util.h"
#include "tiny_decoder.h"

namespace saccade {
namespace {

using namespace testing::markov;

constexpr int64_t kRows = 20000;  // captions drawn per distribution

// start -> a .5 | b .3 | c .2, then <end>.
AttentionLSTMDecoder three_words_decoder() {
  return markov_decoder(
      {{{kStart, kA}, 0.5},
       {{kStart, kB}, 0.3},
       {{kStart, kC}, 0.2},
       {{kA, kEnd}, 1.0},
       {{kB, kEnd}, 1.0},
       {{kC, kEnd}, 1.0}});
}

SearchOptions sampling(double temperature = 1.0, int64_t top_k = 0, double top_p = 1.0) {
  SearchOptions options;
  options.method = SearchMethod::sample;
  options.max_length = 4;
  options.temperature = temperature;
  options.top_k = top_k;
  options.top_p = top_p;
  return options;
}

std::vector<DecodedCaption> draw(
    AttentionLSTMDecoder& decoder, const SearchOptions& options, uint64_t seed = 0) {
  torch::manual_seed(seed);
  const auto annotations = torch::randn({kRows, 5, 3});  // the chain ignores them
  return make_caption_search(options)->search(*decoder, annotations);
}

// Each distinct caption ("a", "b c", "" ...) and its share of the draws.
std::map<std::string, double> shares(const std::vector<DecodedCaption>& captions) {
  const std::map<int64_t, std::string> names = {{kA, "a"}, {kB, "b"}, {kC, "c"}, {kD, "d"}, {kUnk, "<unk>"}};
  std::map<std::string, double> counts;
  for (const auto& caption : captions) {
    std::string text;
    for (const int64_t token : caption.tokens) text += (text.empty() ? "" : " ") + names.at(token);
    counts[text] += 1.0 / static_cast<double>(captions.size());
  }
  return counts;
}

// Every expected share within 4.5 standard deviations of a binomial count, and nothing else drawn.
void expect_shares(
    const std::map<std::string, double>& actual, const std::map<std::string, double>& expected) {
  for (const auto& [caption, share] : actual)
    EXPECT_TRUE(expected.count(caption) > 0 && expected.at(caption) > 0) << "drew '" << caption << "'";
  for (const auto& [caption, p] : expected) {
    const double drawn = actual.count(caption) ? actual.at(caption) : 0.0;
    EXPECT_NEAR(drawn, p, 4.5 * std::sqrt(p * (1 - p) / kRows) + 1e-12) << "'" << caption << "'";
  }
}

TEST(SampleSearch, WordsFollowTheModelsDistribution) {
  auto decoder = three_words_decoder();
  expect_shares(shares(draw(decoder, sampling())), {{"a", 0.5}, {"b", 0.3}, {"c", 0.2}});
}

// T = 0.5 squares the probabilities: .25, .09, .04 over .38.
TEST(SampleSearch, TemperatureReshapesTheDistribution) {
  auto decoder = three_words_decoder();
  expect_shares(
      shares(draw(decoder, sampling(0.5))), {{"a", 0.25 / 0.38}, {"b", 0.09 / 0.38}, {"c", 0.04 / 0.38}});
  // T = 2 takes square roots, and top_k = 2 keeps a and b: sqrt(.5), sqrt(.3) renormalized.
  const double a = std::sqrt(0.5), b = std::sqrt(0.3);
  expect_shares(shares(draw(decoder, sampling(2.0, 2))), {{"a", a / (a + b)}, {"b", b / (a + b)}});
}

TEST(SampleSearch, TopKAndTopPKeepTheMostProbableWords) {
  auto decoder = three_words_decoder();
  expect_shares(shares(draw(decoder, sampling(1.0, 2))), {{"a", 0.625}, {"b", 0.375}});
  expect_shares(shares(draw(decoder, sampling(1.0, 1))), {{"a", 1.0}});
  // top_p .75: a (.5) and b (.5 before it < .75) stay, c (.8 before it) goes.
  expect_shares(shares(draw(decoder, sampling(1.0, 0, 0.75))), {{"a", 0.625}, {"b", 0.375}});
  // top_p .5: the words before b already hold .5.
  expect_shares(shares(draw(decoder, sampling(1.0, 0, 0.5))), {{"a", 1.0}});
  // Nothing is cut off by a top_k above the vocabulary.
  expect_shares(shares(draw(decoder, sampling(1.0, 100))), {{"a", 0.5}, {"b", 0.3}, {"c", 0.2}});
}

// The garden path's captions: a .6 x .4, a c .6 x .35, a d .6 x .25, b .4 x .9, b c .4 x .1.
TEST(SampleSearch, WholeCaptionsFollowTheChainAndCarryTheirLogProbability) {
  auto decoder = garden_path_decoder();
  const std::map<std::string, double> chain = {
      {"a", 0.24}, {"a c", 0.21}, {"a d", 0.15}, {"b", 0.36}, {"b c", 0.04}};
  // Under a temperature the draws change, the reported log-probability stays the model's.
  for (const double temperature : {1.0, 0.7}) {
    const auto captions = draw(decoder, sampling(temperature));
    if (temperature == 1.0) expect_shares(shares(captions), chain);
    for (const auto& caption : captions) {
      ASSERT_TRUE(caption.finished);
      const std::string text = shares({caption}).begin()->first;
      EXPECT_NEAR(caption.log_prob, std::log(chain.at(text)), 1e-4) << text;
      EXPECT_EQ(caption.alphas.size(0), static_cast<int64_t>(caption.tokens.size()));
    }
  }
}

TEST(SampleSearch, ForbiddenWordsNeverComeAndTheMinimumLengthHolds) {
  auto decoder = markov_decoder(
      {{{kStart, kUnk}, 0.3},
       {{kStart, kEnd}, 0.2},
       {{kStart, kA}, 0.5},
       {{kUnk, kEnd}, 1.0},
       {{kA, kEnd}, 1.0}});
  expect_shares(shares(draw(decoder, sampling())), {{"<unk>", 0.3}, {"", 0.2}, {"a", 0.5}});
  SearchOptions options = sampling();
  options.block_unk = true;
  options.min_length = 1;
  expect_shares(shares(draw(decoder, options)), {{"a", 1.0}});
}

// <pad> and <start> are never words, however probable the model makes them.
TEST(SampleSearch, PadAndStartAreNeverEmittedByAnySearch) {
  auto decoder = markov_decoder(
      {{{kStart, Vocabulary::kPad}, 0.6}, {{kStart, kStart}, 0.3}, {{kStart, kA}, 0.1}, {{kA, kEnd}, 1.0}});
  SearchOptions greedy;
  greedy.max_length = 4;
  SearchOptions beam = greedy;
  beam.beam_size = 3;
  for (const auto& options : {greedy, beam, sampling()}) {
    for (const auto& caption : draw(decoder, options)) {
      ASSERT_EQ(caption.tokens, std::vector<int64_t>{kA}) << to_string(options.method);
      EXPECT_NEAR(caption.log_prob, std::log(0.1), 1e-4);
    }
  }
}

TEST(SampleSearch, ASeedRepeatsTheDraws) {
  auto decoder = three_words_decoder();
  const auto tokens = [](const std::vector<DecodedCaption>& captions) {
    std::vector<std::vector<int64_t>> all;
    for (const auto& caption : captions) all.push_back(caption.tokens);
    return all;
  };
  EXPECT_EQ(tokens(draw(decoder, sampling(), 7)), tokens(draw(decoder, sampling(), 7)));
  EXPECT_NE(tokens(draw(decoder, sampling(), 7)), tokens(draw(decoder, sampling(), 8)));
}

TEST(SampleSearch, IsChosenByTheMethodAndDescribesItsSettings) {
  EXPECT_EQ(make_caption_search(sampling())->describe(), "sample");
  EXPECT_EQ(make_caption_search(sampling(0.5, 3, 0.9))->describe(), "sample T=0.5 top_k=3 top_p=0.9");
  SearchOptions greedy;
  greedy.method = SearchMethod::greedy;
  greedy.beam_size = 5;
  EXPECT_EQ(make_caption_search(greedy)->describe(), "greedy");
  greedy.min_length = 2;  // honoured by a beam of one
  EXPECT_EQ(make_caption_search(greedy)->describe(), "beam 1");
  for (const auto& [options, message] : std::vector<std::pair<SearchOptions, std::string>>{
           {sampling(0.0),
            "decode.temperature must be a finite number >= 0.0001 (sampling near 0 is greedy search)"},
           {sampling(1.0, -1), "decode.top_k must be >= 0 (0 = every word), got -1"},
           {sampling(1.0, 0, 0.0), "decode.top_p must be in (0, 1]"},
           {sampling(1.0, 0, 1.5), "decode.top_p must be in (0, 1]"}}) {
    EXPECT_EQ(testing::message_of<std::invalid_argument>([&] { validate(options); }), message);
  }
}

}  // namespace
}  // namespace saccade
