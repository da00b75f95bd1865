// Beam search: equality with greedy at beam 1, hand-worked Markov-chain decoders where the beam
// beats greedy, min length, <unk> blocking, length normalization, captions that never end,
// batching, option validation.
#include "decode/search.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "decode/running_members.h"
#include "models/attention_lstm_decoder.h"
#include "models/transformer_decoder.h"
#include "test_util.h"
#include "tiny_decoder.h"

namespace saccade {
namespace {

using namespace testing::markov;

SearchOptions beam(int64_t size, int64_t max_length = 5) {
  SearchOptions options;
  options.beam_size = size;
  options.max_length = max_length;
  return options;
}

torch::Tensor two_images() {
  return torch::randn({2, 5, 3});  // B=2, L=5, D=3
}

class BeamSearchTest : public ::testing::Test {
 protected:
  BeamSearchTest() { torch::manual_seed(0); }
};

// Greedy: a (.6), then from a the best is <end> (.4): "a", p = .24.
// Beam 2: step 0 keeps a (.6), b (.4). Step 1 extensions: a<end> .24, a c .21, a d .15,
// b<end> .36, b c .04; the best two, b<end> and a<end>, both finish, so the image is done and
// the answer is "b" with p = .36 > .24.
TEST_F(BeamSearchTest, BeamTwoFindsTheSequenceGreedyMisses) {
  auto decoder = garden_path_decoder();
  const auto annotations = two_images();
  const auto greedy = beam_search(*decoder, annotations, beam(1));
  const auto beamed = beam_search(*decoder, annotations, beam(2));
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_EQ(greedy[b].tokens, std::vector<int64_t>{kA});
    EXPECT_NEAR(greedy[b].log_prob, std::log(0.24), 1e-5);
    EXPECT_EQ(beamed[b].tokens, std::vector<int64_t>{kB});
    EXPECT_NEAR(beamed[b].log_prob, std::log(0.36), 1e-5);
    EXPECT_TRUE(beamed[b].finished);
    ASSERT_EQ(beamed[b].alphas.sizes(), (std::vector<int64_t>{1, 5}));
  }
}

// min_length 2, beam 2: step 0 a (.6), b (.4); step 1 (<end> blocked) a c .21, a d .15 (b c .04
// loses); step 2 both end with p 1: "a c" (.21) beats "a d" (.15).
TEST_F(BeamSearchTest, MinLengthDelaysTheEnd) {
  auto decoder = garden_path_decoder();
  auto options = beam(2);
  options.min_length = 2;
  const auto captions = beam_search(*decoder, two_images(), options);
  EXPECT_EQ(captions[0].tokens, (std::vector<int64_t>{kA, kC}));
  // The log-probability is the model's, not renormalized over the allowed words.
  EXPECT_NEAR(captions[0].log_prob, std::log(0.21), 1e-5);
  EXPECT_EQ(captions[0].alphas.size(0), 2);
}

// start -> <unk> .5 | a .3 | b .2, then <end>. Beam 2 takes "<unk>" (.5); with <unk> blocked the
// choice is between a (.3) and b (.2): "a", log-probability log .3.
TEST_F(BeamSearchTest, BlockUnkNeverEmitsUnk) {
  auto decoder = markov_decoder(
      {{{kStart, kUnk}, 0.5},
       {{kStart, kA}, 0.3},
       {{kStart, kB}, 0.2},
       {{kUnk, kEnd}, 1.0},
       {{kA, kEnd}, 1.0},
       {{kB, kEnd}, 1.0}});
  auto options = beam(2);
  EXPECT_EQ(beam_search(*decoder, two_images(), options)[0].tokens, std::vector<int64_t>{kUnk});
  options.block_unk = true;
  const auto blocked = beam_search(*decoder, two_images(), options)[0];
  EXPECT_EQ(blocked.tokens, std::vector<int64_t>{kA});
  EXPECT_NEAR(blocked.log_prob, std::log(0.3), 1e-5);
}

// start -> a .9 | b .1;  a -> <end> .55 | c .45;  b, c -> <end> 1. Beam 2 finishes "a" (p .495,
// 2 tokens with <end>) and "a c" (p .405, 3 tokens). Raw sums: ln .495 = -0.703 > ln .405 =
// -0.904, so "a". Penalty 1 (mean per token): -0.703 / 2 = -0.352 < -0.904 / 3 = -0.301, so "a c".
TEST_F(BeamSearchTest, LengthPenaltyChangesTheWinner) {
  auto decoder = markov_decoder(
      {{{kStart, kA}, 0.9},
       {{kStart, kB}, 0.1},
       {{kA, kEnd}, 0.55},
       {{kA, kC}, 0.45},
       {{kB, kEnd}, 1.0},
       {{kC, kEnd}, 1.0}});
  auto options = beam(2);
  EXPECT_EQ(beam_search(*decoder, two_images(), options)[0].tokens, std::vector<int64_t>{kA});
  options.length_penalty = 1.0;
  const auto normalized = beam_search(*decoder, two_images(), options)[0];
  EXPECT_EQ(normalized.tokens, (std::vector<int64_t>{kA, kC}));
  EXPECT_NEAR(normalized.log_prob, std::log(0.405), 1e-5);  // the raw log-probability is reported
}

// Diverse beams, 2 groups of 1, penalty 10, on the garden path. Step 0: group 1 takes a (.6);
// group 2, a penalized, takes b (.4). Step 1: group 1 ends "a" (.24); group 2's b<end> (.36) is
// penalized for group 1's <end>, so it takes "b c" (.04), which ends at step 2. Best first: "a",
// then "b c"; plain beam 2 answers "b" (.36), as above.
TEST_F(BeamSearchTest, DiverseGroupsTakeWordsTheEarlierGroupsDidNot) {
  auto decoder = garden_path_decoder();
  auto options = beam(2);
  options.beam_groups = 2;
  options.diversity_penalty = 10.0;
  options.n_best = 2;
  const auto captions = beam_search(*decoder, two_images(), options);
  for (const auto& caption : captions) {
    EXPECT_EQ(caption.tokens, std::vector<int64_t>{kA});
    ASSERT_EQ(caption.n_best.size(), 2u);
    EXPECT_EQ(caption.n_best[1].tokens, (std::vector<int64_t>{kB, kC}));
    EXPECT_NEAR(caption.n_best[0].log_prob, std::log(0.24), 1e-5);  // plain log-probabilities
    EXPECT_NEAR(caption.n_best[1].log_prob, std::log(0.04), 1e-4);
    EXPECT_EQ(caption.n_best[1].alphas.size(0), 2);
  }
  EXPECT_EQ(make_caption_search(options)->describe(), "beam 2 (2 groups, diversity 10)");
  options.beam_groups = 3;
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] { make_caption_search(options); }),
      "decode.beam_groups must be >= 1 and divide decode.beam_size (2), got 3");
  // Greedy search under a minimum length runs as a beam of one, in one group.
  options.method = SearchMethod::greedy;
  options.n_best = 1;
  options.min_length = 1;
  EXPECT_EQ(make_caption_search(options)->describe(), "beam 1");
  EXPECT_EQ(make_caption_search(options)->search(*decoder, two_images())[0].tokens.size(), 1u);
  options.beam_groups = 0;
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] { make_caption_search(options); }),
      "decode.beam_groups must be >= 1 and divide decode.beam_size (2), got 0");
}

