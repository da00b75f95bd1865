// The Transformer's attention and the refiner: hand-worked scaled dot-product numbers, torch's own
// MultiheadAttention and TransformerEncoder(Layer) with the same weights, finite differences, and
// the refiner's options and errors.
#include "models/transformer.h"
#include "models/grid_refiner.h"
#include "models/transformer_decoder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "config/config.h"
#include "finite_difference.h"
#include "kernels/few_rows_linear.h"
#include "kernels/inference_precision.h"
#include "models/captioner.h"
#include "models/grid_position.h"
#include "test_util.h"

namespace saccade {
namespace {

// Copies every parameter of `from` into the parameter of `to` with the same name; every named
// parameter of `to` must be matched.
void copy_parameters_by_name(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  const auto source = from.named_parameters();
  for (auto& item : to.named_parameters()) {
    const torch::Tensor* found = source.find(item.key());
    ASSERT_NE(found, nullptr) << item.key();
    item.value().copy_(*found);
  }
}

// The identity projections: W_q = W_k = W_v = I, W_o given, zero biases.
void set_identity_projections(
    TransformerAttentionImpl& attention,
    const torch::Tensor& output_weight,
    const torch::Tensor& output_bias) {
  torch::NoGradGuard no_grad;
  const int64_t dim = output_weight.size(0);
  attention.in_proj_weight.copy_(torch::eye(dim).repeat({3, 1}));
  attention.in_proj_bias.zero_();
  attention.out_proj->weight.copy_(output_weight);
  attention.out_proj->bias.copy_(output_bias);
}

TEST(TransformerAttention, TwoHeadsOfOneChannelAgainstHandWorkedNumbers) {
  // D = 2, N = 2, K = 1 (scale 1). Head 1 sees channel 0: q = k = v = (1, 0) over the two tokens,
  // head 2 channel 1: (0, 2).
  //   head 1, token 0: scores (1, 0) -> (e/(e+1), 1/(e+1)) = (0.7311, 0.2689), O = 0.7311
  //   head 1, token 1: scores (0, 0) -> (0.5, 0.5), O = 0.5
  //   head 2, token 0: scores (0, 0) -> (0.5, 0.5), O = 1
  //   head 2, token 1: scores (0, 4) -> (1/(1+e^4), e^4/(1+e^4)) = (0.0180, 0.9820), O = 1.9640
  // The heads are concatenated [O_1, O_2], then W_o swaps them and adds (10, 20).
  TransformerAttention attention(2, 2, 0.0);
  set_identity_projections(*attention, torch::tensor({{0.0, 1.0}, {1.0, 0.0}}), torch::tensor({10.0, 20.0}));
  const auto x = torch::tensor({{{1.0, 0.0}, {0.0, 2.0}}});  // [1, 2, 2]
  const HeadsOutput out = attention(x);
  const double e = std::exp(1.0), e4 = std::exp(4.0);
  const auto expected_weights =
      torch::tensor({{{e / (e + 1), 1 / (e + 1)}, {0.5, 0.5}}, {{0.5, 0.5}, {1 / (1 + e4), e4 / (1 + e4)}}});
  EXPECT_TRUE(torch::allclose(out.weights[0], expected_weights.to(torch::kFloat), 1e-5, 1e-6)) << out.weights;
  const auto expected = torch::tensor({{{1.0 + 10, e / (e + 1) + 20}, {2 * e4 / (1 + e4) + 10, 0.5 + 20}}});
  EXPECT_TRUE(torch::allclose(out.output, expected.to(torch::kFloat), 1e-5, 1e-5)) << out.output;
}

TEST(TransformerAttention, OneHeadDividesScoresBySqrtOfItsWidth) {
  // D = K = 2: token 1 has q = (2, 0) against keys (1, 1) and (2, 0): scores (2, 4) / sqrt 2, so
  // softmax (1 / (1 + e^{sqrt 2}), e^{sqrt 2} / (1 + e^{sqrt 2})) = (0.19557, 0.80443) and
  // O = 0.19557 (1, 1) + 0.80443 (2, 0) = (1.80443, 0.19557). Token 0 (q = (1, 1)) scores both
  // keys 2 / sqrt 2: O = the values' mean (1.5, 0.5).
  TransformerAttention attention(2, 1, 0.0);
  set_identity_projections(*attention, torch::eye(2), torch::zeros({2}));
  const HeadsOutput out = attention(torch::tensor({{{1.0f, 1.0f}, {2.0f, 0.0f}}}));
  const double p = 1 / (1 + std::exp(std::sqrt(2.0)));
  const auto expected = torch::tensor({{{1.5, 0.5}, {p + 2 * (1 - p), p}}}, torch::kFloat);
  EXPECT_TRUE(torch::allclose(out.output, expected, 1e-5, 1e-6)) << out.output;
}

TEST(TransformerAttention, AgreesWithTorchMultiheadAttentionWithAndWithoutACausalMask) {
  torch::manual_seed(3);
  const int64_t dim = 12, heads = 3, tokens = 5, batch = 2;
  TransformerAttention ours(dim, heads, 0.0);
  torch::nn::MultiheadAttention theirs(torch::nn::MultiheadAttentionOptions(dim, heads));
  copy_parameters_by_name(*theirs, *ours);
  ours->eval();
  theirs->eval();
  const auto x = torch::randn({batch, tokens, dim});
  const auto causal = torch::full({tokens, tokens}, -INFINITY).triu(1);
  for (const torch::Tensor& mask : {torch::Tensor(), causal}) {
    const HeadsOutput out = ours(x, mask);
    const auto seq_first = x.transpose(0, 1);  // torch's [T, B, D]
    const auto [expected, weights] = theirs->forward(
        seq_first, seq_first, seq_first, {}, /*need_weights=*/true, mask, /*average_attn_weights=*/false);
    EXPECT_TRUE(torch::allclose(out.output, expected.transpose(0, 1), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(out.weights, weights, 1e-5, 1e-6));
  }
  // Under the mask, token t's output ignores tokens after t: changing the last token changes
  // only the last output.
  auto changed = x.clone();
  changed.select(1, tokens - 1).add_(1.0);
  const auto before = ours(x, causal).output, after = ours(changed, causal).output;
  EXPECT_TRUE(torch::equal(before.narrow(1, 0, tokens - 1), after.narrow(1, 0, tokens - 1)));
  EXPECT_FALSE(torch::allclose(before.select(1, tokens - 1), after.select(1, tokens - 1)));
}

TEST(TransformerAttention, GradientsMatchFiniteDifferences) {
  torch::manual_seed(5);
  TransformerAttention attention(4, 2, 0.0);
  attention->to(torch::kDouble);
  const auto x = torch::randn({2, 3, 4}, torch::kDouble).requires_grad_(true);
  const auto mask = torch::full({3, 3}, -INFINITY, torch::kDouble).triu(1);
  const auto probe = torch::randn({2, 3, 4}, torch::kDouble);
  const auto loss = [&] { return (attention(x, mask).output * probe).sum(); };
  const auto error = testing::gradient_error(
      loss, {{"x", x},
             {"in_proj_weight", attention->in_proj_weight},
             {"in_proj_bias", attention->in_proj_bias},
             {"out_proj.weight", attention->out_proj->weight}});
  EXPECT_LT(error.max_abs, 1e-7) << error.where;
}

TEST(TransformerAttention, HeadsThatDoNotDivideTheWidthAreRefused) {
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([] { TransformerAttention(10, 4, 0.0); }),
      "4 heads do not divide the width 10");
}

TEST(RefinerLayer, EqualsTorchTransformerEncoderLayerWithTheSameWeights) {
  torch::manual_seed(11);
  const int64_t dim = 8, heads = 2, ffn = 16;
  RefinerLayer ours(dim, heads, ffn, 0.1);
  torch::nn::TransformerEncoderLayer theirs(
      torch::nn::TransformerEncoderLayerOptions(dim, heads).dim_feedforward(ffn).dropout(0.1));
  copy_parameters_by_name(*theirs, *ours);  // the same names: weights load one to one
  ours->eval();
  theirs->eval();
  const auto x = torch::randn({3, 6, dim});
  const auto expected = theirs(x.transpose(0, 1)).transpose(0, 1);
  EXPECT_TRUE(torch::allclose(ours(x).output, expected, 1e-5, 1e-5));
}

TEST(RefinerLayer, WithoutPositionItCannotTellLocationsApart) {
  // Self-attention is permutation-equivariant: shuffling the locations shuffles the outputs the
  // same way. This is why the refiner adds position.
  torch::manual_seed(2);
  RefinerLayer layer(8, 2, 16, 0.0);
  const auto x = torch::randn({1, 6, 8});
  const auto order = torch::tensor({3, 0, 5, 1, 4, 2});
  const auto shuffled_then_refined = layer(x.index_select(1, order)).output;
  const auto refined_then_shuffled = layer(x).output.index_select(1, order);
  EXPECT_TRUE(torch::allclose(shuffled_then_refined, refined_then_shuffled, 1e-5, 1e-6));
}

TEST(RefinerLayer, GradientsMatchFiniteDifferences) {
  torch::manual_seed(9);
  RefinerLayer layer(4, 2, 6, 0.0);
  layer->to(torch::kDouble);
  const auto x = torch::randn({2, 3, 4}, torch::kDouble).requires_grad_(true);
  const auto probe = torch::randn({2, 3, 4}, torch::kDouble);
  const auto loss = [&] { return (layer(x).output * probe).sum(); };
  const auto error = testing::gradient_error(
      loss, {{"x", x},
             {"linear1.weight", layer->linear1->weight},
             {"linear2.bias", layer->linear2->bias},
             {"norm1.weight", layer->norm1->weight},
             {"self_attn.in_proj_weight", layer->self_attn->in_proj_weight}});
  EXPECT_LT(error.max_abs, 1e-7) << error.where;
}

RefinerOptions transformer_refiner(int64_t layers, int64_t heads, int64_t ffn_dim) {
  RefinerOptions options;
  options.kind = "transformer";
  options.layers = layers;
  options.heads = heads;
  options.ffn_dim = ffn_dim;
  return options;
}

TEST(GridRefiner, IsTorchTransformerEncoderOverTheGridPlusTheSinusoidalEncoding) {
  torch::manual_seed(4);
  const int64_t dim = 8;
  const std::array<int64_t, 2> grid{2, 3};
  GridRefiner ours(transformer_refiner(2, 2, 12), dim, grid);
  torch::nn::TransformerEncoder theirs(torch::nn::TransformerEncoderOptions(
      torch::nn::TransformerEncoderLayerOptions(dim, 2).dim_feedforward(12), 2));
  copy_parameters_by_name(*theirs, *ours);
  ours->eval();
  theirs->eval();
  const auto annotations = torch::randn({2, 6, dim});
  // Location l = 3 r + c carries sin r, cos r, sin(r / 100), cos(r / 100), then the same of c.
  auto position = torch::empty({6, dim});
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t c = 0; c < 3; ++c) {
      position[3 * r + c] = torch::tensor(
          {std::sin(r), std::cos(r), std::sin(r / 100.0), std::cos(r / 100.0), std::sin(c), std::cos(c),
           std::sin(c / 100.0), std::cos(c / 100.0)},
          torch::kFloat);
    }
  }
  const auto expected = theirs((annotations + position).transpose(0, 1)).transpose(0, 1);
  const RefinedGrid refined = ours->refine(annotations, grid);
  EXPECT_TRUE(torch::allclose(refined.annotations, expected, 1e-5, 1e-5));
  ASSERT_EQ(refined.maps.size(), 2u);
  for (const auto& map : refined.maps) {
    ASSERT_EQ(map.sizes(), torch::IntArrayRef({2, 2, 6, 6}));
    EXPECT_TRUE(torch::allclose(map.sum(-1), torch::ones({2, 2, 6}), 1e-5, 1e-6));
  }
  // The wrong number of locations for the grid is refused, naming both.
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] {
        ours->forward(annotations, {3, 3});
      }),
      "The refiner takes annotations [B, 9, 8] on its 3 x 3 grid, got [2, 6, 8]");
}

