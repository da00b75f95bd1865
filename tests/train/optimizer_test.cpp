// The learning-rate schedules enumerated epoch by epoch, and the optimizer's parameter groups.
#include "train/optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace saccade {
namespace {

std::vector<double> factors(TrainOptions options, const std::vector<bool>& improved) {
  TrainState state;
  std::vector<double> out;
  for (size_t epoch = 1; epoch <= improved.size(); ++epoch)
    out.push_back(schedule_factor(options, static_cast<int64_t>(epoch), improved[epoch - 1], state));
  return out;
}

TEST(Schedule, ConstantNeverChangesTheRate) {
  TrainOptions options;
  options.schedule = LrSchedule::constant;
  EXPECT_EQ(factors(options, {false, false, false, false}), (std::vector<double>{1, 1, 1, 1}));
}

TEST(Schedule, StepMultipliesByGammaEveryNEpochsWhateverTheScores) {
  TrainOptions options;
  options.schedule = LrSchedule::step;
  options.lr_step_epochs = 2;
  options.lr_gamma = 0.3;
  EXPECT_EQ(
      factors(options, {true, false, false, true, true, false}),
      (std::vector<double>{1, 0.3, 1, 0.3, 1, 0.3}));
}

// Patience 2: the second epoch in a row without improvement cuts the rate and starts counting
// again; an improvement resets the count.
TEST(Schedule, PlateauCutsAfterPatienceEpochsWithoutImprovement) {
  TrainOptions options;
  options.schedule = LrSchedule::plateau;
  options.lr_plateau_patience = 2;
  options.lr_gamma = 0.5;
  EXPECT_EQ(
      factors(options, {true, false, false, false, false, true, false, true, false, false}),
      (std::vector<double>{1, 1, 0.5, 1, 0.5, 1, 1, 1, 1, 0.5}));
}

// A pretrained encoder's trainable parameters form a second group at train.encoder_lr; frozen
// ones are in no group; from scratch, the encoder trains with the decoder.
TEST(Optimizer, APretrainedEncodersTrainableParametersGetTheirOwnGroup) {
  EncoderOptions encoder;
  encoder.channels = {4, 8};
  DecoderOptions decoder;
  decoder.lstm.embed_dim = decoder.lstm.hidden_dim = decoder.lstm.attention_dim = 8;
  Captioner model = build_captioner(encoder, decoder, 7);
  const auto encoder_parameters = model->encoder->parameters();
  ASSERT_GE(encoder_parameters.size(), 2u);
  encoder_parameters.front().requires_grad_(false);  // a frozen block
  const size_t decoder_count = model->decoder->parameters().size();
  TrainOptions options;
  options.learning_rate = 1e-3;
  options.encoder_learning_rate = 1e-5;

  const auto pretrained = make_optimizer(*model, options, /*pretrained_encoder=*/true);
  const auto& groups = pretrained->param_groups();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].params().size(), decoder_count);
  EXPECT_EQ(groups[1].params().size(), encoder_parameters.size() - 1);
  EXPECT_DOUBLE_EQ(groups[0].options().get_lr(), 1e-3);
  EXPECT_DOUBLE_EQ(groups[1].options().get_lr(), 1e-5);
  TrainState state;
  state.learning_rate = 3e-4;
  state.encoder_learning_rate = 3e-6;
  set_learning_rates(*pretrained, state);
  EXPECT_DOUBLE_EQ(groups[0].options().get_lr(), 3e-4);
  EXPECT_DOUBLE_EQ(groups[1].options().get_lr(), 3e-6);

  const auto from_scratch = make_optimizer(*model, options, /*pretrained_encoder=*/false);
  ASSERT_EQ(from_scratch->param_groups().size(), 1u);
  EXPECT_EQ(from_scratch->param_groups()[0].params().size(), decoder_count + encoder_parameters.size() - 1);
}

}  // namespace
}  // namespace saccade
