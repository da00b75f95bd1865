// AttentionLSTMDecoder against a naive per-step reference built from torch's own LSTMCell, finite
// differences, and its own step API.
#include "models/attention_lstm_decoder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <tuple>

#include "config/config.h"
#include "finite_difference.h"
#include "kernels/kernel_isa.h"
#include "test_util.h"

namespace saccade {
namespace {

class DecoderTest : public ::testing::Test {
 protected:
  DecoderTest() { torch::manual_seed(0); }
};

// V=11 words, D=6, E=5, H=7, A=8 (multihead: 2 heads); images have L=4 locations.
DecoderOptions small_options(
    const std::string& kind = "additive", Gate gate = Gate::scalar, bool deep_output = true) {
  DecoderOptions options;
  options.vocab_size = 11;
  options.annotation_dim = 6;
  options.lstm.embed_dim = 5;
  options.lstm.hidden_dim = 7;
  options.lstm.attention_kind = kind;
  options.lstm.attention_dim = 8;
  options.lstm.attention_heads = kind == "multihead" ? 2 : 1;
  options.lstm.gate = gate;
  options.lstm.deep_output = deep_output;
  options.dropout = 0.5;
  return options;
}

struct Batch {
  torch::Tensor annotations;  // [B, L, D]
  torch::Tensor tokens;       // [B, T]
  torch::Tensor lengths;      // [B]
};

// Three captions of lengths 2, 4, 3 (deliberately unsorted), T = 4, over L locations.
Batch small_batch(torch::Dtype dtype = torch::kFloat, int64_t locations = 4) {
  return {
      torch::randn({3, locations, 6}, dtype), torch::randint(11, {3, 4}, torch::kLong),
      torch::tensor({2, 4, 3}, torch::kLong)};
}

// The model written step by step over the full batch, the way the paper states it, with torch's
// LSTMCell for eq. 1-3. Outputs at t >= lengths[b] are zeroed.
DecoderOutput naive_forward(AttentionLSTMDecoderImpl& decoder, const Batch& batch) {
  const int64_t T = batch.tokens.size(1);
  const auto mean = batch.annotations.mean(1);
  const int64_t B = batch.annotations.size(0);
  auto h = decoder.init_h ? torch::tanh(decoder.init_h(mean)) : torch::tanh(decoder.initial_h).repeat({B, 1});
  auto c = decoder.init_c ? torch::tanh(decoder.init_c(mean)) : torch::tanh(decoder.initial_c).repeat({B, 1});
  auto memory = decoder.attention->remember(batch.annotations);
  std::vector<torch::Tensor> logits, alphas, gates;
  for (int64_t t = 0; t < T; ++t) {
    const auto emb = decoder.embedding(batch.tokens.select(1, t));
    // eq. 4 with the query W_h h_{t-1} (+ W_y E y_{t-1} when the query reads the word too)
    auto query = decoder.attention->project_query(h);
    if (decoder.query_word) query = query + decoder.query_word(emb);
    const auto attended = decoder.attention->attend(memory, query);
    // What a monotonic local centre follows, and with coverage the sum of every alpha so far.
    auto& history = memory.history;
    if (decoder.options().lstm.attention_coverage)
      history.coverage = history.coverage.defined() ? history.coverage + attended.alpha : attended.alpha;
    history.previous_alpha = attended.alpha;
    auto z = attended.context;
    if (decoder.gate) {
      gates.push_back(torch::sigmoid(decoder.gate(h)));
      z = gates.back() * z;
    }
    std::tie(h, c) = decoder.lstm(torch::cat({emb, z}, 1), std::make_tuple(h, c));
    logits.push_back(
        decoder.options().lstm.deep_output
            ? decoder.out(torch::tanh(emb + decoder.out_h(h) + decoder.out_z(z)))
            : decoder.out(h));
    alphas.push_back(attended.alpha);
  }
  const auto real = torch::arange(T).unsqueeze(0) < batch.lengths.unsqueeze(1);  // [B, T]
  const auto masked = [&](const std::vector<torch::Tensor>& steps) {
    auto stacked = torch::stack(steps, 1);
    auto mask = real;
    while (mask.dim() < stacked.dim()) mask = mask.unsqueeze(-1);
    return stacked * mask;
  };
  DecoderOutput out;
  out.logits = masked(logits);
  out.alphas = masked(alphas);
  if (!gates.empty()) out.gates = masked(gates);
  return out;
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

// Steps through the batch's words from init_state, with gradients and without (as decoding runs
// them), comparing each real step's logits, alpha and gate (where there is one) with `forward`.
void expect_steps_reproduce(
    AttentionLSTMDecoderImpl& decoder,
    const Batch& batch,
    const DecoderOutput& forward,
    const std::string& label,
    double logit_tolerance,
    double alpha_tolerance) {
  for (const bool gradients : {true, false}) {
    torch::AutoGradMode grad_mode(gradients);
    auto state = decoder.init_state(batch.annotations);
    for (int64_t t = 0; t < batch.tokens.size(1); ++t) {
      const auto step = decoder.step(state, batch.tokens.select(1, t));
      state = step.state;
      for (int64_t b = 0; b < batch.tokens.size(0); ++b) {
        if (t >= batch.lengths[b].item<int64_t>()) continue;
        const std::string where = label + (gradients ? "" : " without gradients") +
                                  " b=" + std::to_string(b) + " t=" + std::to_string(t);
        EXPECT_LT(max_diff(step.logits[b], forward.logits[b][t]), logit_tolerance) << where;
        EXPECT_LT(max_diff(step.alpha[b], forward.alphas[b][t]), alpha_tolerance) << where;
        if (forward.gates.defined()) {
          EXPECT_LT(max_diff(step.gate[b], forward.gates[b][t]), alpha_tolerance) << where;
        }
      }
    }
  }
}

TEST_F(DecoderTest, ForwardMatchesNaivePerStepReference) {
  for (const std::string kind : {"additive", "dot", "scaled_dot", "general", "multihead"}) {
    for (Gate gate : {Gate::none, Gate::scalar, Gate::vector}) {
      for (bool deep_output : {false, true}) {
        AttentionLSTMDecoder decoder(small_options(kind, gate, deep_output));
        decoder->to(torch::kDouble);
        decoder->eval();
        const auto batch = small_batch(torch::kDouble);
        const auto actual = decoder->forward(batch.annotations, batch.tokens, batch.lengths);
        const auto expected = naive_forward(*decoder, batch);
        const std::string label = kind + "/" + to_string(gate) + "/deep=" + std::to_string(deep_output);
        EXPECT_LT(max_diff(actual.logits, expected.logits), 1e-12) << label;
        EXPECT_LT(max_diff(actual.alphas, expected.alphas), 1e-12) << label;
        ASSERT_EQ(actual.gates.defined(), gate != Gate::none) << label;
        if (gate != Gate::none) {
          EXPECT_LT(max_diff(actual.gates, expected.gates), 1e-12) << label;
        }
      }
    }
  }
}

// The query hidden_and_word adds W_y E y_{t-1} to every kind's query: forward, and each step
// with and without gradients, against the naive reference; and the word does move alpha.
TEST_F(DecoderTest, AQueryReadingTheWordMatchesTheNaiveReference) {
  for (const std::string kind : {"additive", "dot", "general", "multihead", "local"}) {
    auto options = small_options(kind);
    options.lstm.attention_query = AttentionQuery::hidden_and_word;
    options.grid = {3, 3};
    options.lstm.attention_window = 1;
    AttentionLSTMDecoder decoder(options);
    decoder->to(torch::kDouble);
    decoder->eval();
    ASSERT_TRUE(decoder->query_word) << kind;
    const auto batch = small_batch(torch::kDouble, 9);
    const auto actual = decoder->forward(batch.annotations, batch.tokens, batch.lengths);
    const auto expected = naive_forward(*decoder, batch);
    EXPECT_LT(max_diff(actual.logits, expected.logits), 1e-12) << kind;
    EXPECT_LT(max_diff(actual.alphas, expected.alphas), 1e-12) << kind;
    for (const bool gradients : {true, false}) {
      torch::AutoGradMode grad_mode(gradients);
      const auto step = decoder->step(decoder->init_state(batch.annotations), batch.tokens.select(1, 0));
      EXPECT_LT(max_diff(step.logits, actual.logits.select(1, 0)), 1e-12) << kind << " " << gradients;
      EXPECT_LT(max_diff(step.alpha, actual.alphas.select(1, 0)), 1e-12) << kind << " " << gradients;
    }
    torch::NoGradGuard no_grad;
    decoder->query_word->weight.zero_();
    const auto without_word = decoder->forward(batch.annotations, batch.tokens, batch.lengths);
    EXPECT_GT(max_diff(without_word.alphas, actual.alphas), 1e-3) << kind;
  }
}

// Coverage (every kind's scores read the history through gates of the query): forward against
// the naive reference, which keeps the history itself; each step, with and without gradients,
// reproduces forward; the gates do move alpha.
TEST_F(DecoderTest, CoverageMatchesTheNaiveReferenceStepByStep) {
  for (const std::string kind : {"additive", "dot", "multihead", "local"}) {
    auto options = small_options(kind);
    options.lstm.attention_coverage = true;
    options.lstm.attention_query = AttentionQuery::hidden_and_word;
    options.grid = {3, 3};
    options.lstm.attention_window = 1;
    AttentionLSTMDecoder decoder(options);
    decoder->to(torch::kDouble);
    decoder->eval();
    auto& gates = decoder->attention->coverage_gates;
    ASSERT_TRUE(gates) << kind;
    const auto batch = small_batch(torch::kDouble, 9);
    const auto without = decoder->forward(batch.annotations, batch.tokens, batch.lengths);
    {
      torch::NoGradGuard no_grad;
      gates->weight.normal_(0.0, 2.0);
      gates->bias.normal_(0.0, 2.0);
    }
    const auto actual = decoder->forward(batch.annotations, batch.tokens, batch.lengths);
    const auto expected = naive_forward(*decoder, batch);
    EXPECT_LT(max_diff(actual.logits, expected.logits), 1e-12) << kind;
    EXPECT_LT(max_diff(actual.alphas, expected.alphas), 1e-12) << kind;
    EXPECT_GT(max_diff(actual.alphas, without.alphas), 1e-3) << kind;
    expect_steps_reproduce(*decoder, batch, actual, kind, 1e-10, 1e-10);
  }
}

// A learned initial state is tanh of its parameters for every image, whatever the image; the
// whole model still matches the naive reference.
TEST_F(DecoderTest, ALearnedInitialStateIsTheSameForEveryImage) {
  auto options = small_options();
  options.lstm.initial_state = InitialState::learned;
  AttentionLSTMDecoder decoder(options);
  decoder->to(torch::kDouble);
  decoder->eval();
  EXPECT_FALSE(decoder->init_h);
  {
    torch::NoGradGuard no_grad;
    decoder->initial_h.uniform_(-2.0, 2.0);
    decoder->initial_c.uniform_(-2.0, 2.0);
  }
  const auto batch = small_batch(torch::kDouble);
  const auto state = decoder->init_state(batch.annotations);
  const auto other = decoder->init_state(torch::randn_like(batch.annotations));
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_TRUE(torch::allclose(state.h[b], torch::tanh(decoder->initial_h))) << b;
    EXPECT_TRUE(torch::allclose(state.c[b], torch::tanh(decoder->initial_c))) << b;
  }
  EXPECT_TRUE(torch::equal(state.h, other.h));
  const auto actual = decoder->forward(batch.annotations, batch.tokens, batch.lengths);
  const auto expected = naive_forward(*decoder, batch);
  EXPECT_LT(max_diff(actual.logits, expected.logits), 1e-12);
  EXPECT_LT(max_diff(actual.alphas, expected.alphas), 1e-12);
}

TEST_F(DecoderTest, LocalAttentionMatchesTheNaiveReferenceStepByStep) {
  // local on a 3 x 3 grid with a 3 x 3 window: the fused query [W_h; W_p] h must reach the centre,
  // and a monotonic centre must follow the previous step's peak.
  for (LocalCentre centre : {LocalCentre::predicted, LocalCentre::monotonic}) {
    SCOPED_TRACE(to_string(centre));
    auto options = small_options("local");
    options.grid = {3, 3};
    options.lstm.attention_window = 1;
    options.lstm.attention_centre = centre;
    AttentionLSTMDecoder decoder(options);
    decoder->to(torch::kDouble);
    decoder->eval();
    const auto batch = small_batch(torch::kDouble, 9);
    const auto actual = decoder->forward(batch.annotations, batch.tokens, batch.lengths);
    const auto expected = naive_forward(*decoder, batch);
    EXPECT_LT(max_diff(actual.logits, expected.logits), 1e-12);
    EXPECT_LT(max_diff(actual.alphas, expected.alphas), 1e-12);
    auto state = decoder->init_state(batch.annotations);
    for (int64_t t = 0; t < 2; ++t) {  // every caption is still running
      const auto step = decoder->step(state, batch.tokens.select(1, t));
      state = step.state;
      EXPECT_LT(max_diff(step.logits, actual.logits.select(1, t)), 1e-12) << t;
      EXPECT_LT(max_diff(step.alpha, actual.alphas.select(1, t)), 1e-12) << t;
    }
  }
}

TEST_F(DecoderTest, ReorderingBeamsMovesTheirHistoryAndKeepsTheKeys) {
  auto options = small_options("local");
  options.grid = {3, 3};
  options.lstm.attention_window = 1;
  options.lstm.attention_centre = LocalCentre::monotonic;
  options.lstm.attention_coverage = true;
  AttentionLSTMDecoder decoder(options);
  const auto batch = small_batch(torch::kFloat, 9);
  auto state = decoder->init_state(batch.annotations);
  for (int64_t t = 0; t < 2; ++t) state = decoder->step(state, batch.tokens.select(1, t)).state;
  const auto& history = state.memory.history;
  ASSERT_TRUE(history.previous_alpha.defined());
  ASSERT_TRUE(history.coverage.defined());
  EXPECT_TRUE(torch::allclose(history.coverage.sum(1), torch::full({3}, 2.0)));  // two steps' alphas
  const auto index = torch::tensor({2, 0, 1}, torch::kLong);
  const auto reordered = state.reorder_beams(index);
  for (int64_t row = 0; row < 3; ++row) {
    const int64_t from = index[row].item<int64_t>();
    EXPECT_TRUE(torch::equal(reordered.memory.history.previous_alpha[row], history.previous_alpha[from]))
        << row;
    EXPECT_TRUE(torch::equal(reordered.memory.history.coverage[row], history.coverage[from])) << row;
    EXPECT_TRUE(torch::equal(reordered.h[row], state.h[from])) << row;
    EXPECT_TRUE(torch::equal(reordered.c[row], state.c[from])) << row;
  }
  EXPECT_EQ(reordered.memory.keys.data_ptr(), state.memory.keys.data_ptr());  // not copied
}

// Steps with gradients take the plain ops; without (as decoding runs them), the kernels: the
// dot-product kinds' transposed keys among them. Both reproduce forward, which takes gradients.
TEST_F(DecoderTest, StepReproducesForward) {
  for (const std::string kind : {"additive", "dot", "scaled_dot", "general", "multihead"}) {
    for (bool deep_output : {false, true}) {
      AttentionLSTMDecoder decoder(small_options(kind, Gate::vector, deep_output));
      decoder->eval();  // dropout off
      const auto batch = small_batch();
      const auto forward = decoder->forward(batch.annotations, batch.tokens, batch.lengths);
      for (const bool gradients : {true, false}) {
        torch::AutoGradMode grad_mode(gradients);
        const bool transposed = !gradients && kind != "additive" && best_kernel_isa() != KernelIsa::none;
        EXPECT_EQ(decoder->init_state(batch.annotations).memory.keys_t.defined(), transposed) << kind;
      }
      expect_steps_reproduce(*decoder, batch, forward, kind, 1e-5, 1e-6);
    }
  }
}

TEST_F(DecoderTest, ShapesPerGateAndZerosAtPadding) {
  const std::vector<std::pair<Gate, int64_t>> widths = {
      {Gate::none, 0}, {Gate::scalar, 1}, {Gate::vector, 6}};
  for (const auto& [gate, width] : widths) {
    AttentionLSTMDecoder decoder(small_options("additive", gate));
    const auto batch = small_batch();
    const auto out = decoder->forward(batch.annotations, batch.tokens, batch.lengths);
    EXPECT_EQ(out.logits.sizes(), torch::IntArrayRef({3, 4, 11}));
    EXPECT_EQ(out.alphas.sizes(), torch::IntArrayRef({3, 4, 4}));
    if (gate == Gate::none) {
      EXPECT_FALSE(out.gates.defined());
    } else {
      EXPECT_EQ(out.gates.sizes(), torch::IntArrayRef({3, 4, width}));
      EXPECT_EQ(out.gates[0][2].abs().sum().item<float>(), 0.0f);
    }
    // Caption 0 has 2 steps: steps 2 and 3 are padding.
    EXPECT_EQ(out.logits[0].narrow(0, 2, 2).abs().sum().item<float>(), 0.0f);
    EXPECT_EQ(out.alphas[2][3].abs().sum().item<float>(), 0.0f);
    EXPECT_NEAR(out.alphas[1][3].sum().item<float>(), 1.0f, 1e-6);
  }
  AttentionLSTMDecoder multihead(small_options("multihead"));
  const auto batch = small_batch();
  EXPECT_EQ(
      multihead->forward(batch.annotations, batch.tokens, batch.lengths).alphas.sizes(),
      torch::IntArrayRef({3, 4, 2, 4}));
}

TEST_F(DecoderTest, GradientsMatchFiniteDifferences) {
  using Variant = std::tuple<Gate, bool, AttentionQuery, InitialState, bool>;
  for (const auto& [gate, deep_output, query, initial, coverage] : std::vector<Variant>{
           {Gate::scalar, true, AttentionQuery::hidden, InitialState::mean_annotation, false},
           {Gate::vector, false, AttentionQuery::hidden, InitialState::mean_annotation, false},
           {Gate::scalar, true, AttentionQuery::hidden_and_word, InitialState::learned, false},
           {Gate::scalar, true, AttentionQuery::hidden_and_word, InitialState::mean_annotation, true}}) {
    auto options = small_options("additive", gate, deep_output);
    options.lstm.attention_query = query;
    options.lstm.initial_state = initial;
    options.lstm.attention_coverage = coverage;
    options.vocab_size = 5;
    options.annotation_dim = 3;
    options.lstm.embed_dim = 2;
    options.lstm.hidden_dim = 3;
    options.lstm.attention_dim = 2;
    AttentionLSTMDecoder decoder(options);
    decoder->to(torch::kDouble);
    decoder->eval();
    if (coverage) {
      torch::NoGradGuard no_grad;
      decoder->attention->coverage_gates->weight.normal_();
      decoder->attention->coverage_gates->bias.normal_();
    }
    const auto annotations = torch::randn({3, 4, 3}, torch::kDouble).requires_grad_();
    const auto tokens = torch::randint(5, {3, 3}, torch::kLong);
    const auto lengths = torch::tensor({2, 3, 1}, torch::kLong);
    const auto logit_weight = torch::randn({3, 3, 5}, torch::kDouble);
    const auto alpha_weight = torch::randn({3, 3, 4}, torch::kDouble);
    const auto gate_weight = torch::randn({3, 3, gate == Gate::scalar ? 1 : 3}, torch::kDouble);
    const auto loss = [&] {
      const auto out = decoder->forward(annotations, tokens, lengths);
      return (out.logits * logit_weight).sum() + (out.alphas * alpha_weight).sum() +
             (out.gates * gate_weight).sum();
    };
    std::vector<std::pair<std::string, torch::Tensor>> tensors = {{"annotations", annotations}};
    for (const auto& parameter : decoder->named_parameters())
      tensors.emplace_back(parameter.key(), parameter.value());
    const auto error = testing::gradient_error(loss, tensors);
    EXPECT_LT(error.max_abs, 1e-7) << to_string(gate) << " deep=" << deep_output << " " << to_string(query)
                                   << " " << to_string(initial) << " coverage=" << coverage << " at "
                                   << error.where;
  }
}

TEST_F(DecoderTest, MaskedLocationsAreIgnored) {
  // Masking the last location must equal removing it: for the initial state (masked mean) and for
  // every attention step.
  AttentionLSTMDecoder decoder(small_options());
  decoder->eval();
  const auto batch = small_batch();
  auto mask = torch::ones({3, 4}, torch::kBool);
  mask.select(1, 3).fill_(false);
  const auto masked = decoder->forward(batch.annotations, batch.tokens, batch.lengths, mask);
  const auto cropped = decoder->forward(batch.annotations.narrow(1, 0, 3), batch.tokens, batch.lengths);
  EXPECT_LT(max_diff(masked.logits, cropped.logits), 1e-5);
  EXPECT_EQ(masked.alphas.select(2, 3).abs().max().item<float>(), 0.0f);
  EXPECT_LT(max_diff(masked.alphas.narrow(2, 0, 3), cropped.alphas), 1e-6);
}

TEST_F(DecoderTest, StepSeesParameterUpdates) {
  // step() keeps its fused weights between calls without autograd; changing a parameter in place
  // (an optimizer step, loading a checkpoint) must reach the next step.
  AttentionLSTMDecoder decoder(small_options());
  decoder->eval();
  torch::NoGradGuard no_grad;
  const auto batch = small_batch();
  const auto state = decoder->init_state(batch.annotations);
  const auto prev = torch::tensor({1, 2, 3}, torch::kLong);
  const auto before = decoder->step(state, prev).logits;
  decoder->lstm->weight_hh.mul_(2);
  decoder->attention->query_weight().add_(0.5);
  const auto after = decoder->step(state, prev).logits;
  EXPECT_GT(max_diff(before, after), 1e-3);
  AttentionLSTMDecoder fresh(small_options());
  fresh->eval();
  for (size_t i = 0; i < fresh->parameters().size(); ++i)
    fresh->parameters()[i].copy_(decoder->parameters()[i]);
  EXPECT_LT(max_diff(fresh->step(state, prev).logits, after), 1e-6);
}

TEST_F(DecoderTest, StepRunsInInferenceMode) {
  // Decoding runs under inference mode; the step must give what it gives with autograd on.
  AttentionLSTMDecoder decoder(small_options("multihead", Gate::vector));
  decoder->eval();
  const auto batch = small_batch();
  const auto prev = torch::tensor({1, 2, 3}, torch::kLong);
  const auto expected = decoder->step(decoder->init_state(batch.annotations), prev).logits.detach();
  c10::InferenceMode inference;
  for (int repeat = 0; repeat < 2; ++repeat) {  // the second call reuses the fused weights
    const auto actual = decoder->step(decoder->init_state(batch.annotations), prev).logits;
    EXPECT_LT(max_diff(actual, expected), 1e-6);
  }
}

TEST_F(DecoderTest, StateExpandsForBeams) {
  AttentionLSTMDecoder decoder(small_options());
  decoder->eval();
  const auto batch = small_batch();
  const auto state = decoder->init_state(batch.annotations);
  const auto prev = torch::tensor({1, 2, 3}, torch::kLong);
  const auto reference = decoder->step(state, prev);
  const auto beams = torch::tensor({0, 0, 2, 2}, torch::kLong);  // two beams for images 0 and 2
  const auto expanded = decoder->step(state.index_select(beams), prev.index_select(0, beams));
  EXPECT_LT(max_diff(expanded.logits, reference.logits.index_select(0, beams)), 1e-6);
  EXPECT_EQ(expanded.state.memory.size(), 4);
}

// for_beams keeps one copy of an image's keys and values for its beams where the CPU kernels run
// (the dot-product kinds' keys transposed); two steps, with a reordering of the beams between
// them, give the logits of a state expanded row by row.
TEST_F(DecoderTest, ForBeamsSharesTheGridWhereTheKernelsReadIt) {
  torch::NoGradGuard no_grad;
  for (const std::string kind : {"additive", "local", "dot", "scaled_dot", "general", "multihead"}) {
    auto options = small_options(kind);
    options.grid = {3, 3};
    options.lstm.attention_window = 1;
    AttentionLSTMDecoder decoder(options);
    decoder->eval();
    const auto batch = small_batch(torch::kFloat, 9);  // 3 images of 3 x 3 cells
    const auto state = decoder->init_state(batch.annotations);
    const auto beams = decoder->for_beams(state, 2);
    const bool shared = best_kernel_isa() != KernelIsa::none;
    const bool dot_product = kind != "additive" && kind != "local";
    EXPECT_EQ(beams.memory.beams, shared ? 2 : 1) << kind;
    EXPECT_EQ(beams.memory.keys.size(0), shared ? 3 : 6) << kind;
    EXPECT_EQ(beams.memory.keys_t.defined(), shared && dot_product) << kind;
    EXPECT_EQ(beams.memory.size(), 6) << kind;
    auto copied = state.index_select(torch::tensor({0, 0, 1, 1, 2, 2}, torch::kLong));
    auto beamed = beams;
    const auto words = torch::tensor({1, 4, 5, 6, 7, 8}, torch::kLong);
    const auto reorder = torch::tensor({1, 1, 2, 3, 5, 4}, torch::kLong);  // within each image
    for (int step = 0; step < 2; ++step) {
      const auto expected = decoder->step(copied, words);
      const auto actual = decoder->step(beamed, words);
      EXPECT_LT(max_diff(actual.logits, expected.logits), 1e-5) << kind << " step " << step;
      EXPECT_LT(max_diff(actual.alpha, expected.alpha), 1e-6) << kind << " step " << step;
      copied = expected.state.reorder_beams(reorder);
      beamed = actual.state.reorder_beams(reorder);
    }
  }
}

TEST_F(DecoderTest, EdgeBatches) {
  AttentionLSTMDecoder decoder(small_options("additive", Gate::vector));
  // Empty batch.
  const auto empty = decoder->forward(
      torch::randn({0, 4, 6}), torch::zeros({0, 4}, torch::kLong), torch::zeros({0}, torch::kLong));
  EXPECT_EQ(empty.logits.sizes(), torch::IntArrayRef({0, 4, 11}));
  EXPECT_EQ(empty.gates.sizes(), torch::IntArrayRef({0, 4, 6}));
  // Length-1 and length-0 captions.
  const auto batch = small_batch();
  const auto out = decoder->forward(batch.annotations, batch.tokens, torch::tensor({1, 0, 1}, torch::kLong));
  EXPECT_EQ(out.logits.sizes(), torch::IntArrayRef({3, 4, 11}));
  EXPECT_EQ(out.logits[1].abs().sum().item<float>(), 0.0f);
  EXPECT_GT(out.logits[0][0].abs().sum().item<float>(), 0.0f);
}

TEST_F(DecoderTest, BadInputsThrow) {
  AttentionLSTMDecoder decoder(small_options());
  const auto batch = small_batch();
  try {
    decoder->forward(batch.annotations, batch.tokens, torch::tensor({2, 5, 3}, torch::kLong));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()), "lengths[1] = 5 is outside [0, 4]");
  }
  EXPECT_THROW(
      decoder->forward(batch.annotations, batch.tokens.narrow(0, 0, 2), batch.lengths),
      std::invalid_argument);
  EXPECT_THROW(
      decoder->forward(batch.annotations, batch.tokens, batch.lengths.narrow(0, 0, 2)),
      std::invalid_argument);
  EXPECT_THROW(decoder->forward(torch::randn({3, 4, 5}), batch.tokens, batch.lengths), std::invalid_argument);
  EXPECT_THROW(
      decoder->step(decoder->init_state(batch.annotations), torch::zeros({2}, torch::kLong)),
      std::invalid_argument);
}

