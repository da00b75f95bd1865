// Attention kinds against hand-worked examples, finite differences and each other.
#include "models/attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "finite_difference.h"
#include "kernels/kernel_isa.h"

namespace saccade {
namespace {

const std::vector<std::string> kKinds = {"additive", "dot", "scaled_dot", "general", "multihead"};

class AttentionTest : public ::testing::Test {
 protected:
  AttentionTest() { torch::manual_seed(0); }
};

// B=3 images, L=5 locations, D=6, H=4, A=8 (multihead: 2 heads of 4).
AttentionOptions small_attention_options(const std::string& kind) {
  AttentionOptions options;
  options.kind = kind;
  options.annotation_dim = 6;
  options.query_dim = 4;
  options.dim = 8;
  options.heads = kind == "multihead" ? 2 : 1;
  return options;
}

void set_linear(torch::nn::Linear& linear, const torch::Tensor& weight, const torch::Tensor& bias = {}) {
  torch::NoGradGuard no_grad;
  linear->weight.copy_(weight);
  if (bias.defined()) linear->bias.copy_(bias);
}

torch::Tensor identity2() {
  return torch::eye(2);
}

// Two locations a_1 = [1, 0], a_2 = [0, 1] (B=1, L=2, D=2) unless a test says otherwise.
torch::Tensor unit_annotations() {
  return torch::tensor({{{1.0f, 0.0f}, {0.0f, 1.0f}}});
}

AttentionOptions tiny_options(const std::string& kind, int64_t heads = 1) {
  AttentionOptions options;
  options.kind = kind;
  options.annotation_dim = 2;
  options.query_dim = 2;
  options.dim = 2;
  options.heads = heads;
  return options;
}

TEST_F(AttentionTest, AlphaSumsToOneAndShapesHoldForEveryKind) {
  for (const auto& kind : kKinds) {
    auto attention = build_attention(small_attention_options(kind));
    const auto annotations = torch::randn({3, 5, 6});
    const auto memory = attention->remember(annotations);
    const auto step = attention->forward(memory, torch::randn({3, 4}));
    EXPECT_EQ(step.context.sizes(), torch::IntArrayRef({3, 6})) << kind;
    if (kind == "multihead") {
      EXPECT_EQ(step.alpha.sizes(), torch::IntArrayRef({3, 2, 5})) << kind;
    } else {
      EXPECT_EQ(step.alpha.sizes(), torch::IntArrayRef({3, 5})) << kind;
    }
    EXPECT_TRUE(torch::allclose(step.alpha.sum(-1), torch::ones_like(step.alpha.sum(-1)), 1e-6, 1e-6))
        << kind;
    EXPECT_TRUE((step.alpha >= 0).all().item<bool>()) << kind;
  }
}

TEST_F(AttentionTest, AdditiveHandWorked) {
  // W_a = W_h = I, b = 0, w = [1, 2]; u = atanh(0.5), so tanh(+-u) = +-0.5.
  // a_1 = [u, 0], a_2 = [0, u], h = [-u, 0]:
  //   W_a a_1 + W_h h = [0, 0]  -> e_1 = 0
  //   W_a a_2 + W_h h = [-u, u] -> e_2 = 1 * (-0.5) + 2 * 0.5 = 0.5
  // alpha = softmax([0, 0.5]) = [1, e^0.5] / (1 + e^0.5) = [0.3775406688, 0.6224593312]
  // z = alpha_1 a_1 + alpha_2 a_2 = [0.3775406688 u, 0.6224593312 u] = [0.2073853688, 0.3419207756]
  auto attention = std::make_shared<AdditiveAttentionImpl>(tiny_options("additive"));
  set_linear(attention->key, identity2(), torch::zeros({2}));
  set_linear(attention->query, identity2());
  set_linear(attention->score, torch::tensor({{1.0f, 2.0f}}));
  const float u = std::atanh(0.5f);
  const auto annotations = torch::tensor({{{u, 0.0f}, {0.0f, u}}});
  const auto step = attention->forward(attention->remember(annotations), torch::tensor({{-u, 0.0f}}));
  EXPECT_NEAR(step.alpha[0][0].item<float>(), 0.3775406688f, 1e-6);
  EXPECT_NEAR(step.alpha[0][1].item<float>(), 0.6224593312f, 1e-6);
  EXPECT_NEAR(step.context[0][0].item<float>(), 0.2073853688f, 1e-6);
  EXPECT_NEAR(step.context[0][1].item<float>(), 0.3419207756f, 1e-6);
}

TEST_F(AttentionTest, AdditiveKeyBiasShiftsEveryLocation) {
  // As above with a_1 = a_2 = 0 and b = [u, 0], h = 0: both locations score tanh(u) = 0.5,
  // so alpha is uniform whatever b is: the key bias enters every location alike.
  auto attention = std::make_shared<AdditiveAttentionImpl>(tiny_options("additive"));
  const float u = std::atanh(0.5f);
  set_linear(attention->key, identity2(), torch::tensor({u, 0.0f}));
  set_linear(attention->query, identity2());
  set_linear(attention->score, torch::tensor({{1.0f, 2.0f}}));
  const auto step = attention->forward(attention->remember(torch::zeros({1, 2, 2})), torch::zeros({1, 2}));
  EXPECT_NEAR(step.alpha[0][0].item<float>(), 0.5f, 1e-6);
}

TEST_F(AttentionTest, DotHandWorked) {
  // W_k = W_q = I, b_k = 0, b_q = [0, ln 2]; h = [ln 3, 0] -> q = [ln 3, ln 2].
  // e_i = a_i . q = [ln 3, ln 2] -> alpha = [3, 2] / 5; z = 0.6 a_1 + 0.4 a_2 = [0.6, 0.4].
  auto attention = std::make_shared<DotAttentionImpl>(tiny_options("dot"));
  set_linear(attention->key, identity2(), torch::zeros({2}));
  set_linear(attention->query, identity2(), torch::tensor({0.0f, std::log(2.0f)}));
  const auto step =
      attention->forward(attention->remember(unit_annotations()), torch::tensor({{std::log(3.0f), 0.0f}}));
  EXPECT_NEAR(step.alpha[0][0].item<float>(), 0.6f, 1e-6);
  EXPECT_NEAR(step.alpha[0][1].item<float>(), 0.4f, 1e-6);
  EXPECT_NEAR(step.context[0][0].item<float>(), 0.6f, 1e-6);
  EXPECT_NEAR(step.context[0][1].item<float>(), 0.4f, 1e-6);
}

TEST_F(AttentionTest, ScaledDotHandWorked) {
  // As dot with b_q = 0 and h = [sqrt(2) ln 3, 0]: e = [sqrt(2) ln 3, 0] / sqrt(A = 2) = [ln 3, 0]
  // -> alpha = [3, 1] / 4; z = [0.75, 0.25].
  auto attention = std::make_shared<DotAttentionImpl>(tiny_options("scaled_dot"));
  set_linear(attention->key, identity2(), torch::zeros({2}));
  set_linear(attention->query, identity2(), torch::zeros({2}));
  const auto h = torch::tensor({{std::sqrt(2.0f) * std::log(3.0f), 0.0f}});
  const auto step = attention->forward(attention->remember(unit_annotations()), h);
  EXPECT_NEAR(step.alpha[0][0].item<float>(), 0.75f, 1e-6);
  EXPECT_NEAR(step.context[0][1].item<float>(), 0.25f, 1e-6);
}

TEST_F(AttentionTest, GeneralHandWorked) {
  // W = [[0, 1], [1, 0]] swaps: W a_1 = [0, 1], W a_2 = [1, 0]. h = [ln 3, 0]:
  // e = [h . W a_1, h . W a_2] = [0, ln 3] -> alpha = [1, 3] / 4; z = [0.25, 0.75].
  auto attention = std::make_shared<GeneralAttentionImpl>(tiny_options("general"));
  set_linear(attention->key, torch::tensor({{0.0f, 1.0f}, {1.0f, 0.0f}}));
  EXPECT_FALSE(attention->query_weight().defined());  // the query is h itself
  const auto step =
      attention->forward(attention->remember(unit_annotations()), torch::tensor({{std::log(3.0f), 0.0f}}));
  EXPECT_NEAR(step.alpha[0][0].item<float>(), 0.25f, 1e-6);
  EXPECT_NEAR(step.context[0][0].item<float>(), 0.25f, 1e-6);
  EXPECT_NEAR(step.context[0][1].item<float>(), 0.75f, 1e-6);
}

TEST_F(AttentionTest, MultiheadHandWorked) {
  // A = 2, 2 heads of K = 1 (scale 1/sqrt(1)); every projection is I with zero bias.
  // Head 0 sees channel 0: keys [1, 0], q_0 = ln 3 -> e = [ln 3, 0] -> alpha_0 = [3/4, 1/4];
  //   values [1, 0] -> glimpse 3/4.
  // Head 1 sees channel 1: keys [0, 1], q_1 = ln 2 -> e = [0, ln 2] -> alpha_1 = [1/3, 2/3];
  //   values [0, 1] -> glimpse 2/3.
  // z = W_o [3/4, 2/3] = [0.75, 0.6666667].
  auto attention = std::make_shared<MultiheadAttentionImpl>(tiny_options("multihead", 2));
  for (auto* linear : {&attention->key, &attention->value, &attention->query, &attention->output}) {
    set_linear(*linear, identity2(), torch::zeros({2}));
  }
  const auto h = torch::tensor({{std::log(3.0f), std::log(2.0f)}});
  const auto step = attention->forward(attention->remember(unit_annotations()), h);
  ASSERT_EQ(step.alpha.sizes(), torch::IntArrayRef({1, 2, 2}));
  EXPECT_NEAR(step.alpha[0][0][0].item<float>(), 0.75f, 1e-6);
  EXPECT_NEAR(step.alpha[0][1][1].item<float>(), 2.0f / 3.0f, 1e-6);
  EXPECT_NEAR(step.context[0][0].item<float>(), 0.75f, 1e-6);
  EXPECT_NEAR(step.context[0][1].item<float>(), 2.0f / 3.0f, 1e-6);
}

TEST_F(AttentionTest, OneHeadMultiheadWithIdentityValuesIsScaledDot) {
  auto options = small_attention_options("multihead");
  options.heads = 1;
  options.dim = options.annotation_dim;  // W_v and W_o can then be the identity
  auto multihead = std::make_shared<MultiheadAttentionImpl>(options);
  options.kind = "scaled_dot";
  auto scaled = std::make_shared<DotAttentionImpl>(options);
  set_linear(multihead->value, torch::eye(6), torch::zeros({6}));
  set_linear(multihead->output, torch::eye(6), torch::zeros({6}));
  set_linear(multihead->key, scaled->key->weight.detach(), scaled->key->bias.detach());
  set_linear(multihead->query, scaled->query->weight.detach(), scaled->query->bias.detach());
  const auto annotations = torch::randn({3, 5, 6});
  const auto h = torch::randn({3, 4});
  const auto expected = scaled->forward(scaled->remember(annotations), h);
  const auto actual = multihead->forward(multihead->remember(annotations), h);
  EXPECT_TRUE(torch::allclose(actual.alpha.squeeze(1), expected.alpha, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(actual.context, expected.context, 1e-5, 1e-6));
}

TEST_F(AttentionTest, MaskedLocationsGetZeroWeight) {
  for (const auto& kind : kKinds) {
    auto attention = build_attention(small_attention_options(kind));
    const auto annotations = torch::randn({3, 5, 6});
    auto mask = torch::ones({3, 5}, torch::kBool);
    mask[0][4] = false;
    mask[1][0] = false;
    mask[1][2] = false;
    const auto h = torch::randn({3, 4});
    const auto step = attention->forward(attention->remember(annotations, mask), h);
    const auto alpha = kind == "multihead" ? step.alpha : step.alpha.unsqueeze(1);  // [B, N, L]
    EXPECT_EQ(alpha.masked_select(mask.logical_not().unsqueeze(1)).abs().max().item<float>(), 0.0f) << kind;
    EXPECT_TRUE(torch::allclose(alpha.sum(-1), torch::ones({3, alpha.size(1)}), 1e-6, 1e-6)) << kind;
    // Dropping the masked locations altogether gives the same context for image 0.
    const auto kept = annotations.narrow(0, 0, 1).narrow(1, 0, 4);
    const auto reference = attention->forward(attention->remember(kept), h.narrow(0, 0, 1));
    EXPECT_TRUE(torch::allclose(step.context[0], reference.context[0], 1e-5, 1e-6)) << kind;
  }
}

TEST_F(AttentionTest, GradientsMatchFiniteDifferences) {
  for (const auto& kind : kKinds) {
    auto attention = build_attention(small_attention_options(kind));
    attention->to(torch::kDouble);
    const auto annotations = torch::randn({3, 5, 6}, torch::kDouble).requires_grad_();
    const auto h = torch::randn({3, 4}, torch::kDouble).requires_grad_();
    auto mask = torch::ones({3, 5}, torch::kBool);
    mask[2][1] = false;
    // Random weights on both outputs, so every path is probed.
    const auto context_weight = torch::randn({3, 6}, torch::kDouble);
    const auto alpha_weight = torch::randn(
        kind == "multihead" ? std::vector<int64_t>{3, 2, 5} : std::vector<int64_t>{3, 5}, torch::kDouble);
    const auto loss = [&] {
      const auto step = attention->forward(attention->remember(annotations, mask), h);
      return (step.context * context_weight).sum() + (step.alpha * alpha_weight).sum();
    };
    std::vector<std::pair<std::string, torch::Tensor>> tensors = {{"annotations", annotations}, {"h", h}};
    for (const auto& parameter : attention->named_parameters())
      tensors.emplace_back(parameter.key(), parameter.value());
    const auto error = testing::gradient_error(loss, tensors);
    EXPECT_LT(error.max_abs, 1e-7) << kind << " at " << error.where;
  }
}

// Coverage adds g_last alpha_{t-1} + g_cov sum_{s<t} alpha_s to any kind's scores, with
// (g_last, g_cov) = W_g q + b_g. Since softmax(e + x) = softmax(log softmax(e) + x), the kind's
// alpha without a history gives the expected one. Fresh gates are zero: the plain model.
TEST_F(AttentionTest, CoverageAddsTheGatedHistoryToEveryKindsScores) {
  for (const auto& kind : kKinds) {
    auto options = small_attention_options(kind);
    options.coverage = true;
    auto attention = build_attention(options);
    attention->to(torch::kDouble);
    ASSERT_TRUE(attention->coverage_gates) << kind;
    EXPECT_EQ(attention->coverage_gates->weight.sizes(), torch::IntArrayRef({2, attention->query_size()}));
    const auto memory = attention->remember(torch::randn({3, 5, 6}, torch::kDouble));
    const auto q = attention->project_query(torch::randn({3, 4}, torch::kDouble));
    const auto plain = attention->attend(memory, q).alpha;  // before the first step: no history
    auto looked = memory;
    looked.history.previous_alpha = torch::softmax(torch::randn(plain.sizes(), torch::kDouble), -1);
    looked.history.coverage = 3.0 * torch::rand(plain.sizes(), torch::kDouble);
    EXPECT_TRUE(torch::allclose(attention->attend(looked, q).alpha, plain, 1e-12, 1e-12)) << kind;
    {
      torch::NoGradGuard no_grad;
      attention->coverage_gates->weight.normal_();
      attention->coverage_gates->bias.normal_();
    }
    const auto gates = torch::nn::functional::linear(
        q, attention->coverage_gates->weight, attention->coverage_gates->bias);  // [3, 2]
    const auto gate = [&](int64_t which) {
      auto column = gates.select(1, which);
      while (column.dim() < plain.dim()) column = column.unsqueeze(-1);
      return column;
    };
    const auto expected = torch::softmax(
        torch::log(plain) + gate(0) * looked.history.previous_alpha + gate(1) * looked.history.coverage, -1);
    const auto actual = attention->attend(looked, q).alpha;
    EXPECT_TRUE(torch::allclose(actual, expected, 1e-10, 1e-12)) << kind;
    EXPECT_GT((actual - plain).abs().max().item<double>(), 1e-3) << kind;
    // The history after a step: its alpha last, added to the sum.
    const auto next = attention->after_step(looked.history, actual);
    EXPECT_TRUE(torch::equal(next.previous_alpha, actual)) << kind;
    EXPECT_TRUE(torch::allclose(next.coverage, looked.history.coverage + actual)) << kind;
  }
  auto plain_attention = build_attention(small_attention_options("additive"));
  EXPECT_FALSE(plain_attention->coverage_gates);
  const auto alpha = torch::softmax(torch::randn({3, 5}), -1);
  const auto first = plain_attention->after_step({}, alpha);
  EXPECT_TRUE(torch::equal(first.previous_alpha, alpha));
  EXPECT_FALSE(first.coverage.defined());  // kept only where it is read
}

// With coverage the gradient also runs through the history into the gates.
TEST_F(AttentionTest, CoverageGradientsMatchFiniteDifferences) {
  for (const auto& kind : {"additive", "multihead"}) {
    auto options = small_attention_options(kind);
    options.coverage = true;
    auto attention = build_attention(options);
    attention->to(torch::kDouble);
    {
      torch::NoGradGuard no_grad;
      attention->coverage_gates->weight.normal_();
      attention->coverage_gates->bias.normal_();
    }
    const auto annotations = torch::randn({3, 5, 6}, torch::kDouble).requires_grad_();
    const auto h = torch::randn({2, 3, 4}, torch::kDouble).requires_grad_();
    const auto alpha_weight = torch::randn({3, options.heads, 5}, torch::kDouble);
    const auto loss = [&] {  // two steps, so the second reads the first's alpha
      auto memory = attention->remember(annotations);
      const auto first = attention->forward(memory, h[0]);
      memory.history = attention->after_step(memory.history, first.alpha);
      const auto second = attention->forward(memory, h[1]);
      return (second.alpha.reshape({3, options.heads, 5}) * alpha_weight).sum() + second.context.sum();
    };
    std::vector<std::pair<std::string, torch::Tensor>> tensors = {{"annotations", annotations}, {"h", h}};
    for (const auto& parameter : attention->named_parameters())
      tensors.emplace_back(parameter.key(), parameter.value());
    const auto error = testing::gradient_error(loss, tensors);
    EXPECT_LT(error.max_abs, 1e-7) << kind << " at " << error.where;
  }
}

TEST_F(AttentionTest, AdditiveStepsMatchPlainAutogradInFloat) {
  // The additive kind's fused scores (a rational tanh in float; the keys' gradient added in place
  // across steps) against the formula in plain torch ops, over three steps whose active batch
  // shrinks 4 -> 4 -> 2 as in the decoder.
  auto attention = std::make_shared<AdditiveAttentionImpl>(small_attention_options("additive"));
  const auto annotations = torch::randn({4, 5, 6});
  const std::vector<int64_t> active = {4, 4, 2};
  std::vector<torch::Tensor> hs, weights;
  for (int64_t n : active) {
    hs.push_back(torch::randn({n, 4}).requires_grad_());
    weights.push_back(torch::randn({n, 6}));
  }
  const auto plain_loss = [&] {
    const auto keys = attention->key(annotations);  // [B, L, A]
    auto loss = torch::zeros({});
    for (size_t t = 0; t < active.size(); ++t) {
      const int64_t n = active[t];
      const auto hidden =
          torch::tanh(keys.narrow(0, 0, n) + attention->query(hs[t]).unsqueeze(1));  // [n, L, A]
      const auto alpha = torch::softmax(torch::matmul(hidden, attention->score->weight.squeeze(0)), 1);
      const auto context = torch::bmm(alpha.unsqueeze(1), annotations.narrow(0, 0, n)).squeeze(1);
      loss = loss + (context * weights[t]).sum() + alpha.pow(2).sum();
    }
    return loss;
  };
  const auto fused_loss = [&] {
    const auto memory = attention->remember(annotations);
    auto loss = torch::zeros({});
    for (size_t t = 0; t < active.size(); ++t) {
      const auto step = attention->forward(memory.head(active[t]), hs[t]);
      loss = loss + (step.context * weights[t]).sum() + step.alpha.pow(2).sum();
    }
    return loss;
  };
  std::vector<torch::Tensor> inputs = attention->parameters();
  inputs.insert(inputs.end(), hs.begin(), hs.end());
  const auto expected = plain_loss();
  const auto expected_grads = torch::autograd::grad({expected}, inputs);
  const auto actual = fused_loss();
  const auto actual_grads = torch::autograd::grad({actual}, inputs);
  EXPECT_NEAR(actual.item<float>(), expected.item<float>(), 1e-4);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_TRUE(torch::allclose(actual_grads[i], expected_grads[i], 1e-4, 1e-5)) << "input " << i;
  }
}

TEST_F(AttentionTest, ProjectedQueryPathEqualsForward) {
  // The decoder feeds attend() a query from its own fused GEMM; it must agree with forward().
  for (const auto& kind : kKinds) {
    auto attention = build_attention(small_attention_options(kind));
    const auto memory = attention->remember(torch::randn({3, 5, 6}));
    const auto h = torch::randn({3, 4});
    auto q = h;
    if (attention->query_weight().defined()) {
      q = torch::matmul(h, attention->query_weight().t());
      if (attention->query_bias().defined()) q = q + attention->query_bias();
    }
    EXPECT_EQ(q.size(1), attention->query_size()) << kind;
    const auto expected = attention->forward(memory, h);
    const auto actual = attention->attend(memory, q);
    EXPECT_TRUE(torch::allclose(actual.context, expected.context, 1e-5, 1e-6)) << kind;
  }
}

TEST_F(AttentionTest, MemoryReordersAndExpandsForBeams) {
  auto attention = build_attention(small_attention_options("additive"));
  const auto annotations = torch::randn({3, 5, 6});
  const auto h = torch::randn({3, 4});
  const auto memory = attention->remember(annotations);
  const auto index = torch::tensor({2, 2, 0}, torch::kLong);
  const auto expanded = memory.index_select(index);
  EXPECT_EQ(expanded.size(), 3);
  const auto step = attention->forward(expanded, h.index_select(0, index));
  const auto reference = attention->forward(memory, h);
  EXPECT_TRUE(torch::allclose(step.context[1], reference.context[2]));
  EXPECT_TRUE(torch::allclose(step.context[2], reference.context[0]));
  EXPECT_EQ(memory.head(2).size(), 2);
}

// Images leaving a search: every kind (local included), beams of 1 and 2, float and double, a
// mask, two selections in a row. Where the CPU kernels run, the beams share their image's keys and
// values and the selection reads them in place (no copy; its index composes); elsewhere it copies
// them. Either way each row attends as its image's row of the whole memory does.
TEST_F(AttentionTest, SelectedImagesReadTheirMemoryInPlace) {
  torch::NoGradGuard no_grad;
  auto kinds = kKinds;
  kinds.push_back("local");
  for (const auto& kind : kinds) {
    for (const auto& [dtype, beams] : std::vector<std::pair<torch::ScalarType, int64_t>>{
             {torch::kFloat, 1}, {torch::kFloat, 2}, {torch::kDouble, 2}}) {
      auto options = small_attention_options(kind);
      options.grid = {1, 5};
      options.window = 1;
      auto attention = build_attention(options);
      attention->to(dtype);
      const auto annotations = torch::randn({4, 5, 6}, dtype);
      auto mask = torch::ones({4, 5}, torch::kBool);
      mask[1][4] = false;
      const auto whole = attention->for_beams(attention->remember(annotations, mask), beams);
      const auto h = torch::randn({4 * beams, 4}, dtype);
      const auto reference = attention->forward(whole, h);
      const auto rows_of = [&](const std::vector<int64_t>& images) {
        std::vector<int64_t> rows;
        for (const int64_t image : images)
          for (int64_t beam = 0; beam < beams; ++beam) rows.push_back(image * beams + beam);
        return torch::tensor(rows, torch::kLong);
      };
      const bool in_place = best_kernel_isa() != KernelIsa::none;
      const std::string where =
          kind + ", " + std::string(c10::toString(dtype)) + ", " + std::to_string(beams) + " beams";
      // As DecoderState::select_images: a memory the beams could not share (no kernels) holds a
      // row per beam, and takes its rows.
      const auto select = [&](const AttentionMemory& memory, const std::vector<int64_t>& images) {
        return memory.beams == beams
                   ? memory.select_images(torch::tensor(images, torch::kLong), rows_of(images))
                   : memory.index_select(rows_of(images));
      };
      EXPECT_EQ(whole.beams, in_place ? beams : 1) << where;
      if (whole.beams == beams) {
        EXPECT_THROW(whole.select_images(torch::tensor({0, 1}, torch::kLong), rows_of({0})), c10::Error)
            << where;
      }
      const auto first = select(whole, {0, 1, 3});
      const auto second = select(first, {2, 1});
      const auto rows = rows_of({3, 1});  // what `second` holds, in order
      ASSERT_EQ(second.size(), 2 * beams) << where;
      EXPECT_EQ(second.values.data_ptr() == whole.values.data_ptr(), in_place) << where;
      if (in_place) {
        EXPECT_TRUE(torch::equal(second.images, torch::tensor({3, 1}, torch::kLong))) << where;
      }
      const auto step = attention->forward(second, h.index_select(0, rows));
      EXPECT_LT((step.context - reference.context.index_select(0, rows)).abs().max().item<double>(), 1e-5)
          << where;
      EXPECT_LT((step.alpha - reference.alpha.index_select(0, rows)).abs().max().item<double>(), 1e-6)
          << where;
    }
  }
}

TEST_F(AttentionTest, ValidationNamesTheProblem) {
  auto options = small_attention_options("bahdanau");
  try {
    validate(options);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    const std::string expected =
        "Unknown attention kind 'bahdanau'; known attention kinds: additive, dot, general, local, "
        "multihead, scaled_dot";
    EXPECT_EQ(std::string(error.what()).rfind(expected, 0), 0u) << error.what();
  }
  options = small_attention_options("multihead");
  options.heads = 3;  // 8 is not divisible by 3
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = small_attention_options("additive");
  options.dim = 0;
  EXPECT_THROW(build_attention(options), std::invalid_argument);
  const auto annotations = torch::randn({3, 5, 7});  // D = 7, expected 6
  EXPECT_THROW(build_attention(small_attention_options("dot"))->remember(annotations), std::invalid_argument);
  EXPECT_THROW(
      build_attention(small_attention_options("dot"))
          ->remember(torch::randn({3, 5, 6}), torch::ones({3, 4}, torch::kBool)),
      std::invalid_argument);
}

TEST_F(AttentionTest, RegistryAcceptsNewKindsAndRejectsTakenNames) {
  static int registrations = 0;  // unique per run, so --gtest_repeat works
  const std::string kind = "test_general_copy_" + std::to_string(registrations++);
  const AttentionBuilder builder = [](const AttentionOptions& options) {
    return Attention(std::shared_ptr<AttentionImpl>(std::make_shared<GeneralAttentionImpl>(options)));
  };
  attention_registry().add(kind, builder);
  const auto kinds = attention_registry().names();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end());
  auto attention = build_attention(small_attention_options(kind));
  const auto step = attention->forward(attention->remember(torch::randn({1, 5, 6})), torch::randn({1, 4}));
  EXPECT_EQ(step.alpha.sizes(), torch::IntArrayRef({1, 5}));
  EXPECT_THROW(attention_registry().add(kind, builder), std::invalid_argument);
  EXPECT_THROW(attention_registry().add("additive", builder), std::invalid_argument);
}

// local on a 5 x 6 grid (L = 30) with the dims of small_options.
AttentionOptions local_options(int64_t window) {
  auto options = small_attention_options("local");
  options.grid = {5, 6};
  options.window = window;
  return options;
}

// The cells within `window` rows and columns of the cell nearest `centre` [2]: [L] bool.
torch::Tensor window_cells(const torch::Tensor& centre, int64_t rows, int64_t columns, int64_t window) {
  auto inside = torch::zeros({rows * columns}, torch::kBool);
  const int64_t row = std::lround(centre[0].item<double>()), column = std::lround(centre[1].item<double>());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c)
      if (std::abs(r - row) <= window && std::abs(c - column) <= window) inside[r * columns + c] = true;
  return inside;
}