TEST(GridRefiner, LearnedPositionIsATableForTheEncodersGrid) {
  torch::manual_seed(6);
  auto options = transformer_refiner(1, 2, 8);
  options.position = RefinerPosition::learned;
  GridRefiner refiner(
      options, 6, std::array<int64_t, 2>{2, 2});  // 6 channels: too few for the sinusoidal encoding
  ASSERT_TRUE(refiner->position.defined());
  EXPECT_EQ(refiner->position.sizes(), torch::IntArrayRef({4, 6}));
  EXPECT_LT(refiner->position.std().item<double>(), 0.05);
  EXPECT_NE(refiner->named_parameters().find("position"), nullptr);
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] {
        refiner->forward(torch::randn({1, 4, 6}), {4, 1});
      }),
      "The refiner's learned position table covers a 2 x 2 grid, not 4 x 1");
}

TEST(GridRefiner, OptionsComeFromTheConfigAndBadOnesNameTheKey) {
  const Config config = compose({testing::source_dir() / "configs",
                                 "config",
                                 {"encoder.refiner.kind=transformer", "encoder.refiner.heads=8"}})
                            .config;
  const RefinerOptions options = refiner_options_from(config);
  EXPECT_EQ(options.kind, "transformer");
  EXPECT_EQ(options.heads, 8);
  EXPECT_EQ(options.layers, 2);
  EXPECT_EQ(options.position, RefinerPosition::sinusoidal);
  // A run saved before the refiner existed has none.
  EXPECT_FALSE(refiner_options_from(Config(YAML::Load("encoder: {name: small_cnn}"))).enabled());

  const auto message = [](RefinerOptions bad, int64_t dim, std::array<int64_t, 2> grid) {
    return testing::message_of<std::invalid_argument>([&] { validate(bad, dim, grid); });
  };
  EXPECT_EQ(
      message(transformer_refiner(2, 3, 64), 128, {8, 8}),
      "encoder.refiner.heads=3 does not divide the annotation width 128");
  EXPECT_EQ(
      message(transformer_refiner(0, 4, 64), 128, {8, 8}), "encoder.refiner.layers must be >= 1, got 0");
  EXPECT_EQ(
      message(transformer_refiner(2, 2, 64), 130, {8, 8}),
      "encoder.refiner.position=sinusoidal needs an annotation width divisible by 4, got 130 (use learned)");
  auto learned = transformer_refiner(2, 2, 64);
  learned.position = RefinerPosition::learned;
  EXPECT_EQ(
      message(learned, 128, {0, 0}), "encoder.refiner.position=learned needs a fixed grid: set encoder.grid");
  auto unknown = transformer_refiner(2, 2, 64);
  unknown.kind = "lstm";
  EXPECT_EQ(message(unknown, 128, {8, 8}), "encoder.refiner.kind must be none or transformer, got 'lstm'");
}