TEST_F(DecoderTest, ValidationNamesTheKey) {
  const auto message = [](DecoderOptions options) {
    try {
      validate(options);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  auto options = small_options();
  EXPECT_EQ(message(options), "(no error)");
  options.vocab_size = 0;
  EXPECT_EQ(message(options), "The decoder's vocab_size must be > 0 (set it from the vocabulary)");
  options = small_options();
  options.dropout = 1.0;
  EXPECT_EQ(message(options), "decoder.dropout must be in [0, 1), got 1.000000");
  options = small_options();
  options.attention_mode = AttentionMode::hard;
  options.lstm.hard_expectation = 1.5;
  EXPECT_EQ(message(options), "decoder.attention.hard_expectation must be in [0, 1], got 1.500000");
  options = small_options("multihead");
  options.lstm.attention_heads = 3;
  EXPECT_EQ(message(options).rfind("decoder.attention: The attention dim (8) must be divisible", 0), 0u);
  options = small_options("local");
  options.grid = {2, 2};
  EXPECT_EQ(
      message(options),
      "decoder.attention: window 2 spans 5 x 5 cells, more than the 2 x 2 grid, which is too small for a "
      "local window");
  EXPECT_THROW(parse_gate("both"), std::invalid_argument);
  EXPECT_EQ(parse_gate("vector"), Gate::vector);
  EXPECT_EQ(parse_attention_mode("soft"), AttentionMode::soft);
}

TEST_F(DecoderTest, HardAttentionCanDecodeWithTheExpectedContext) {
  auto options = small_options();
  AttentionLSTMDecoder soft(options);
  options.attention_mode = AttentionMode::hard;
  AttentionLSTMDecoder hard(options);
  {
    torch::NoGradGuard no_grad;
    const auto source = soft->named_parameters();
    for (auto& item : hard->named_parameters()) item.value().copy_(source[item.key()]);
  }
  soft->eval();
  hard->eval();
  const auto batch = small_batch();
  const auto tokens = batch.tokens.select(1, 0);
  const auto expected = hard->step(hard->init_state(batch.annotations), tokens, HardRead::expectation);
  const auto reference = soft->step(soft->init_state(batch.annotations), tokens);
  EXPECT_TRUE(torch::equal(expected.logits, reference.logits));
  // The default reads the chosen cell: another context, other scores.
  const auto chosen = hard->step(hard->init_state(batch.annotations), tokens);
  EXPECT_FALSE(torch::equal(chosen.logits, reference.logits));
  // The teacher-forced pass reads as asked too (the forced relation choice scores with it).
  const auto expected_forward =
      hard->forward(batch.annotations, batch.tokens, batch.lengths, {}, HardRead::expectation);
  const auto reference_forward = soft->forward(batch.annotations, batch.tokens, batch.lengths);
  EXPECT_TRUE(torch::equal(expected_forward.logits, reference_forward.logits));
  EXPECT_FALSE(expected_forward.weights.defined());
  const auto chosen_forward = hard->forward(batch.annotations, batch.tokens, batch.lengths);
  EXPECT_FALSE(torch::equal(chosen_forward.logits, reference_forward.logits));
  EXPECT_EQ(parse_hard_read("expectation"), HardRead::expectation);
  EXPECT_THROW(parse_hard_read("sample"), std::invalid_argument);
}

// The group file declares every key decoder_options_from reads, with the paper's defaults.
TEST_F(DecoderTest, OptionsFromTheSoftConfig) {
  YAML::Node root;
  root["decoder"] = YAML::LoadFile((testing::source_dir() / "configs/decoder/soft.yaml").string());
  const auto options = decoder_options_from(Config(root));
  EXPECT_EQ(options.lstm.embed_dim, 512);
  EXPECT_EQ(options.lstm.hidden_dim, 512);
  EXPECT_EQ(options.lstm.attention_kind, "additive");
  EXPECT_EQ(options.attention_mode, AttentionMode::soft);
  EXPECT_EQ(options.lstm.gate, Gate::scalar);
  EXPECT_TRUE(options.lstm.deep_output);
  EXPECT_EQ(options.vocab_size, 0);  // from the data, never the config
  EXPECT_EQ(options.lstm.hard_expectation, 0.5);
  EXPECT_EQ(options.lstm.attention_query, AttentionQuery::hidden);
  EXPECT_EQ(options.lstm.initial_state, InitialState::mean_annotation);
  EXPECT_FALSE(options.lstm.attention_coverage);
  root["decoder"]["attention"]["coverage"] = true;
  EXPECT_TRUE(decoder_options_from(Config(root)).lstm.attention_coverage);
  EXPECT_TRUE(decoder_options_from(Config(root)).attention().coverage);
  root["decoder"]["attention"].remove("coverage");  // a run saved before the key: none
  EXPECT_FALSE(decoder_options_from(Config(root)).lstm.attention_coverage);
  root["decoder"]["attention"]["query"] = "hidden_and_word";
  EXPECT_EQ(decoder_options_from(Config(root)).lstm.attention_query, AttentionQuery::hidden_and_word);
  root["decoder"]["attention"].remove("query");  // a run saved before the key: the paper's query
  EXPECT_EQ(decoder_options_from(Config(root)).lstm.attention_query, AttentionQuery::hidden);
  root["decoder"]["attention"]["hard_expectation"] = 0.25;
  EXPECT_EQ(decoder_options_from(Config(root)).lstm.hard_expectation, 0.25);
  root["decoder"]["gate"] = "sometimes";
  try {
    decoder_options_from(Config(root));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("decoder.gate: Unknown gate 'sometimes'", 0), 0u)
        << error.what();
  }
}

// In training, each of small_batch()'s captions read either alpha (its expectation row is set)
// or one location per step; padded steps read nothing.
void expect_hard_reads(const DecoderOutput& out, const torch::Tensor& lengths) {
  ASSERT_TRUE(out.weights.defined());
  ASSERT_EQ(out.expectation_rows.sizes(), torch::IntArrayRef({3}));
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t length = lengths[b].item<int64_t>();
    const auto real = out.weights[b].narrow(0, 0, length);  // [n, L]
    if (out.expectation_rows[b].item<bool>()) {
      EXPECT_TRUE(torch::equal(real, out.alphas[b].narrow(0, 0, length))) << b;
    } else {
      EXPECT_TRUE(torch::equal(std::get<0>(real.max(1)), torch::ones({length}))) << b;
      EXPECT_TRUE(torch::equal(real.sum(1), torch::ones({length}))) << b;
    }
    EXPECT_EQ(out.weights[b].narrow(0, length, 4 - length).abs().sum().item<float>(), 0.0f) << b;
  }
}

