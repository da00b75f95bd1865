// What decoding a split rests on: annotations_of on a batch whose captions share images (the
// encoder runs once per image, and, BatchNorm on its running statistics, the annotations and
// their gradients equal those of encoding every caption's copy of the image), and the
// log-probability of whole captions under teacher forcing against a hand-set chain, and hard
// attention's read in it against a soft decoder with the same weights.
#include "decode/decode_split.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>

#include "data/image_source.h"
#include "tiny_decoder.h"

namespace saccade {
namespace {

TEST(AnnotationsOf, SharedImagesGiveEachCaptionItsImagesAnnotationsAndGradient) {
  torch::manual_seed(3);
  EncoderOptions encoder;
  encoder.channels = {4, 8};
  DecoderOptions decoder;
  decoder.lstm.embed_dim = decoder.lstm.hidden_dim = decoder.lstm.attention_dim = 8;
  Captioner model = build_captioner(encoder, decoder, 5);
  // BatchNorm on its running statistics: in training its statistics are over the distinct images.
  model->eval();
  // Read only for cached features, which this batch does not use.
  const CaptionDataset unread(
      {}, std::make_shared<FileImageSource>(std::vector<std::filesystem::path>{}, ImageOptions{}),
      Vocabulary(std::vector<std::string>{"a"}), {}, SampleMode::per_image);

  Batch shared;
  shared.images = torch::randn({2, 3, 8, 8});                     // [U, 3, H, W]
  shared.image_rows = torch::tensor({1, 0, 1, 1}, torch::kLong);  // [B]
  shared.indices = {0, 1, 2, 3};
  Batch copies = shared;
  copies.images = shared.images.index_select(0, shared.image_rows);  // [B, 3, H, W]
  copies.image_rows = torch::arange(4, torch::kLong);

  const auto weights = torch::randn({4, 16, 8});  // [B, L, D]: a loss that tells captions apart
  const auto gradient_of = [&](const Batch& batch) {
    model->zero_grad();
    const auto annotations = annotations_of(*model, batch, unread, nullptr);
    (annotations * weights).sum().backward();
    return std::make_pair(annotations.detach(), model->encoder->parameters().front().grad().clone());
  };
  const auto [from_shared, shared_gradient] = gradient_of(shared);
  const auto [from_copies, copies_gradient] = gradient_of(copies);
  ASSERT_EQ(from_shared.sizes(), (std::vector<int64_t>{4, 16, 8}));
  EXPECT_TRUE(torch::allclose(from_shared, from_copies, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(shared_gradient, copies_gradient, 1e-4, 1e-5));
  EXPECT_GT(shared_gradient.abs().max().item<float>(), 0.0f);

  // In training, BatchNorm's statistics come from the distinct images: the encoder ran on the U
  // rows, not on the B copies.
  model->train();
  torch::Tensor running_mean;
  for (const auto& buffer : model->encoder->named_buffers()) {
    if (buffer.key().find("running_mean") != std::string::npos) {
      running_mean = buffer.value();
      break;
    }
  }
  ASSERT_TRUE(running_mean.defined());
  const auto start = running_mean.clone();
  const auto moved_by = [&](const std::function<void()>& run) {
    torch::NoGradGuard no_grad;
    running_mean.copy_(start);
    run();
    return running_mean - start;
  };
  const auto by_shared = moved_by([&] { annotations_of(*model, shared, unread, nullptr); });
  EXPECT_TRUE(torch::allclose(by_shared, moved_by([&] { model->encode(shared.images); }), 1e-6, 1e-7));
  EXPECT_FALSE(torch::allclose(by_shared, moved_by([&] { model->encode(copies.images); }), 1e-3, 1e-4));
}

TEST(CaptionLogProbs, SumTheWordsAndTheEnd) {
  // The garden-path chain: log p(a c <end>) = log .6 + log .35 + log 1; log p(b) = log .4 + log .9;
  // log p(b c) = log .4 + log .1 + log 1; a word outside the vocabulary reads <unk>, which the
  // chain never emits (logit -1e4 against log-probabilities near 0).
  auto decoder = testing::markov::garden_path_decoder();
  decoder->eval();
  const Vocabulary vocabulary({"a", "b", "c", "d"});
  const auto annotations = torch::rand({2, 5, 3});
  torch::NoGradGuard no_grad;
  const auto log_probs = caption_log_probs(
      *decoder, annotations, {0, 1, 1, 0}, {{"a", "c"}, {"b"}, {"b", "c"}, {"zebra"}}, vocabulary,
      HardRead::argmax);
  ASSERT_EQ(log_probs.size(), 4u);
  EXPECT_NEAR(log_probs[0], std::log(0.6) + std::log(0.35), 1e-4);
  EXPECT_NEAR(log_probs[1], std::log(0.4) + std::log(0.9), 1e-4);
  EXPECT_NEAR(log_probs[2], std::log(0.4) + std::log(0.1), 1e-4);
  EXPECT_LT(log_probs[3], -1000.0);
  EXPECT_TRUE(caption_log_probs(*decoder, annotations, {}, {}, vocabulary, HardRead::argmax).empty());
}

TEST(CaptionLogProbs, HardAttentionReadsAsAsked) {
  // decode.hard_read=expectation reads sum_i alpha_i a_i: a soft decoder with the same weights
  // scores the same; the default reads alpha's most likely cell, another context.
  const Vocabulary vocabulary({"a", "b", "c", "d", "e"});
  DecoderOptions options = testing::tiny_decoder_options();
  options.vocab_size = vocabulary.size();
  AttentionLSTMDecoder soft(options);
  options.attention_mode = AttentionMode::hard;
  AttentionLSTMDecoder hard(options);
  torch::NoGradGuard no_grad;
  const auto source = soft->named_parameters();
  for (auto& item : hard->named_parameters()) item.value().copy_(source[item.key()]);
  soft->eval();
  hard->eval();
  const auto annotations = torch::randn({2, 5, 6});
  const std::vector<int64_t> rows{0, 1, 1};
  const std::vector<std::vector<std::string>> captions{{"a", "c", "e"}, {"b"}, {"d", "d", "a", "b"}};
  const auto score = [&](AttentionLSTMDecoder& decoder, HardRead read) {
    return caption_log_probs(*decoder, annotations, rows, captions, vocabulary, read);
  };
  const auto reference = score(soft, HardRead::argmax);
  const auto expectation = score(hard, HardRead::expectation);
  const auto argmax = score(hard, HardRead::argmax);
  ASSERT_EQ(expectation.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(expectation[i], reference[i], 1e-6) << i;
    EXPECT_GT(std::abs(argmax[i] - reference[i]), 1e-4) << i;
  }
}

}  // namespace
}  // namespace saccade