TEST(GridRefiner, TheCaptionerRefinesWhatTheDecoderReads) {
  torch::manual_seed(8);
  EncoderOptions encoder;
  encoder.channels = {8, 16};
  encoder.grid = std::array<int64_t, 2>{2, 2};
  encoder.refiner = transformer_refiner(1, 2, 16);
  DecoderOptions decoder;
  decoder.lstm.embed_dim = decoder.lstm.hidden_dim = decoder.lstm.attention_dim = 8;
  Captioner model = build_captioner(encoder, decoder, 7);
  ASSERT_TRUE(model->refiner);
  EXPECT_NE(model->named_parameters().find("refiner.layers.0.self_attn.in_proj_weight"), nullptr);
  model->eval();
  const auto images = torch::randn({2, 3, 16, 16});
  const auto raw = model->encoder->forward(images);
  EXPECT_TRUE(torch::allclose(model->encode(images), model->refiner->forward(raw, {2, 2})));
  EXPECT_FALSE(torch::allclose(model->encode(images), raw));
  // Without a refiner the annotations pass as they are, and there are no refiner weights.
  encoder.refiner.kind = "none";
  Captioner plain = build_captioner(encoder, decoder, 7);
  EXPECT_FALSE(plain->refiner);
  EXPECT_TRUE(torch::equal(plain->refine(raw, {2, 2}), raw));
}

