// The optimizer and its learning-rate schedule (train.optimizer, train.lr, train.encoder_lr,
// train.schedule and its settings).
//
//   auto optimizer = make_optimizer(*model, options, /*pretrained_encoder=*/true);
//   ... after an epoch:
//   state.learning_rate *= schedule_factor(options, epoch, improved, state);
//   set_learning_rates(*optimizer, state);
#pragma once

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <memory>

#include "io/train_state.h"
#include "models/captioner.h"
#include "train/train_options.h"

namespace saccade {

// The optimizer (Adam, fused: train/fused_adam.h; or RMSprop) over the decoder and refiner (and
// an encoder trained from scratch) at train.lr, and the trainable blocks of a pretrained encoder
// at train.encoder_lr, a second parameter group. Frozen parameters are left out.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    CaptionerImpl& model, const TrainOptions& options, bool pretrained_encoder);

// The groups' learning rates from `state` (the decoder's, and the encoder's when it has a group).
void set_learning_rates(torch::optim::Optimizer& optimizer, const TrainState& state);

// The factor the schedule applies to the learning rates after `epoch` (1 = unchanged): step
// multiplies by lr_gamma every lr_step_epochs epochs; plateau after lr_plateau_patience epochs
// without improvement, counted in state.plateau_epochs.
double schedule_factor(const TrainOptions& options, int64_t epoch, bool improved, TrainState& state);

}  // namespace saccade
