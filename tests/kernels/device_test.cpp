// Placement (runtime.device, runtime.precision), autocast scopes, the fp16 gradient scaler, and
// the contract that the hand-written CPU kernels step aside for the plain LibTorch ops under
// autocast, checked against fp32 results.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "device/grad_scaler.h"
#include "device/placement.h"
#include "device/torch_compat.h"
#include "kernels/attention_kernels.h"
#include "kernels/time_shared.h"
#include "test_util.h"

namespace saccade {
namespace {

using testing::message_of;

const DeviceInventory kNoCuda{false, 0};
const DeviceInventory kCudaNoGpu{true, 0};
const DeviceInventory kOneGpu{true, 1};
const DeviceInventory kTwoGpus{true, 2};

std::string refusal(
    const std::string& name, int local_rank, int local_ranks, const DeviceInventory& inventory) {
  return message_of<ConfigError>([&] { resolve_device(name, local_rank, local_ranks, inventory); });
}

TEST(Placement, DevicesResolveForEachWorker) {
  EXPECT_EQ(resolve_device("cpu", 0, 1, kTwoGpus), torch::Device(torch::kCPU));
  EXPECT_EQ(resolve_device("auto", 0, 1, kNoCuda), torch::Device(torch::kCPU));
  EXPECT_EQ(resolve_device("auto", 0, 1, kCudaNoGpu), torch::Device(torch::kCPU));
  EXPECT_EQ(resolve_device("auto", 1, 2, kTwoGpus), torch::Device(torch::kCUDA, 1));
  EXPECT_EQ(resolve_device("auto", 1, 3, kTwoGpus), torch::Device(torch::kCPU));  // no GPU for each
  EXPECT_EQ(resolve_device("cuda", 1, 2, kTwoGpus), torch::Device(torch::kCUDA, 1));
  EXPECT_EQ(resolve_device("cuda:1", 0, 1, kTwoGpus), torch::Device(torch::kCUDA, 1));
}

TEST(Placement, DevicesThatCannotBeHadAreOneLineNamingKeyAndValue) {
  EXPECT_EQ(
      refusal("cuda", 0, 1, kNoCuda),
      "runtime.device=cuda: this saccade is built against a LibTorch without CUDA. HINT: runtime.device=cpu, "
      "or build against a CUDA LibTorch (docs/building.md, 'Building against another LibTorch')");
  EXPECT_EQ(
      refusal("cuda:0", 0, 1, kCudaNoGpu),
      "runtime.device=cuda:0: no GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)");
  EXPECT_EQ(refusal("cuda:7", 0, 1, kOneGpu), "runtime.device=cuda:7: only 1 GPU is visible (cuda:0)");
  EXPECT_EQ(
      refusal("cuda", 2, 3, kTwoGpus),
      "runtime.device=cuda: worker LOCAL_RANK=2 needs GPU 2, but only 2 GPUs are visible (cuda:0 .. cuda:1)");
  EXPECT_EQ(
      refusal("cuda:0", 0, 2, kTwoGpus),
      "runtime.device=cuda:0: every one of the 2 workers on this machine would use that one GPU. HINT: "
      "runtime.device=cuda gives each worker the GPU of its LOCAL_RANK");
  for (const std::string bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CPU"}) {
    EXPECT_EQ(
        refusal(bad, 0, 1, kTwoGpus),
        "runtime.device: expected auto, cpu, cuda or cuda:N, got '" + bad + "'");
  }
}

TEST(Placement, HalfPrecisionNeedsAGpu) {
  EXPECT_EQ(
      message_of<ConfigError>([] { check_precision(Precision::fp16, torch::Device(torch::kCPU)); }),
      "runtime.precision=fp16: half-precision autocast needs a CUDA device, and runtime.device resolved to "
      "cpu. "
      "HINT: runtime.precision=bf16 (or fp32) on the CPU");
  EXPECT_NO_THROW(check_precision(Precision::bf16, torch::Device(torch::kCPU)));
  EXPECT_NO_THROW(check_precision(Precision::fp16, torch::Device(torch::kCUDA, 0)));
  EXPECT_EQ(describe({torch::Device(torch::kCUDA, 1), Precision::bf16}), "cuda:1, bf16 autocast");
  EXPECT_EQ(describe({torch::Device(torch::kCPU), Precision::fp32}), "cpu, fp32");
}

TEST(Autocast, ProductsRunInBf16InsideTheScopeOnlyAndNestedScopesRestore) {
  const auto a = torch::randn({4, 8}), b = torch::randn({8, 3});
  const Placement bf16{torch::Device(torch::kCPU), Precision::bf16};
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
  {
    const Autocast outer(bf16);
    EXPECT_TRUE(compat::autocast_enabled(torch::kCPU));
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
    {
      const Autocast inner(Placement{torch::Device(torch::kCPU), Precision::fp32});  // changes nothing
      EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
    }
    { const Autocast inner(bf16); }
    EXPECT_TRUE(compat::autocast_enabled(torch::kCPU));  // the inner scope restored the outer's state
  }
  EXPECT_FALSE(compat::autocast_enabled(torch::kCPU));
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
}

// Parameters [3] and [2, 2], and their loss sum p^2, whose gradient is 2 p.
std::vector<torch::Tensor> make_parameters() {
  return {
      torch::tensor({1.0f, -2.0f, 0.5f}).requires_grad_(),
      torch::tensor({{3.0f, 0.25f}, {-1.0f, 4.0f}}).requires_grad_()};
}

torch::Tensor sum_of_squares(const std::vector<torch::Tensor>& parameters) {
  auto loss = torch::zeros({});
  for (const auto& p : parameters) loss = loss + p.pow(2).sum();
  return loss;
}

std::vector<torch::Tensor> parameters_with_gradients() {
  auto parameters = make_parameters();
  sum_of_squares(parameters).backward();
  return parameters;
}

TEST(GradScaler, ScaledGradientsComeBackExactlyAfterUnscaling) {
  GradScaler scaler(true);
  EXPECT_EQ(scaler.state().scale, 65536.0);
  const auto parameters = make_parameters();
  scaler.scale(sum_of_squares(parameters)).backward();
  EXPECT_EQ(parameters[0].grad()[1].item<float>(), 2.0f * -2.0f * 65536.0f);
  EXPECT_TRUE(scaler.unscale(parameters));
  for (const auto& p : parameters) EXPECT_TRUE(torch::equal(p.grad(), 2 * p.detach())) << p;
  scaler.update();
  EXPECT_EQ(scaler.state().good_steps, 1);
}

TEST(GradScaler, AnOverflowSkipsTheStepAndHalvesTheScaleAndGoodStepsDoubleIt) {
  GradScaler scaler(true, 2.0, 0.5, /*growth_interval=*/3);
  auto parameters = parameters_with_gradients();
  parameters[1].mutable_grad()[0][1] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(scaler.unscale(parameters));
  scaler.update();
  EXPECT_EQ(scaler.state().scale, 32768.0);
  EXPECT_EQ(scaler.state().good_steps, 0);
  parameters[1].mutable_grad()[0][1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(scaler.unscale(parameters));
  scaler.update();
  EXPECT_EQ(scaler.state().scale, 16384.0);
  for (int step = 0; step < 3; ++step) {
    auto good = parameters_with_gradients();
    EXPECT_TRUE(scaler.unscale(good));
    scaler.update();
  }
  EXPECT_EQ(scaler.state().scale, 32768.0);
  EXPECT_EQ(scaler.state().good_steps, 0);
}

TEST(GradScaler, AnOverflowedLossIsSkippedUntilTheScaleCannotFall) {
  GradScaler scaler(true, 2.0, 0.5, 2000);
  scaler.set_state({4.0, 7});
  EXPECT_TRUE(scaler.skip_overflowed_loss());
  scaler.update();
  EXPECT_EQ(scaler.state().scale, 2.0);
  EXPECT_EQ(scaler.state().good_steps, 0);
  EXPECT_TRUE(scaler.skip_overflowed_loss());
  scaler.update();
  EXPECT_EQ(scaler.state().scale, 1.0);
  EXPECT_FALSE(scaler.skip_overflowed_loss());  // at 1 the loss itself overflows: a divergence
  EXPECT_FALSE(GradScaler(false).skip_overflowed_loss());
}

TEST(GradScaler, ADisabledScalerChangesNothing) {
  GradScaler scaler(false);
  const auto loss = torch::tensor(3.5f);
  EXPECT_TRUE(torch::equal(scaler.scale(loss), loss));
  auto parameters = parameters_with_gradients();
  parameters[0].mutable_grad()[0] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(scaler.unscale(parameters));
  EXPECT_TRUE(torch::isinf(parameters[0].grad()[0]).item<bool>());
  scaler.update();
  EXPECT_EQ(scaler.state().scale, 65536.0);
}

// Under CPU bf16 autocast the fused kernels and time-shared products hand over to plain ops: the
// results come back in bf16 (the float kernels would return float) and agree with the fp32
// kernels within bf16's precision, gradients included.
TEST(KernelsUnderAutocast, StepAsideForPlainOpsThatAgreeWithFp32) {
  torch::manual_seed(3);
  const auto keys = torch::randn({4, 5, 8}).requires_grad_();
  const auto q = torch::randn({3, 8}).requires_grad_();
  const auto w = torch::randn({8}).requires_grad_();
  const auto values = torch::randn({4, 1, 5, 6}).requires_grad_();
  const auto weight = torch::randn({8, 6}).requires_grad_();
  const auto x = torch::randn({3, 8}).requires_grad_();
  const std::vector<torch::Tensor> inputs = {keys, q, w, values, weight, x};
  const auto run = [&](Precision precision, std::vector<torch::ScalarType>& dtypes) {
    const Autocast autocast(Placement{torch::Device(torch::kCPU), precision});
    const auto e = additive_scores(TimeSharedTensor(keys), q, w);                               // [3, L]
    const auto z = expected_value(torch::softmax(e, -1).unsqueeze(1), values.narrow(0, 0, 3));  // [3, 1, 6]
    TimeSharedWeight shared(weight);
    const auto y = shared.multiply(x);  // [3, 6]
    dtypes = {e.scalar_type(), z.scalar_type(), y.scalar_type()};
    return (z.squeeze(1).to(torch::kFloat) * y.to(torch::kFloat)).sum();
  };
  std::vector<torch::ScalarType> fp32_types, bf16_types;
  const auto fp32 = run(Precision::fp32, fp32_types);
  const auto fp32_grads = torch::autograd::grad({fp32}, inputs);
  const auto bf16 = run(Precision::bf16, bf16_types);
  const auto bf16_grads = torch::autograd::grad({bf16}, inputs);
  EXPECT_EQ(fp32_types, std::vector<torch::ScalarType>(3, torch::kFloat));
  EXPECT_EQ(bf16_types, std::vector<torch::ScalarType>(3, torch::kBFloat16));
  EXPECT_NEAR(bf16.item<double>(), fp32.item<double>(), 0.03 * (1 + std::abs(fp32.item<double>())));
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE(bf16_grads[i].defined()) << "input " << i;
    const double scale = 1 + fp32_grads[i].abs().max().item<double>();
    EXPECT_LT((bf16_grads[i].to(torch::kFloat) - fp32_grads[i]).abs().max().item<double>(), 0.03 * scale)
        << "input " << i;
  }
}

}  // namespace
}  // namespace saccade