TEST(TransformerDecoderLayer, EqualsTorchTransformerDecoderLayerUnderTheCausalMask) {
  torch::manual_seed(12);
  const int64_t dim = 8, heads = 2, ffn = 16, words = 5;
  TransformerDecoderLayer ours(dim, heads, ffn, 0.1);
  torch::nn::TransformerDecoderLayer theirs(
      torch::nn::TransformerDecoderLayerOptions(dim, heads).dim_feedforward(ffn).dropout(0.1));
  copy_parameters_by_name(*theirs, *ours);
  ours->eval();
  theirs->eval();
  const auto x = torch::randn({3, words, dim}), grid = torch::randn({3, 7, dim});
  const auto mask = causal_mask(words, torch::kFloat);
  const auto expected = theirs(x.transpose(0, 1), grid.transpose(0, 1), mask).transpose(0, 1);
  const auto out = ours->forward(
      x, {}, {}, ours->multihead_attn->project(grid, 1).transpose(-2, -1),
      ours->multihead_attn->project(grid, 2), mask);
  EXPECT_TRUE(torch::allclose(out.x, expected, 1e-5, 1e-5));
  EXPECT_EQ(out.grid_weights.sizes(), torch::IntArrayRef({3, heads, words, 7}));
  EXPECT_EQ(out.keys_t.sizes(), torch::IntArrayRef({3, heads, dim / heads, words}));
}