TEST_F(DecoderTest, HardAttentionReadsOneLocationPerSampledCaption) {
  auto options = small_options();
  options.attention_mode = AttentionMode::hard;
  options.lstm.hard_expectation = 0.5;
  AttentionLSTMDecoder decoder(options);
  const auto batch = small_batch();
  expect_hard_reads(decoder->forward(batch.annotations, batch.tokens, batch.lengths), batch.lengths);
}

// The trainer's expectation baseline chooses which captions read the expectation.
TEST_F(DecoderTest, HardAttentionReadsTheExpectationInTheCaptionsItIsGiven) {
  auto options = small_options();
  options.attention_mode = AttentionMode::hard;
  options.lstm.hard_expectation = 0.0;  // would sample every caption
  AttentionLSTMDecoder decoder(options);
  const auto batch = small_batch();
  for (const auto& given : {torch::tensor({true, false, true}), torch::tensor({false, true, false})}) {
    const auto out =
        decoder->forward(batch.annotations, batch.tokens, batch.lengths, {}, HardRead::argmax, given);
    EXPECT_TRUE(torch::equal(out.expectation_rows, given)) << out.expectation_rows;
    expect_hard_reads(out, batch.lengths);
  }
  EXPECT_THROW(
      decoder->forward(
          batch.annotations, batch.tokens, batch.lengths, {}, HardRead::argmax, torch::ones({3})),
      c10::Error);
  EXPECT_THROW(
      decoder->forward(
          batch.annotations, batch.tokens, batch.lengths, {}, HardRead::argmax,
          torch::ones({2}, torch::kBool)),
      c10::Error);
}

TEST_F(DecoderTest, HardAttentionDecodesTheMostLikelyLocationStepByStep) {
  auto options = small_options();
  options.attention_mode = AttentionMode::hard;
  AttentionLSTMDecoder decoder(options);
  decoder->eval();
  const auto batch = small_batch();
  const auto forward = decoder->forward(batch.annotations, batch.tokens, batch.lengths);
  EXPECT_FALSE(forward.expectation_rows.defined());
  auto state = decoder->init_state(batch.annotations);
  for (int64_t t = 0; t < 4; ++t) {
    const auto step = decoder->step(state, batch.tokens.select(1, t));
    state = step.state;
    for (int64_t b = 0; b < 3; ++b) {
      if (t >= batch.lengths[b].item<int64_t>()) continue;
      const int64_t peak = forward.alphas[b][t].argmax().item<int64_t>();
      EXPECT_EQ(forward.weights[b][t][peak].item<float>(), 1.0f) << "b=" << b << " t=" << t;
      EXPECT_LT(max_diff(step.logits[b], forward.logits[b][t]), 1e-5) << "b=" << b << " t=" << t;
    }
  }
}

}  // namespace
}  // namespace saccade