TEST_F(AttentionTest, LocalWeightsAreZeroOutsideTheWindowAndSumToOne) {
  for (int64_t window : {1, 2}) {
    auto attention = std::make_shared<LocalAttentionImpl>(local_options(window));
    const auto annotations = torch::randn({8, 30, 6});
    const auto h = 3 * torch::randn({8, 4});  // centres spread over the grid
    const auto step = attention->forward(attention->remember(annotations), h);
    const auto centre = attention->window_centre(attention->project_query(h));
    for (int64_t b = 0; b < 8; ++b) {
      const auto inside = window_cells(centre[b], 5, 6, window);
      EXPECT_EQ(step.alpha[b].masked_select(inside.logical_not()).abs().max().item<float>(), 0.0f) << b;
      EXPECT_GT(step.alpha[b].masked_select(inside).min().item<float>(), 0.0f) << b;
      EXPECT_NEAR(step.alpha[b].sum().item<float>(), 1.0f, 1e-6) << b;
    }
  }
}

TEST_F(AttentionTest, LocalCentreAtTheGridsMiddleWhenItsLogitsAreZero) {
  // v_p = 0, bias 0: p = (Hg - 1, Wg - 1) * sigmoid(0) = (2, 2.5) on the 5 x 6 grid; the nearest
  // cell rounds half to even, (2, 2), so window 1 keeps rows 1-3 and columns 1-3.
  auto attention = std::make_shared<LocalAttentionImpl>(local_options(1));
  set_linear(attention->centre_out, torch::zeros({2, 8}), torch::zeros({2}));
  const auto h = torch::randn({2, 4});
  const auto centre = attention->window_centre(attention->project_query(h));
  EXPECT_TRUE(torch::allclose(centre, torch::tensor({{2.0f, 2.5f}, {2.0f, 2.5f}})));
  const auto alpha = attention->forward(attention->remember(torch::randn({2, 30, 6})), h).alpha;
  std::vector<int64_t> kept;
  for (int64_t l = 0; l < 30; ++l)
    if (alpha[0][l].item<float>() > 0) kept.push_back(l);
  EXPECT_EQ(kept, (std::vector<int64_t>{7, 8, 9, 13, 14, 15, 19, 20, 21}));
}