DecoderOptions tiny_transformer(bool tied = false) {
  DecoderOptions options;
  options.kind = DecoderKind::transformer;
  options.vocab_size = 11;
  options.annotation_dim = 6;
  options.transformer.layers = 2;
  options.transformer.heads = 2;
  options.transformer.model_dim = 8;
  options.transformer.ffn_dim = 12;
  options.dropout = 0.1;
  options.transformer.tied_embeddings = tied;
  options.transformer.maps_layer = 0;
  return options;
}

TEST(TransformerDecoder, AWordNeverChangesTheOutputsBeforeIt) {
  torch::manual_seed(13);
  TransformerDecoder decoder(tiny_transformer());
  decoder->eval();
  const auto annotations = torch::randn({2, 4, 6});
  const auto tokens = torch::randint(0, 11, {2, 6});
  const auto lengths = torch::tensor({6, 6});
  const auto before = decoder->forward(annotations, tokens, lengths);
  for (int64_t changed = 1; changed < 6; ++changed) {
    auto other = tokens.clone();
    other.select(1, changed).fill_((tokens[0][changed].item<int64_t>() + 1) % 11);
    const auto after = decoder->forward(annotations, other, lengths);
    EXPECT_TRUE(torch::equal(before.logits.narrow(1, 0, changed), after.logits.narrow(1, 0, changed)))
        << changed;
    EXPECT_TRUE(torch::equal(before.alphas.narrow(1, 0, changed), after.alphas.narrow(1, 0, changed)))
        << changed;
    EXPECT_FALSE(torch::allclose(before.logits.select(1, changed), after.logits.select(1, changed)))
        << changed;
  }
}

TEST(TransformerDecoder, CachedStepsEqualTheFullPassAndPaddingIsZero) {
  torch::manual_seed(14);
  for (const bool tied : {false, true}) {
    TransformerDecoder decoder(tiny_transformer(tied));
    EXPECT_EQ(decoder->named_parameters().find("out_weight") == nullptr, tied);
    decoder->eval();
    const auto annotations = torch::randn({3, 4, 6});
    const auto tokens = torch::randint(0, 11, {3, 5});
    const auto full = decoder->forward(annotations, tokens, torch::tensor({5, 3, 5}));
    ASSERT_EQ(full.alphas.sizes(), torch::IntArrayRef({3, 5, 2, 4}));
    DecoderState state = decoder->init_state(annotations);
    for (int64_t t = 0; t < 5; ++t) {
      const DecoderStep step = decoder->step(state, tokens.select(1, t));
      state = step.state;
      // The cache holds exactly the words read: nothing before them is recomputed.
      EXPECT_EQ(state.word_keys[1].size(3), t + 1);
      for (int64_t b : {0, 2}) {
        EXPECT_TRUE(torch::allclose(step.logits[b], full.logits[b][t], 1e-5, 1e-5)) << t;
        EXPECT_TRUE(torch::allclose(step.alpha[b], full.alphas[b][t], 1e-5, 1e-6)) << t;
      }
      if (t < 3) {
        EXPECT_TRUE(torch::allclose(step.logits[1], full.logits[1][t], 1e-5, 1e-5)) << t;
      }
    }
    EXPECT_TRUE(torch::equal(full.logits[1].narrow(0, 3, 2), torch::zeros({2, 11})));
    EXPECT_TRUE(torch::equal(full.alphas[1].narrow(0, 3, 2), torch::zeros({2, 2, 4})));
    EXPECT_TRUE(torch::allclose(full.alphas[0].sum(-1), torch::ones({5, 2}), 1e-5, 1e-6));
  }
}