// Four groups of one on a random decoder: each group's first word (or an immediate <end>) is one
// no earlier group took, so an image's four captions all start differently.
TEST_F(BeamSearchTest, DiverseGroupsOfOneStartOnDifferentWords) {
  auto decoder = testing::tiny_decoder();
  auto options = beam(4, 3);
  options.beam_groups = 4;
  options.diversity_penalty = 100.0;
  options.n_best = 4;
  for (const auto& caption : beam_search(*decoder, torch::randn({2, 5, 6}), options)) {
    ASSERT_EQ(caption.n_best.size(), 4u);
    std::set<int64_t> first_words;
    for (const auto& alternative : caption.n_best)
      first_words.insert(alternative.tokens.empty() ? kEnd : alternative.tokens.front());
    EXPECT_EQ(first_words.size(), 4u);
  }
}

// Random small decoders, as in the greedy tests.
// Beam 3 on the garden path: step 1 finishes "b" (.36) and "a" (.24) and keeps "a c" (.21), which
// finishes at step 2. The n-best list is the three, best first; its first is the beam's answer.
TEST_F(BeamSearchTest, NBestListsTheFinishedCaptionsBestFirst) {
  auto decoder = garden_path_decoder();
  auto options = beam(3);
  const auto alone = beam_search(*decoder, two_images(), options)[0];
  EXPECT_TRUE(alone.n_best.empty());
  options.n_best = 3;
  const auto listed = beam_search(*decoder, two_images(), options)[0];
  EXPECT_EQ(listed.tokens, alone.tokens);
  ASSERT_EQ(listed.n_best.size(), 3u);
  const std::vector<std::vector<int64_t>> expected = {{kB}, {kA}, {kA, kC}};
  const std::vector<double> probabilities = {0.36, 0.24, 0.21};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(listed.n_best[i].tokens, expected[i]) << i;
    EXPECT_NEAR(listed.n_best[i].log_prob, std::log(probabilities[i]), 1e-4) << i;
    EXPECT_TRUE(listed.n_best[i].finished);
    EXPECT_EQ(listed.n_best[i].alphas.size(0), static_cast<int64_t>(expected[i].size()));
  }
  EXPECT_EQ(listed.n_best[0].tokens, listed.tokens);
  options.n_best = 4;
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] { make_caption_search(options); }),
      "decode.n_best must be in [1, 3] (decode.beam_size), got 4");
  options.method = SearchMethod::sample;
  options.n_best = 2;
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] { make_caption_search(options); }),
      "decode.n_best must be in [1, 1] (one caption per image with decode.method=sample), got 2");
}

