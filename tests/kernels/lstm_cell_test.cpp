// lstm_cell against LSTMCell's formulas in double precision: the new cell and output and their
// gradients, for each kernel the CPU runs, with H taking whole vectors and a tail, gates saturated
// far past their range, and losses that read h only, c' only, or both.
#include "kernels/lstm_cell.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace saccade {
namespace {

std::tuple<torch::Tensor, torch::Tensor> reference_cell(const torch::Tensor& gates, const torch::Tensor& c) {
  const auto chunks = gates.chunk(4, 1);
  const auto next = torch::sigmoid(chunks[1]) * c + torch::sigmoid(chunks[0]) * torch::tanh(chunks[2]);
  return {torch::sigmoid(chunks[3]) * torch::tanh(next), next};
}

TEST(LstmCell, MatchesTheCellsFormulasWithGradients) {
  torch::manual_seed(0);
  std::vector<KernelIsa> isas = supported_kernel_isas();
  isas.push_back(KernelIsa::none);
  for (const int64_t H : {37, 512}) {
    for (const double scale : {1.0, 30.0}) {
      const auto gates = (torch::randn({3, 4 * H}) * scale).requires_grad_();
      const auto c = torch::randn({3, H}).requires_grad_();
      const auto weight_h = torch::randn({3, H}), weight_c = torch::randn({3, H});
      const auto gates_double = gates.detach().to(torch::kDouble).requires_grad_();
      const auto c_double = c.detach().to(torch::kDouble).requires_grad_();
      const auto [h_expected, next_expected] = reference_cell(gates_double, c_double);
      for (const int reads : {1, 2, 3}) {  // h, c', both
        const auto loss_of = [&](const torch::Tensor& h, const torch::Tensor& next, const torch::Tensor& wh,
                                 const torch::Tensor& wc) {
          auto loss = torch::zeros({}, h.options());
          if (reads & 1) loss = loss + (h * wh).sum();
          if (reads & 2) loss = loss + (next * wc).sum();
          return loss;
        };
        const auto expected_grads = torch::autograd::grad(
            {loss_of(h_expected, next_expected, weight_h.to(torch::kDouble), weight_c.to(torch::kDouble))},
            {gates_double, c_double}, {}, /*retain_graph=*/true);
        for (const KernelIsa isa : isas) {
          const std::string where = std::string(to_string(isa)) + " H=" + std::to_string(H) + " scale " +
                                    std::to_string(scale) + " reads " + std::to_string(reads);
          const auto [h, next] = lstm_cell(isa, gates, c);
          EXPECT_LT((h.to(torch::kDouble) - h_expected).abs().max().item<double>(), 1e-6) << where;
          EXPECT_LT((next.to(torch::kDouble) - next_expected).abs().max().item<double>(), 1e-6) << where;
          const auto grads = torch::autograd::grad({loss_of(h, next, weight_h, weight_c)}, {gates, c});
          for (size_t i = 0; i < 2; ++i) {
            EXPECT_LT((grads[i].to(torch::kDouble) - expected_grads[i]).abs().max().item<double>(), 1e-5)
                << where << " input " << i;
          }
        }
      }
    }
  }
}

TEST(LstmCell, WithoutGradientsRecordsNothing) {
  const auto [h, next] = lstm_cell(torch::randn({2, 40}), torch::randn({2, 10}));
  EXPECT_FALSE(h.requires_grad());
  EXPECT_EQ(h.sizes(), torch::IntArrayRef({2, 10}));
  EXPECT_EQ(next.sizes(), torch::IntArrayRef({2, 10}));
}

}  // namespace
}  // namespace saccade