TEST_F(AttentionTest, LocalIsAdditiveTimesAGaussianRenormalizedOverTheWindow) {
  // Luong's form: the additive kind's softmax over all L, times exp(-|s - p|^2 / (2 sigma^2)) with
  // sigma = window / 2, kept in the window and divided by its sum. The centre p is predicted, or
  // with a monotonic centre the peak cell of the previous alpha.
  for (LocalCentre mode : {LocalCentre::predicted, LocalCentre::monotonic}) {
    SCOPED_TRACE(to_string(mode));
    auto options = local_options(2);
    options.centre = mode;
    auto attention = std::make_shared<LocalAttentionImpl>(options);
    attention->to(torch::kDouble);
    auto additive = std::make_shared<AdditiveAttentionImpl>(small_attention_options("additive"));
    additive->to(torch::kDouble);
    set_linear(additive->key, attention->key->weight.detach(), attention->key->bias.detach());
    set_linear(additive->query, attention->query->weight.detach());
    set_linear(additive->score, attention->score->weight.detach());
    const auto annotations = torch::randn({4, 30, 6}, torch::kDouble);
    const auto h = 3 * torch::randn({4, 4}, torch::kDouble);
    const auto global = additive->forward(additive->remember(annotations), h).alpha;  // [B, L]
    auto memory = attention->remember(annotations);
    // Previous peaks at cells 0 (a corner), 29 (the other), 14 (row 2, column 2) and 9 (row 1, column 3).
    memory.history.previous_alpha = torch::full({4, 30}, 0.01, torch::kDouble);
    const int64_t peaks[4] = {0, 29, 14, 9};
    for (int64_t b = 0; b < 4; ++b) memory.history.previous_alpha[b][peaks[b]] = 0.5;
    const auto centre = mode == LocalCentre::predicted
                            ? attention->window_centre(attention->project_query(h))
                            : torch::tensor({{0.0, 0.0}, {4.0, 5.0}, {2.0, 2.0}, {1.0, 3.0}}, torch::kDouble);
    const auto actual = attention->forward(memory, h);
    for (int64_t b = 0; b < 4; ++b) {
      auto expected = torch::zeros({30}, torch::kDouble);
      const auto inside = window_cells(centre[b], 5, 6, 2);
      for (int64_t l = 0; l < 30; ++l) {
        const double dy = l / 6 - centre[b][0].item<double>(), dx = l % 6 - centre[b][1].item<double>();
        if (inside[l].item<bool>()) expected[l] = global[b][l] * std::exp(-(dy * dy + dx * dx) / 2.0);
      }
      expected /= expected.sum();
      EXPECT_TRUE(torch::allclose(actual.alpha[b], expected, 1e-10, 1e-12)) << b;
      EXPECT_TRUE(torch::allclose(actual.context[b], torch::matmul(expected, annotations[b]), 1e-10, 1e-12))
          << b;
    }
  }
}