// best_extensions against topk of the sums: random log-probabilities (B=3 images, K=5, V=37)
// with dead slots (-inf), an image with every slot dead and forbidden words, one image and several;
// ties and NaN, which it hands to topk, give topk's own answer.
TEST_F(BeamSearchTest, BestExtensionsAreTopkOfTheSums) {
  const int64_t K = 5;
  // 37 words: two blocks of 16 and a tail; 200: blocks the scan passes over whole.
  for (const auto& shape :
       std::initializer_list<std::pair<int64_t, int64_t>>{{1, 37}, {3, 37}, {1, 200}, {3, 200}}) {
    const int64_t images = shape.first, V = shape.second;
    auto scores = torch::randn({images, K});
    scores.select(1, 3).fill_(-std::numeric_limits<float>::infinity());  // a dead slot
    auto log_probs = torch::log_softmax(torch::randn({images * K, V}), 1);
    log_probs.select(1, 0).fill_(-std::numeric_limits<float>::infinity());  // a forbidden word
    const auto check = [&](const char* what) {
      const auto [expected_scores, expected_index] =
          (scores.reshape({images * K, 1}) + log_probs).reshape({images, K * V}).topk(K, 1);
      const auto [actual_scores, actual_index] = best_extensions(scores, log_probs, beam(K));
      const auto same =
          (actual_scores == expected_scores) | (actual_scores.isnan() & expected_scores.isnan());
      EXPECT_TRUE(same.all().item<bool>()) << what << ", " << images << " images, " << V << " words";
      EXPECT_TRUE(torch::equal(actual_index, expected_index))
          << what << ", " << images << " images, " << V << " words";
    };
    check("distinct sums");
    if (images > 1) {
      // An image with every slot dead (done): -inf at each slot's first word, the others topk's.
      const auto saved = scores[1].clone();
      scores[1].fill_(-std::numeric_limits<float>::infinity());
      const auto [expected_scores, expected_index] =
          (scores.reshape({images * K, 1}) + log_probs).reshape({images, K * V}).topk(K, 1);
      const auto [actual_scores, actual_index] = best_extensions(scores, log_probs, beam(K));
      EXPECT_TRUE(torch::isneginf(actual_scores[1]).all().item<bool>()) << V << " words";
      EXPECT_TRUE(torch::equal(actual_index[1], torch::arange(K) * V)) << V << " words";
      for (const int64_t live : {0, 2}) {
        EXPECT_TRUE(torch::equal(actual_scores[live], expected_scores[live]))
            << live << ", " << V << " words";
        EXPECT_TRUE(torch::equal(actual_index[live], expected_index[live])) << live << ", " << V << " words";
      }
      scores[1].copy_(saved);
    }
    {
      // The K-th best sum again, elsewhere in its slot's row: a tie at the K-th.
      const int64_t kth = std::get<1>(best_extensions(scores, log_probs, beam(K)))[0][K - 1].item<int64_t>();
      auto row = log_probs[kth / V];
      const int64_t other = kth % V >= 16 ? kth % V - 16 : kth % V + 16;  // in another block of 16
      const float tied = row[kth % V].item<float>(), saved = row[other].item<float>();
      row[other] = tied;
      check("a tie at the K-th");
      row[other] = saved;
    }
    log_probs[0][7] = log_probs[0][5].item<float>();  // a tie among the best of slot 0
    log_probs[0][9] = log_probs[0][5].item<float>();
    scores[0][1] = scores[0][0].item<float>();
    log_probs.narrow(0, 0, 2).copy_(log_probs[0].unsqueeze(0).expand({2, V}).clone());  // slot 1 = slot 0
    check("ties");
    log_probs[K - 1][3] = std::numeric_limits<float>::quiet_NaN();
    check("NaN");
  }
}

