// Trigram blocking and bad endings in every search, on Markov-chain decoders whose answers are
// worked out by hand, and the invariant that no search output repeats a trigram.
#include "decode/word_history.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <tuple>
#include <vector>

#include "tiny_decoder.h"

namespace saccade {
namespace {

using namespace testing::markov;

// start -> a; a -> b .9 | <end> .1; b -> a .9 | <end> .1: "a b a b ..." never ends by itself.
AttentionLSTMDecoder ping_pong_decoder() {
  return markov_decoder(
      {{{kStart, kA}, 1.0}, {{kA, kB}, 0.9}, {{kA, kEnd}, 0.1}, {{kB, kA}, 0.9}, {{kB, kEnd}, 0.1}});
}

// start -> a .6 | b .4;  a -> <end> .9 | c .1;  b, c -> <end>.
AttentionLSTMDecoder ending_decoder() {
  return markov_decoder(
      {{{kStart, kA}, 0.6},
       {{kStart, kB}, 0.4},
       {{kA, kEnd}, 0.9},
       {{kA, kC}, 0.1},
       {{kB, kEnd}, 1.0},
       {{kC, kEnd}, 1.0}});
}

SearchOptions search(SearchMethod method, int64_t beam_size = 1) {
  SearchOptions options;
  options.method = method;
  options.beam_size = beam_size;
  options.max_length = 8;
  return options;
}

std::vector<DecodedCaption> run(
    AttentionLSTMDecoder& decoder, const SearchOptions& options, int64_t rows = 3) {
  torch::manual_seed(0);
  return make_caption_search(options)->search(*decoder, torch::randn({rows, 5, 3}));
}

bool repeats_a_trigram(const std::vector<int64_t>& words) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  for (size_t i = 0; i + 2 < words.size(); ++i) {
    if (!seen.insert({words[i], words[i + 1], words[i + 2]}).second) return true;
  }
  return false;
}

TEST(WordHistory, TrigramBlockingEndsWhereTheChainWouldRepeat) {
  auto decoder = ping_pong_decoder();
  const auto loose = run(decoder, search(SearchMethod::greedy));
  EXPECT_EQ(loose[0].tokens, (std::vector<int64_t>{kA, kB, kA, kB, kA, kB, kA, kB}));
  EXPECT_TRUE(repeats_a_trigram(loose[0].tokens));
  // After "a b a b" the next a would repeat "a b a": <end> is the one word left.
  SearchOptions blocking = search(SearchMethod::greedy);
  blocking.block_trigrams = true;
  const auto blocked = run(decoder, blocking);
  EXPECT_EQ(blocked[0].tokens, (std::vector<int64_t>{kA, kB, kA, kB}));
  EXPECT_TRUE(blocked[0].finished);
  EXPECT_NEAR(blocked[0].log_prob, std::log(0.9 * 0.9 * 0.9 * 0.1), 1e-4);  // the model's own
}

TEST(WordHistory, NoSearchRepeatsATrigramWhenBlocking) {
  auto decoder = ping_pong_decoder();
  for (const auto& options :
       {search(SearchMethod::greedy), search(SearchMethod::beam, 3), search(SearchMethod::sample)}) {
    SearchOptions blocking = options;
    blocking.block_trigrams = true;
    for (const auto& caption : run(decoder, blocking, 500)) {
      EXPECT_FALSE(repeats_a_trigram(caption.tokens)) << to_string(options.method);
      EXPECT_LE(caption.tokens.size(), 4u);
    }
  }
}

// Greedy: a (.6), then <end> is forbidden after a: c, <end>, "a c" (p = .06). Beam 2 weighs
// "a c" (.06) against "b" (.4) and answers "b". Sampling: "a c" .6, "b" .4.
TEST(WordHistory, BadEndingsAreNeverTheLastWord) {
  auto decoder = ending_decoder();
  EXPECT_EQ(run(decoder, search(SearchMethod::greedy))[0].tokens, (std::vector<int64_t>{kA}));
  auto options = search(SearchMethod::greedy);
  options.bad_ending_ids = {kA};
  const auto greedy = run(decoder, options);
  EXPECT_EQ(greedy[0].tokens, (std::vector<int64_t>{kA, kC}));
  EXPECT_NEAR(greedy[0].log_prob, std::log(0.6 * 0.1), 1e-4);
  options = search(SearchMethod::beam, 2);
  options.bad_ending_ids = {kA};
  EXPECT_EQ(run(decoder, options)[0].tokens, (std::vector<int64_t>{kB}));
  options = search(SearchMethod::sample);
  options.bad_ending_ids = {kA};
  double a_c = 0;
  const auto samples = run(decoder, options, 4000);
  for (const auto& caption : samples) {
    ASSERT_TRUE(
        caption.tokens == std::vector<int64_t>({kA, kC}) || caption.tokens == std::vector<int64_t>({kB}));
    a_c += caption.tokens.size() == 2 ? 1.0 / samples.size() : 0.0;
  }
  EXPECT_NEAR(a_c, 0.6, 4.5 * std::sqrt(0.6 * 0.4 / samples.size()));
}

TEST(WordHistory, RowsFollowTheHypothesesTheyExtend) {
  SearchOptions options;
  options.block_trigrams = true;
  options.bad_ending_ids = {kC};
  WordHistory history(2, options);
  EXPECT_TRUE(history.active());
  history.advance({0, 0}, {kA, kB});  // both rows from row 0
  history.advance({1, 0}, {kC, kA});  // row 0 = [b, c], row 1 = [a, a]
  history.advance({1, 0}, {kA, kB});  // row 0 = [a, a, a], row 1 = [b, c, b]
  history.advance({1, 0}, {kC, kA});  // row 0 = [b, c, b, c], row 1 = [a, a, a, a]
  auto log_probs = torch::zeros({2, kVocab});
  history.forbid(log_probs);
  const float inf = std::numeric_limits<float>::infinity();
  auto expected = torch::zeros({2, kVocab});
  expected[0][kB] = -inf;    // "b c b" again
  expected[0][kEnd] = -inf;  // c is a bad ending
  expected[1][kA] = -inf;    // "a a a" again
  EXPECT_TRUE(torch::equal(log_probs, expected)) << log_probs;
  EXPECT_FALSE(WordHistory(2, SearchOptions{}).active());
}

// Trigram blocking follows each beam hypothesis through its parents, image by image: a batch of
// different images gives what each image alone gives, and no caption repeats a trigram (on this
// random decoder, without blocking, some do).
TEST(WordHistory, BeamHypothesesCarryTheirOwnWordsInABatch) {
  torch::manual_seed(0);
  auto decoder = testing::tiny_decoder();
  {
    torch::NoGradGuard no_grad;
    decoder->out->bias[Vocabulary::kEnd] -= 20.0;  // long captions over five words: repeats come
  }
  const auto annotations = torch::randn({8, 4, 6});  // B=8 images, L=4, D=6
  auto options = search(SearchMethod::beam, 3);
  options.max_length = 15;
  int repeating = 0;
  for (const auto& caption : make_caption_search(options)->search(*decoder, annotations))
    repeating += repeats_a_trigram(caption.tokens) ? 1 : 0;
  EXPECT_GT(repeating, 0);
  options.block_trigrams = true;
  const auto batched = make_caption_search(options)->search(*decoder, annotations);
  for (int64_t b = 0; b < annotations.size(0); ++b) {
    EXPECT_FALSE(repeats_a_trigram(batched[b].tokens)) << "image " << b;
    const auto alone = make_caption_search(options)->search(*decoder, annotations.slice(0, b, b + 1));
    EXPECT_EQ(batched[b].tokens, alone[0].tokens) << "image " << b;
  }
}

// A row with every word forbidden may still stop, at the model's log-probability of <end>
// (kStuckEndFloor where the model's is lower or -inf); the others are left alone. On the CPU's
// float path and on LibTorch's ops (a double tensor).
TEST(WordHistory, AStuckRowCanAlwaysEnd) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    auto log_probs = torch::full({4, kVocab}, -inf, dtype);
    log_probs[1][kA] = -0.5f;
    const auto untouched = log_probs[1].clone();
    keep_an_exit(log_probs, torch::tensor({-1.25f, -2.0f, -inf, -1e35f}), SearchOptions{});
    EXPECT_EQ(log_probs[0][kEnd].item<float>(), -1.25f) << dtype;
    EXPECT_EQ(log_probs[2][kEnd].item<float>(), kStuckEndFloor) << dtype;
    EXPECT_EQ(log_probs[3][kEnd].item<float>(), kStuckEndFloor) << dtype;
    EXPECT_EQ(torch::isinf(log_probs[0]).sum().item<int64_t>(), kVocab - 1) << dtype;
    EXPECT_TRUE(torch::equal(log_probs[1], untouched)) << dtype;
  }
}

}  // namespace
}  // namespace saccade
