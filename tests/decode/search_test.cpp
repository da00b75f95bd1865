// Greedy search: agreement with step-by-step argmax, <end> handling, captions that never end.
#include "decode/search.h"
#include "tiny_decoder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace saccade {
namespace {

class GreedySearchTest : public ::testing::Test {
 protected:
  GreedySearchTest() {
    torch::manual_seed(0);
    decoder_ = testing::tiny_decoder();
    annotations_ = torch::randn({3, 4, 6});  // B=3 images, L=4 locations, D=6
    search_.max_length = 6;
  }

  // Makes word `id` win every step by a wide margin.
  void favour(int64_t id) {
    torch::NoGradGuard no_grad;
    decoder_->out->bias.zero_();
    decoder_->out->bias[id] = 100.0;
  }

  AttentionLSTMDecoder decoder_{nullptr};
  torch::Tensor annotations_;
  SearchOptions search_;
};

TEST_F(GreedySearchTest, MatchesArgmaxStepByStep) {
  const auto captions = greedy_search(*decoder_, annotations_, search_);
  ASSERT_EQ(captions.size(), 3u);
  torch::NoGradGuard no_grad;
  decoder_->eval();
  for (int64_t b = 0; b < 3; ++b) {
    DecoderState state = decoder_->init_state(annotations_.slice(0, b, b + 1));
    auto previous = torch::full({1}, search_.start_id, torch::kLong);
    std::vector<int64_t> expected;
    double log_prob = 0.0;
    bool finished = false;
    for (int64_t t = 0; t <= search_.max_length; ++t) {
      DecoderStep step = decoder_->step(state, previous);
      const auto scores = torch::log_softmax(step.logits, 1)[0];
      const int64_t word = scores.argmax().item<int64_t>();
      if (word != search_.end_id && t == search_.max_length) break;
      log_prob += scores[word].item<double>();
      if (word == search_.end_id) {
        finished = true;
        break;
      }
      expected.push_back(word);
      state = step.state;
      previous = torch::full({1}, word, torch::kLong);
    }
    EXPECT_EQ(captions[b].tokens, expected) << "image " << b;
    EXPECT_NEAR(captions[b].log_prob, log_prob, 1e-4) << "image " << b;
    EXPECT_EQ(captions[b].finished, finished);
    EXPECT_EQ(captions[b].alphas.size(0), static_cast<int64_t>(expected.size()));
  }
}

TEST_F(GreedySearchTest, CaptionThatNeverEndsIsKeptAtMaxLength) {
  favour(5);
  const auto captions = greedy_search(*decoder_, annotations_, search_);
  for (const auto& caption : captions) {
    EXPECT_EQ(caption.tokens, std::vector<int64_t>(6, 5));
    EXPECT_FALSE(caption.finished);
    // Six words each with probability ~1: log-probability ~0, and no seventh word counted.
    EXPECT_NEAR(caption.log_prob, 0.0, 1e-3);
    ASSERT_EQ(caption.alphas.sizes(), (std::vector<int64_t>{6, 4}));
    EXPECT_TRUE(torch::allclose(caption.alphas.sum(1), torch::ones({6}), 1e-5, 1e-5));
  }
}

TEST_F(GreedySearchTest, ImmediateEndGivesEmptyFinishedCaption) {
  favour(search_.end_id);
  const auto captions = greedy_search(*decoder_, annotations_, search_);
  for (const auto& caption : captions) {
    EXPECT_TRUE(caption.tokens.empty());
    EXPECT_TRUE(caption.finished);
    EXPECT_NEAR(caption.log_prob, 0.0, 1e-3);  // <end>'s own log-probability, ~0
    EXPECT_EQ(caption.alphas.size(0), 0);
  }
}

TEST_F(GreedySearchTest, LeavesTrainingModeAsFound) {
  decoder_->train();
  greedy_search(*decoder_, annotations_, search_);
  EXPECT_TRUE(decoder_->is_training());
}

// A vocabulary of the four special words, <unk> blocked and a minimum length: every word is
// forbidden at the first step. Each search ends every caption there, empty and finished, with the
// model's own log-probability of <end>; where the model gives <end> no probability at all (its
// logit -inf), at kStuckEndFloor, sampling at a low temperature too (the lowest float divided by
// the temperature had become -inf and left no word to draw).
TEST(StuckRows, EndAtOnceWithTheModelsEndLogProbability) {
  for (const bool impossible_end : {false, true}) {
    torch::manual_seed(3);
    auto options = testing::tiny_decoder_options();
    options.vocab_size = 4;  // <pad>, <start>, <end>, <unk>
    AttentionLSTMDecoder decoder(options);
    decoder->eval();
    const auto annotations = torch::randn({5, 4, 6});  // B=5 images, L=4, D=6
    torch::Tensor end_log_probs;                       // [B]: the model's log p(<end>) at step 0
    {
      torch::NoGradGuard no_grad;
      if (impossible_end) decoder->out->bias[Vocabulary::kEnd] = -std::numeric_limits<float>::infinity();
      DecoderState state = decoder->init_state(annotations);
      const auto first = decoder->step(state, torch::full({5}, Vocabulary::kStart, torch::kLong));
      end_log_probs = torch::log_softmax(first.logits, 1).select(1, Vocabulary::kEnd);
    }
    SearchOptions search;
    search.block_unk = true;
    search.min_length = 2;
    search.max_length = 4;
    search.temperature = 0.5;
    for (const auto& [method, beam] : std::vector<std::pair<SearchMethod, int64_t>>{
             {SearchMethod::greedy, 1}, {SearchMethod::beam, 3}, {SearchMethod::sample, 1}}) {
      search.method = method;
      search.beam_size = beam;
      const auto captions = make_caption_search(search)->search(*decoder, annotations);
      ASSERT_EQ(captions.size(), 5u);
      for (int64_t b = 0; b < 5; ++b) {
        const std::string where =
            to_string(method) + " image " + std::to_string(b) + (impossible_end ? ", <end> impossible" : "");
        EXPECT_TRUE(captions[b].tokens.empty()) << where;
        EXPECT_TRUE(captions[b].finished) << where;
        if (impossible_end) {
          EXPECT_EQ(captions[b].log_prob, kStuckEndFloor) << where;
        } else {
          EXPECT_NEAR(captions[b].log_prob, end_log_probs[b].item<double>(), 1e-5) << where;
        }
        EXPECT_EQ(captions[b].alphas.size(0), 0) << where;
      }
    }
  }
}

TEST(SearchOptions, RejectsNoWordsAndAnEndThatIsTheStart) {
  SearchOptions options;
  options.max_length = 0;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options.max_length = 5;
  options.end_id = options.start_id;
  EXPECT_THROW(validate(options), std::invalid_argument);
}

}  // namespace
}  // namespace saccade