class RandomDecoderTest : public ::testing::Test {
 protected:
  RandomDecoderTest() {
    torch::manual_seed(0);
    decoder_ = testing::tiny_decoder();
    annotations_ = torch::randn({8, 4, 6});  // B=8 images, L=4 locations, D=6
  }

  AttentionLSTMDecoder decoder_{nullptr};
  torch::Tensor annotations_;
};

// Raising <end>'s bias makes some captions finish and others run to max_length: both paths.
TEST_F(RandomDecoderTest, BeamOneEqualsGreedyExactly) {
  int finished = 0, unfinished = 0;
  for (double end_bias : {0.0, 1.0, 2.0}) {
    {
      torch::NoGradGuard no_grad;
      decoder_->out->bias[kEnd] = end_bias;
    }
    for (int64_t max_length : {1, 3, 12}) {
      SearchOptions greedy_options;
      greedy_options.max_length = max_length;
      const auto greedy = greedy_search(*decoder_, annotations_, greedy_options);
      const auto beamed = beam_search(*decoder_, annotations_, beam(1, max_length));
      ASSERT_EQ(beamed.size(), greedy.size());
      for (size_t b = 0; b < greedy.size(); ++b) {
        SCOPED_TRACE("image " + std::to_string(b) + ", max_length " + std::to_string(max_length));
        EXPECT_EQ(beamed[b].tokens, greedy[b].tokens);
        EXPECT_EQ(beamed[b].log_prob, greedy[b].log_prob);
        EXPECT_EQ(beamed[b].finished, greedy[b].finished);
        EXPECT_TRUE(torch::equal(beamed[b].alphas, greedy[b].alphas));
        (greedy[b].finished ? finished : unfinished) += 1;
      }
    }
  }
  EXPECT_GT(finished, 0);
  EXPECT_GT(unfinished, 0);
}

TEST_F(RandomDecoderTest, BatchedEqualsOneImageAtATime) {
  const auto options = beam(3, 8);
  const auto batched = beam_search(*decoder_, annotations_, options);
  for (int64_t b = 0; b < annotations_.size(0); ++b) {
    const auto alone = beam_search(*decoder_, annotations_.slice(0, b, b + 1), options);
    EXPECT_EQ(batched[b].tokens, alone[0].tokens) << "image " << b;
    EXPECT_NEAR(batched[b].log_prob, alone[0].log_prob, 1e-5) << "image " << b;
    EXPECT_TRUE(torch::allclose(batched[b].alphas, alone[0].alphas, 1e-5, 1e-6)) << "image " << b;
  }
}

// A decoder that counts the rows of every step of the decoder it wraps.
class RowCountingDecoder : public ForwardingDecoderImpl {
 public:
  using ForwardingDecoderImpl::ForwardingDecoderImpl;
  DecoderStep step(
      const DecoderState& state,
      const torch::Tensor& prev_tokens,
      HardRead read,
      const torch::Tensor& locations) override {
    rows.push_back(prev_tokens.size(0));
    return ForwardingDecoderImpl::step(state, prev_tokens, read, locations);
  }
  std::vector<int64_t> rows;  // per step
};