// Without autograd every product runs on packed copies of the weights (the panel kernel for the
// grid's 3 x 21 rows, the few-rows kernel for a step's 3): the same numbers as the autograd pass
// through torch's products, up to rounding. Packs follow in-place updates of the weights, and in
// a bf16 InferencePrecision they are the weights rounded to bf16.
TEST(TransformerDecoder, InferenceRunsOnPackedWeightsThatFollowUpdatesAndBf16) {
  torch::manual_seed(17);
  DecoderOptions options = tiny_transformer();
  options.vocab_size = 37;
  options.annotation_dim = 20;
  options.transformer.model_dim = 32;
  options.transformer.ffn_dim = 48;
  options.transformer.heads = 4;
  TransformerDecoder decoder(options);
  decoder->eval();
  const auto annotations = torch::randn({3, 21, 20});
  const auto tokens = torch::randint(0, 37, {3, 4});
  const auto lengths = torch::full({3}, 4);
  const auto steps = [&](TransformerDecoder& model) {
    torch::NoGradGuard no_grad;
    DecoderState state = model->init_state(annotations);
    std::vector<torch::Tensor> logits;
    for (int64_t t = 0; t < 4; ++t) {
      DecoderStep step = model->step(state, tokens.select(1, t));
      logits.push_back(step.logits);
      state = step.state;
    }
    return torch::stack(logits, 1);  // [B, T, V]
  };
  const auto with_autograd = decoder->forward(annotations, tokens, lengths).logits.detach();
  EXPECT_TRUE(torch::allclose(steps(decoder), with_autograd, 1e-5, 1e-5));
  {
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(
        torch::allclose(decoder->forward(annotations, tokens, lengths).logits, with_autograd, 1e-5, 1e-5));
    decoder->grid_proj->weight.mul_(-2);  // packed into panels for the grid's 63 rows
    decoder->layers[0]->as<TransformerDecoderLayerImpl>()->linear2->weight.mul_(-2);
  }
  const auto updated = decoder->forward(annotations, tokens, lengths).logits.detach();
  ASSERT_FALSE(torch::allclose(updated, with_autograd, 1e-2, 1e-2));
  EXPECT_TRUE(torch::allclose(steps(decoder), updated, 1e-5, 1e-5));

  if (!PackedWeight::supported())
    GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F: no bf16 copies";
  // bf16: the matrices of the products rounded to bf16 (the norms, biases and embedding lookups
  // stay float32), against a float32 decoder holding the rounded values.
  TransformerDecoder rounded(options);
  rounded->eval();
  {
    torch::NoGradGuard no_grad;
    const auto source = decoder->named_parameters();
    for (auto& item : rounded->named_parameters()) {
      const bool product_matrix = item.value().dim() == 2 && item.key() != "embedding.weight";
      item.value().copy_(
          product_matrix ? source[item.key()].to(torch::kBFloat16).to(torch::kFloat) : source[item.key()]);
    }
  }
  const auto float_steps = steps(decoder);
  torch::Tensor bf16_steps;
  {
    const InferencePrecision bf16({c10::Device(c10::DeviceType::CPU), Precision::bf16});
    bf16_steps = steps(decoder);
  }
  const auto reference = steps(rounded);
  // Weights widened: only their rounding, so the rounded float32 decoder agrees but for the
  // order of sums. Dot products (AVX-512 BF16) also round each product's x to bf16, an error of
  // the weights' own order here (~1e-2; the kernel itself is checked exactly in its own tests).
  const double tolerance = best_bf16_product() == Bf16Product::widen ? 1e-4 : 2e-2;
  EXPECT_TRUE(torch::allclose(bf16_steps, reference, tolerance, tolerance));
  EXPECT_GT((bf16_steps - float_steps).abs().max().item<double>(), 1e-4);  // the bf16 copies ran
}

