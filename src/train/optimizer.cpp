// make_optimizer, set_learning_rates and schedule_factor (see optimizer.h).
#include "train/optimizer.h"

#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>

#include <vector>

#include "train/fused_adam.h"

namespace saccade {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    CaptionerImpl& model, const TrainOptions& options, bool pretrained_encoder) {
  std::vector<torch::Tensor> main_parameters, encoder_parameters;
  for (const auto& parameter : model.decoder->parameters()) main_parameters.push_back(parameter);
  if (model.refiner) {
    for (const auto& parameter : model.refiner->parameters()) main_parameters.push_back(parameter);
  }
  for (const auto& parameter : model.encoder->parameters()) {
    if (!parameter.requires_grad()) continue;
    (pretrained_encoder ? encoder_parameters : main_parameters).push_back(parameter);
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  auto group_options = [&](double learning_rate) -> std::unique_ptr<torch::optim::OptimizerOptions> {
    if (options.optimizer == OptimizerKind::adam) {
      return std::make_unique<torch::optim::AdamOptions>(
          torch::optim::AdamOptions(learning_rate).weight_decay(options.weight_decay));
    }
    return std::make_unique<torch::optim::RMSpropOptions>(
        torch::optim::RMSpropOptions(learning_rate).weight_decay(options.weight_decay));
  };
  groups.emplace_back(main_parameters, group_options(options.learning_rate));
  if (!encoder_parameters.empty()) {
    groups.emplace_back(encoder_parameters, group_options(options.encoder_learning_rate));
  }
  if (options.optimizer == OptimizerKind::adam) {
    return std::make_unique<FusedAdam>(groups, torch::optim::AdamOptions(options.learning_rate));
  }
  return std::make_unique<torch::optim::RMSprop>(groups, torch::optim::RMSpropOptions(options.learning_rate));
}

void set_learning_rates(torch::optim::Optimizer& optimizer, const TrainState& state) {
  auto& groups = optimizer.param_groups();
  groups[0].options().set_lr(state.learning_rate);
  if (groups.size() > 1) groups[1].options().set_lr(state.encoder_learning_rate);
}

double schedule_factor(const TrainOptions& options, int64_t epoch, bool improved, TrainState& state) {
  if (options.schedule == LrSchedule::step)
    return epoch % options.lr_step_epochs == 0 ? options.lr_gamma : 1.0;
  if (options.schedule != LrSchedule::plateau) return 1.0;
  state.plateau_epochs = improved ? 0 : state.plateau_epochs + 1;
  if (state.plateau_epochs < options.lr_plateau_patience) return 1.0;
  state.plateau_epochs = 0;
  return options.lr_gamma;
}

}  // namespace saccade