// The rule, enumerated: members leave at the step they finish, captions (one row each) and images
// of 3 beams; the rows that go on are the kept members' rows, in order.
TEST(RunningMembers, FinishedMembersLeaveAtOnce) {
  RunningMembers captions(8, 1);
  std::vector<char> finished(8, 0);
  auto next = captions.after_step(finished);  // none finished: every row goes on, nothing selected
  EXPECT_TRUE(next.kept.empty());
  EXPECT_EQ(next.rows, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  const auto x = torch::arange(8, torch::kFloat);
  EXPECT_TRUE(torch::equal(captions.in_batch_rows(x), x));
  finished[1] = finished[4] = finished[6] = finished[7] = 1;
  next = captions.after_step(finished);
  EXPECT_EQ(next.kept, (std::vector<int64_t>{0, 2, 3, 5}));
  EXPECT_EQ(next.rows, next.kept);
  EXPECT_EQ(captions.positions(), (std::vector<int64_t>{0, 2, 3, 5}));
  EXPECT_TRUE(torch::equal(
      captions.in_batch_rows(torch::tensor({10.0f, 12.0f, 13.0f, 15.0f}), -1.0),
      torch::tensor({10.0f, -1.0f, 12.0f, 13.0f, -1.0f, 15.0f, -1.0f, -1.0f})));
  finished[3] = 1;  // one more, at the third of the four positions left
  EXPECT_EQ(captions.after_step(finished).kept, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(captions.positions(), (std::vector<int64_t>{0, 2, 5}));

  RunningMembers images(8, 3);
  std::vector<char> done(8, 0);
  done[5] = 1;
  next = images.after_step(done);
  EXPECT_EQ(next.kept, (std::vector<int64_t>{0, 1, 2, 3, 4, 6, 7}));
  EXPECT_EQ(next.rows, (std::vector<int64_t>{0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10,
                                             11, 12, 13, 14, 18, 19, 20, 21, 22, 23}));
  done[0] = 1;
  next = images.after_step(done);
  EXPECT_EQ(next.kept, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(
      next.rows, (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}));
}

// Captions that end at different steps leave the batch (greedy search: rows, at the step after
// their <end>; beam search: whole images, K rows each) and every image still gets the caption it
// gets decoded alone: the LSTM with additive, dot and local attention, and the Transformer.
TEST(FinishedRows, LeaveTheSearchAndEveryImageGetsItsOwnCaption) {
  struct Case {
    std::string name;
    DecoderOptions options;
  };
  std::vector<Case> cases;
  for (const std::string kind : {"additive", "dot", "local"}) {
    auto options = testing::tiny_decoder_options();
    options.lstm.attention_kind = kind;
    options.grid = {3, 3};
    options.lstm.attention_window = 1;
    cases.push_back({"lstm " + kind, options});
  }
  auto transformer_decoder = testing::tiny_decoder_options();  // V=9, D=6, no dropout
  transformer_decoder.kind = DecoderKind::transformer;
  transformer_decoder.transformer.model_dim = 8;
  transformer_decoder.transformer.ffn_dim = 12;
  cases.push_back({"transformer", transformer_decoder});
  int64_t runs_with_rows_leaving = 0;
  for (const auto& [name, options] : cases) {
    torch::manual_seed(0);
    const auto inner = build_decoder(options).ptr();
    auto& end_bias = options.kind == DecoderKind::lstm
                         ? std::dynamic_pointer_cast<AttentionLSTMDecoderImpl>(inner)->out->bias
                         : std::dynamic_pointer_cast<TransformerDecoderImpl>(inner)->out_bias;
    RowCountingDecoder decoder(inner);
    const auto annotations = 3 * torch::randn({12, 9, 6});  // B=12 images, L=9 on a 3 x 3 grid, D=6
    for (const double bias : {0.0, 0.25, 0.5, 0.75}) {
      {
        torch::NoGradGuard no_grad;
        end_bias[kEnd] = bias;
      }
      for (const int64_t beam_size : {1, 3}) {
        SCOPED_TRACE(name + ", <end> bias " + std::to_string(bias) + ", beam " + std::to_string(beam_size));
        auto search_options = beam(beam_size, 10);
        search_options.block_trigrams = true;  // the rows' word histories leave with them
        search_options.bad_ending_ids = {kA};
        const auto search = make_caption_search(search_options);
        decoder.rows.clear();
        const auto batched = search->search(decoder, annotations);
        const std::vector<int64_t> rows = decoder.rows;
        ASSERT_FALSE(rows.empty());
        EXPECT_EQ(rows.front(), 12 * beam_size);
        for (size_t t = 1; t < rows.size(); ++t) {
          EXPECT_LE(rows[t], rows[t - 1]);
          EXPECT_EQ(rows[t] % beam_size, 0);
        }
        runs_with_rows_leaving += rows.back() < rows.front();
        if (beam_size == 1) {
          // A caption's row leaves at the step after its <end> (max_length 10: 11 steps at most).
          for (size_t t = 0; t < rows.size(); ++t) {
            int64_t running = 0;
            for (const auto& caption : batched)
              running +=
                  (caption.finished ? static_cast<int64_t>(caption.tokens.size()) + 1 : 11) > int64_t(t);
            EXPECT_EQ(rows[t], running) << "step " << t;
          }
        }
        for (int64_t b = 0; b < annotations.size(0); ++b) {
          const auto alone = search->search(decoder, annotations.slice(0, b, b + 1));
          EXPECT_EQ(batched[b].tokens, alone[0].tokens) << "image " << b;
          EXPECT_NEAR(batched[b].log_prob, alone[0].log_prob, 1e-5) << "image " << b;
          EXPECT_EQ(batched[b].finished, alone[0].finished) << "image " << b;
          EXPECT_TRUE(torch::allclose(batched[b].alphas, alone[0].alphas, 1e-5, 1e-6)) << "image " << b;
        }
      }
    }
  }
  EXPECT_GE(runs_with_rows_leaving, 16);  // of 32: 22 with this seed
}

// A vocabulary of the four special words, <unk> blocked and a minimum length: at the first step
// each image's one live slot can only end, and its other slots take -inf extensions. With one of
// its three captions finished and nothing left to extend, the image is done: the search stops
// after that step rather than carrying dead slots to max_length, and the caption is the ended one.
TEST(DeadSlots, AnImageWithNothingLeftToExtendIsDone) {
  torch::manual_seed(3);
  auto options = testing::tiny_decoder_options();
  options.vocab_size = 4;  // <pad>, <start>, <end>, <unk>
  RowCountingDecoder decoder(build_decoder(options).ptr());
  const auto annotations = torch::randn({2, 4, 6});  // B=2 images, L=4, D=6
  auto search = beam(3, 6);
  search.block_unk = true;
  search.min_length = 2;
  const auto captions = beam_search(decoder, annotations, search);
  EXPECT_EQ(decoder.rows, (std::vector<int64_t>{6}));
  ASSERT_EQ(captions.size(), 2u);
  for (const auto& caption : captions) {
    EXPECT_TRUE(caption.tokens.empty());
    EXPECT_TRUE(caption.finished);
    EXPECT_TRUE(std::isfinite(caption.log_prob));
  }
}

// Word 5 wins every step by ~100 and <end> is ~1e4 below everything: no hypothesis ever ends.
// Local attention with a monotonic centre carries each beam's previous alpha through the search:
// every caption of the n-best lists looks where a teacher-forced pass over its words looks.
TEST(LocalAttentionBeamSearch, EachCaptionsAlphasAreItsOwnTeacherForcedOnes) {
  torch::manual_seed(0);
  auto options = testing::tiny_decoder_options();
  options.lstm.attention_kind = "local";
  options.grid = {3, 3};
  options.lstm.attention_window = 1;
  options.lstm.attention_centre = LocalCentre::monotonic;
  AttentionLSTMDecoder decoder(options);
  decoder->eval();
  const auto annotations = 3 * torch::randn({4, 9, 6});
  auto search = beam(3, 6);
  search.n_best = 3;
  const auto captions = beam_search(*decoder, annotations, search);
  int64_t compared_words = 0;
  for (size_t b = 0; b < captions.size(); ++b) {
    for (const auto& caption : captions[b].n_best) {
      const auto& tokens = caption.tokens;
      if (tokens.empty()) continue;
      std::vector<int64_t> input = {kStart};
      input.insert(input.end(), tokens.begin(), tokens.end() - 1);
      const int64_t n = static_cast<int64_t>(input.size());
      const auto forced = decoder->forward(
          annotations.slice(0, b, b + 1), torch::tensor(input).unsqueeze(0), torch::tensor({n}));
      EXPECT_TRUE(torch::allclose(caption.alphas, forced.alphas[0], 1e-5, 1e-6)) << "image " << b;
      compared_words += n;
    }
  }
  EXPECT_GT(compared_words, 8);
}

TEST_F(RandomDecoderTest, NoEndReturnsTheBestUnfinishedAtMaxLength) {
  {
    torch::NoGradGuard no_grad;
    decoder_->out->bias.zero_();
    decoder_->out->bias[5] = 100.0;
    decoder_->out->bias[kEnd] = -1e4;
  }
  const auto captions = beam_search(*decoder_, annotations_, beam(3, 6));
  for (const auto& caption : captions) {
    EXPECT_EQ(caption.tokens, std::vector<int64_t>(6, 5));
    EXPECT_FALSE(caption.finished);
    EXPECT_NEAR(caption.log_prob, 0.0, 1e-3);  // six words of probability ~1, no seventh counted
    ASSERT_EQ(caption.alphas.sizes(), (std::vector<int64_t>{6, 4}));
    EXPECT_TRUE(torch::allclose(caption.alphas.sum(1), torch::ones({6}), 1e-5, 1e-5));
  }
}

// On a random decoder, finished and unfinished captions mixed: every n-best list holds beam_size
// distinct captions, the finished first in order of log-probability, led by the beam's answer.
TEST_F(RandomDecoderTest, NBestListsAreSortedAndLedByTheAnswer) {
  {
    torch::NoGradGuard no_grad;
    decoder_->out->bias[Vocabulary::kEnd] += 1.5;
  }
  auto options = beam(4, 6);
  const auto answers = beam_search(*decoder_, annotations_, options);
  options.n_best = 4;
  const auto listed = beam_search(*decoder_, annotations_, options);
  for (size_t b = 0; b < listed.size(); ++b) {
    const auto& n_best = listed[b].n_best;
    ASSERT_EQ(n_best.size(), 4u) << b;
    EXPECT_EQ(n_best[0].tokens, answers[b].tokens) << b;
    EXPECT_EQ(n_best[0].log_prob, answers[b].log_prob) << b;
    for (size_t i = 1; i < n_best.size(); ++i) {
      EXPECT_NE(n_best[i].tokens, n_best[i - 1].tokens) << b;
      if (n_best[i].finished) {
        EXPECT_TRUE(n_best[i - 1].finished) << b;  // the finished come first
        EXPECT_LE(n_best[i].log_prob, n_best[i - 1].log_prob + 1e-6) << b;
      }
    }
  }
}

TEST_F(RandomDecoderTest, LeavesTrainingModeAsFound) {
  decoder_->train();
  beam_search(*decoder_, annotations_, beam(2));
  EXPECT_TRUE(decoder_->is_training());
}

TEST_F(RandomDecoderTest, CaptionSearchPicksTheStrategy) {
  auto options = beam(1, 4);
  EXPECT_EQ(make_caption_search(options)->describe(), "greedy");
  options.beam_size = 3;
  const auto search = make_caption_search(options);
  EXPECT_EQ(search->describe(), "beam 3");
  const auto captions = search->search(*decoder_, annotations_);
  const auto direct = beam_search(*decoder_, annotations_, options);
  for (size_t b = 0; b < captions.size(); ++b) EXPECT_EQ(captions[b].tokens, direct[b].tokens);
}

TEST(SearchOptions, ReadsTheDecodeKeys) {
  const Config config(YAML::Load(
      "decode: {method: sample, beam_size: 6, beam_groups: 3, diversity_penalty: 2.5, max_length: 16, "
      "min_length: 2, length_penalty: 0.7, block_unk: "
      "true, hard_read: expectation, n_best: 2, block_trigrams: true, bad_endings: [the, of, zebra], "
      "temperature: 0.8, top_k: 4, top_p: 0.9}"));
  const Vocabulary vocabulary({"the", "of", "red"});
  const SearchOptions options = search_options_from(config, vocabulary);
  EXPECT_TRUE(options.block_trigrams);
  EXPECT_EQ(options.n_best, 2);
  // A word the vocabulary lacks can never be emitted, so it is left out.
  EXPECT_EQ(options.bad_ending_ids, (std::vector<int64_t>{vocabulary.id("the"), vocabulary.id("of")}));
  EXPECT_EQ(options.method, SearchMethod::sample);
  EXPECT_DOUBLE_EQ(options.temperature, 0.8);
  EXPECT_EQ(options.top_k, 4);
  EXPECT_DOUBLE_EQ(options.top_p, 0.9);
  EXPECT_EQ(options.beam_size, 6);
  EXPECT_EQ(options.beam_groups, 3);
  EXPECT_DOUBLE_EQ(options.diversity_penalty, 2.5);
  EXPECT_EQ(options.max_length, 16);
  EXPECT_EQ(options.min_length, 2);
  EXPECT_DOUBLE_EQ(options.length_penalty, 0.7);
  EXPECT_TRUE(options.block_unk);
  EXPECT_EQ(options.hard_read, HardRead::expectation);
  // The special tokens are the Vocabulary's, never set by hand.
  EXPECT_EQ(options.start_id, Vocabulary::kStart);
  EXPECT_EQ(options.end_id, Vocabulary::kEnd);
  EXPECT_EQ(options.unk_id, Vocabulary::kUnk);
  const Config bad(
      YAML::Load("decode: {method: beam, beam_size: 1, beam_groups: 1, diversity_penalty: 0, max_length: 16, "
                 "min_length: 0, length_penalty: 0, "
                 "block_unk: false, hard_read: sample, n_best: 1, block_trigrams: false, bad_endings: [], "
                 "temperature: 1, top_k: 0, top_p: 1}"));
  try {
    search_options_from(bad, vocabulary);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(
        std::string(error.what()),
        "decode.hard_read: Unknown hard-attention read 'sample'; expected argmax or expectation");
  }
}

TEST(SearchOptions, GreedyIsChosenOnlyWhenItGivesWhatIsAsked) {
  SearchOptions options;
  EXPECT_TRUE(greedy_suffices(options));
  EXPECT_EQ(make_caption_search(options)->describe(), "greedy");
  options.length_penalty = 1.0;  // one hypothesis: the penalty ranks nothing
  EXPECT_EQ(make_caption_search(options)->describe(), "greedy");
  for (const auto& change : std::vector<std::function<void(SearchOptions&)>>{
           [](SearchOptions& o) { o.beam_size = 2; }, [](SearchOptions& o) { o.min_length = 1; },
           [](SearchOptions& o) { o.block_unk = true; }}) {
    SearchOptions asked;
    change(asked);
    EXPECT_FALSE(greedy_suffices(asked));
    EXPECT_EQ(make_caption_search(asked)->describe(), "beam " + std::to_string(asked.beam_size));
    EXPECT_THROW(
        CaptionSearch(SearchMethod::greedy, asked)
            .search(*markov_decoder({{{kStart, kEnd}, 1.0}}), two_images()),
        std::invalid_argument);
  }
}

TEST(SearchOptions, RejectsBadValues) {
  auto expect_error = [](SearchOptions options, const std::string& prefix) {
    try {
      validate(options);
      ADD_FAILURE() << "no error for " << prefix;
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()).rfind(prefix, 0), 0u) << error.what();
    }
  };
  auto options = beam(0);
  expect_error(options, "decode.beam_size must be >= 1");
  options = beam(2, 0);
  expect_error(options, "decode.max_length must be >= 1");
  options = beam(2, 4);
  options.min_length = 5;
  expect_error(options, "decode.min_length must be in [0, decode.max_length]");
  options = beam(2);
  options.length_penalty = -1;
  expect_error(options, "decode.length_penalty must be");
  options = beam(2);
  options.unk_id = options.end_id;
  expect_error(options, "The <unk> id must differ");
}

}  // namespace
}  // namespace saccade