TEST(TransformerDecoder, ReorderedBeamsCarryTheirOwnWords) {
  // Two images expanded to two beams each, the grid copied per beam or shared by the image's
  // beams (for_beams); after a step the beams swap within each image. The next step of a beam
  // must equal what its new history gives when decoded on its own.
  torch::manual_seed(15);
  TransformerDecoder decoder(tiny_transformer());
  decoder->eval();
  const auto annotations = torch::randn({2, 4, 6});
  const auto expanded = torch::tensor({0, 0, 1, 1});
  const auto first = torch::tensor({1, 2, 3, 4}), second = torch::tensor({5, 6, 7, 8});
  const auto alone = decoder->forward(
      annotations.index_select(0, expanded), torch::stack({torch::tensor({2, 1, 4, 3}), second}, 1),
      torch::full({4}, 2));
  const DecoderState shared = decoder->for_beams(decoder->init_state(annotations), 2);
  EXPECT_EQ(shared.grid_beams, 2);
  EXPECT_EQ(shared.grid_keys.front().size(0), 2);
  EXPECT_THROW(shared.index_select(expanded), std::logic_error);
  for (DecoderState state : {decoder->init_state(annotations).index_select(expanded), shared}) {
    state = decoder->step(state, first).state.reorder_beams(torch::tensor({1, 0, 3, 2}));
    const auto reordered = decoder->step(state, second).logits;
    EXPECT_TRUE(torch::allclose(reordered, alone.logits.select(1, 1), 1e-5, 1e-5))
        << "grid shared by " << state.grid_beams << " beams";
  }
}

TEST(TransformerDecoder, GradientsMatchFiniteDifferences) {
  torch::manual_seed(16);
  auto options = tiny_transformer();
  options.dropout = 0.0;
  TransformerDecoder decoder(options);
  decoder->to(torch::kDouble);
  const auto annotations = torch::randn({2, 3, 6}, torch::kDouble).requires_grad_(true);
  const auto tokens = torch::randint(0, 11, {2, 4});
  const auto lengths = torch::tensor({4, 2});
  const auto probe = torch::randn({2, 4, 11}, torch::kDouble);
  const auto loss = [&] { return (decoder->forward(annotations, tokens, lengths).logits * probe).sum(); };
  auto* layer = decoder->layers[1]->as<TransformerDecoderLayerImpl>();
  const auto error = testing::gradient_error(
      loss, {{"annotations", annotations},
             {"embedding.weight", decoder->embedding->weight},
             {"grid_proj.weight", decoder->grid_proj->weight},
             {"layers.1.multihead_attn.in_proj_weight", layer->multihead_attn->in_proj_weight},
             {"layers.1.norm3.weight", layer->norm3->weight},
             {"out_weight", decoder->out_weight}});
  EXPECT_LT(error.max_abs, 1e-7) << error.where;
}

TEST(TransformerDecoder, OptionsComeFromTheConfigAndBadOnesNameTheKey) {
  const Config config =
      compose({testing::source_dir() / "configs", "config", {"decoder=transformer"}}).config;
  const DecoderOptions options = decoder_options_from(config);
  EXPECT_EQ(options.kind, DecoderKind::transformer);
  EXPECT_EQ(options.transformer.model_dim, 256);
  EXPECT_EQ(options.transformer.maps_layer, -1);
  EXPECT_EQ(
      decoder_options_from(compose({testing::source_dir() / "configs", "config", {}}).config).kind,
      DecoderKind::lstm);

  const auto message = [](DecoderOptions bad) {
    return testing::message_of<std::invalid_argument>([&] { build_decoder(bad); });
  };
  auto three_heads = tiny_transformer();
  three_heads.transformer.heads = 3;
  EXPECT_EQ(message(three_heads), "decoder.heads=3 does not divide decoder.dim=8");
  auto far_layer = tiny_transformer();
  far_layer.transformer.maps_layer = 2;
  EXPECT_EQ(message(far_layer), "decoder.maps_layer=2 is not a layer of the 2-layer decoder");
  TransformerDecoder decoder(tiny_transformer());
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] {
        decoder->init_state(torch::randn({1, 4, 6}), torch::ones({1, 4}, torch::kBool));
      }),
      "The Transformer decoder reads whole grids: no mask");
}

}  // namespace
}  // namespace saccade