TEST_F(AttentionTest, LocalGradientsMatchFiniteDifferences) {
  // The centre's parameters get their gradient through the Gaussian; the window itself is fixed
  // by rounding, constant under the probes' small steps.
  auto attention = std::make_shared<LocalAttentionImpl>(local_options(2));
  attention->to(torch::kDouble);
  const auto annotations = torch::randn({3, 30, 6}, torch::kDouble).requires_grad_();
  const auto h = torch::randn({3, 4}, torch::kDouble).requires_grad_();
  const auto context_weight = torch::randn({3, 6}, torch::kDouble);
  const auto alpha_weight = torch::randn({3, 30}, torch::kDouble);
  const auto loss = [&] {
    const auto step = attention->forward(attention->remember(annotations), h);
    return (step.context * context_weight).sum() + (step.alpha * alpha_weight).sum();
  };
  std::vector<std::pair<std::string, torch::Tensor>> tensors = {{"annotations", annotations}, {"h", h}};
  for (const auto& parameter : attention->named_parameters())
    tensors.emplace_back(parameter.key(), parameter.value());
  const auto error = testing::gradient_error(loss, tensors);
  EXPECT_LT(error.max_abs, 1e-7) << error.where;
}

TEST_F(AttentionTest, LocalRefusesAWindowLargerThanTheGridAndAWrongGrid) {
  const auto message = [](const AttentionOptions& options) {
    try {
      validate(options);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(local_options(2)), "no error");  // 5 cells, within the grid's longer side
  EXPECT_EQ(message(local_options(3)), "window 3 spans 7 x 7 cells, more than the 5 x 6 grid; at most 2");
  EXPECT_EQ(message(local_options(0)), "window must be >= 1 cell on each side of the centre, got 0");
  auto unknown = local_options(1);
  unknown.grid = {0, 0};
  EXPECT_EQ(
      message(unknown),
      "local attention needs the grid's size (encoder.grid): its window is counted in grid cells");
  auto attention = std::make_shared<LocalAttentionImpl>(local_options(1));
  try {
    attention->remember(torch::randn({1, 29, 6}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()), "Local attention over a 5 x 6 grid expects 30 locations, got 29");
  }
}

TEST(HardContextReader, DecodingReadsTheMostLikelyLocation) {
  const auto alpha = torch::tensor({{{0.2, 0.5, 0.3}}, {{0.6, 0.1, 0.3}}});  // [B=2, N=1, L=3]
  const auto weights = HardContextReader(false).weights(alpha);
  EXPECT_TRUE(torch::equal(weights, torch::tensor({{{0.0, 1.0, 0.0}}, {{1.0, 0.0, 0.0}}})));
}

TEST(HardContextReader, SamplesLocationsWithTheirProbabilities) {
  torch::manual_seed(0);
  const int64_t rows = 40000;
  // Location 3 is masked (alpha 0): it is never chosen.
  const auto probabilities = torch::tensor({0.1, 0.6, 0.3, 0.0});
  const auto weights = HardContextReader(true).weights(probabilities.expand({rows, 1, 4}));  // [B, 1, 4]
  EXPECT_TRUE(torch::equal(weights.sum(-1), torch::ones({rows, 1})));                        // one-hot rows
  const auto frequencies = weights.mean(0).squeeze(0);
  EXPECT_TRUE(torch::allclose(frequencies, probabilities, 0.0, 0.01)) << frequencies;
  EXPECT_EQ(frequencies[3].item<float>(), 0.0f);
}

TEST(HardContextReader, ExpectationRowsReadAlphaWithItsGradient) {
  torch::manual_seed(0);
  const auto logits = torch::randn({2, 1, 5}, torch::requires_grad());
  const auto alpha = torch::softmax(logits, -1);
  // Four captions flagged, the batch has shrunk to its first two: row 0 samples, row 1 reads alpha.
  const HardContextReader reader(true, torch::tensor({false, true, false, true}));
  const auto weights = reader.weights(alpha);
  EXPECT_EQ(weights[0].max().item<float>(), 1.0f);
  EXPECT_TRUE(torch::equal(weights[1], alpha[1]));
  (weights * torch::arange(5.0)).sum().backward();
  // No gradient reaches alpha through a sampled choice; the expectation row's flows as in soft attention.
  EXPECT_EQ(logits.grad()[0].abs().sum().item<float>(), 0.0f);
  EXPECT_GT(logits.grad()[1].abs().sum().item<float>(), 0.0f);
}

TEST(HardContextReader, ContextIsTheChosenAnnotationExactly) {
  torch::manual_seed(0);
  AttentionOptions options;
  options.annotation_dim = 6;
  options.query_dim = 5;
  options.dim = 4;
  Attention attention = build_attention(options);
  const auto annotations = torch::randn({3, 7, 6});
  const auto step =
      attention->forward(attention->remember(annotations), torch::randn({3, 5}), HardContextReader(true));
  const auto chosen = step.weights.argmax(1);  // [B]
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_TRUE(torch::equal(step.context[b], annotations[b][chosen[b].item<int64_t>()])) << b;
  }
}

}  // namespace
}  // namespace saccade
