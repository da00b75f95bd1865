// lstm_cell: the gates' activations, the new cell and the output in one pass, and their gradients
// in one more (see lstm_cell.h).
#include "kernels/lstm_cell.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>

#include <stdexcept>

#include "kernels/vector_lanes.h"

namespace saccade {
namespace {

template <typename V>
SACCADE_INLINE V sigmoid_lanes(const V& x) {
  return 1.0f / (1.0f + exp_lanes(-x));
}

// The activations of one row's gates i | f | g | o at columns j .. j + W - 1.
template <int W>
struct GateActivations {
  Lanes<float, W> i, f, g, o;

  SACCADE_INLINE GateActivations(const float* gates, int64_t H, int64_t j)
      : i(sigmoid_lanes(load<W>(gates + j))),
        f(sigmoid_lanes(load<W>(gates + H + j))),
        g(tanh_lanes(load<W>(gates + 2 * H + j))),
        o(sigmoid_lanes(load<W>(gates + 3 * H + j))) {}
};

// One row's cell and output, W values of H at a time (a tail of W = 1 after the vectors).
template <int W>
SACCADE_INLINE void cell_lanes(
    const float* gates, const float* c, float* h, float* c_next, int64_t H, int64_t j) {
  const GateActivations<W> gate(gates, H, j);
  const auto &i = gate.i, &f = gate.f, &g = gate.g, &o = gate.o;
  const auto next = f * load<W>(c + j) + i * g;
  store(c_next + j, next);
  store(h + j, o * tanh_lanes(next));
}

// One row's gradients from dh and dc' (either may be null: zero), the activations recomputed.
template <int W>
SACCADE_INLINE void cell_gradient_lanes(
    const float* gates,
    const float* c,
    const float* grad_h,
    const float* grad_c_next,
    float* grad_gates,
    float* grad_c,
    int64_t H,
    int64_t j) {
  using V = Lanes<float, W>;
  const GateActivations<W> gate(gates, H, j);
  const V &i = gate.i, &f = gate.f, &g = gate.g, &o = gate.o;
  const V previous = load<W>(c + j);
  const V t = tanh_lanes(f * previous + i * g);
  const V dh = grad_h ? load<W>(grad_h + j) : V{};
  const V dc = (grad_c_next ? load<W>(grad_c_next + j) : V{}) + dh * o * (1.0f - t * t);
  store(grad_gates + j, dc * g * i * (1.0f - i));
  store(grad_gates + H + j, dc * previous * f * (1.0f - f));
  store(grad_gates + 2 * H + j, dc * i * (1.0f - g * g));
  store(grad_gates + 3 * H + j, dh * t * o * (1.0f - o));
  store(grad_c + j, dc * f);
}

template <int W>
SACCADE_INLINE void cell_rows(
    const float* gates, const float* c, float* h, float* c_next, int64_t begin, int64_t end, int64_t H) {
  const int64_t H_lanes = H - H % W;
  for (int64_t r = begin; r < end; ++r) {
    int64_t j = 0;
    for (; j < H_lanes; j += W) cell_lanes<W>(gates + r * 4 * H, c + r * H, h + r * H, c_next + r * H, H, j);
    for (; j < H; ++j) cell_lanes<1>(gates + r * 4 * H, c + r * H, h + r * H, c_next + r * H, H, j);
  }
}

template <int W>
SACCADE_INLINE void cell_gradient_rows(
    const float* gates,
    const float* c,
    const float* grad_h,
    const float* grad_c_next,
    float* grad_gates,
    float* grad_c,
    int64_t begin,
    int64_t end,
    int64_t H) {
  const int64_t H_lanes = H - H % W;
  for (int64_t r = begin; r < end; ++r) {
    const float* dh = grad_h ? grad_h + r * H : nullptr;
    const float* dc = grad_c_next ? grad_c_next + r * H : nullptr;
    int64_t j = 0;
    for (; j < H_lanes; j += W)
      cell_gradient_lanes<W>(
          gates + r * 4 * H, c + r * H, dh, dc, grad_gates + r * 4 * H, grad_c + r * H, H, j);
    for (; j < H; ++j)
      cell_gradient_lanes<1>(
          gates + r * 4 * H, c + r * H, dh, dc, grad_gates + r * 4 * H, grad_c + r * H, H, j);
  }
}

struct CellKernels {
  decltype(&cell_rows<1>) forward;
  decltype(&cell_gradient_rows<1>) backward;
};

#if defined(__x86_64__)

// The kernels on one instruction set (`On`), `W` floats to a register.
template <template <auto> class On, int W>
constexpr CellKernels cell_kernels_on = {On<&cell_rows<W>>::run, On<&cell_gradient_rows<W>>::run};

const CellKernels& cell_kernels(KernelIsa isa) {
  return isa == KernelIsa::avx512 ? cell_kernels_on<OnAvx512, 16> : cell_kernels_on<OnAvx2, 8>;
}

#else

const CellKernels& cell_kernels(KernelIsa) {
  throw std::logic_error("the LSTM cell kernels are compiled for x86-64 only");
}

#endif

// Rows per task: a decoding step's few rows stay on one thread.
constexpr int64_t kGrainElements = 16384;

class LstmCell : public torch::autograd::Function<LstmCell> {
 public:
  static torch::autograd::variable_list forward(
      torch::autograd::AutogradContext* ctx,
      KernelIsa isa,
      const torch::Tensor& gates,
      const torch::Tensor& c) {
    RECORD_FUNCTION("saccade::lstm_cell", std::vector<c10::IValue>({gates}));  // named in profiles
    const auto g = gates.contiguous(), previous = c.contiguous();
    const int64_t n = previous.size(0), H = previous.size(1);
    auto h = torch::empty_like(previous), next = torch::empty_like(previous);
    const auto kernel = cell_kernels(isa).forward;
    at::parallel_for(0, n, std::max<int64_t>(1, kGrainElements / (5 * H)), [&](int64_t begin, int64_t end) {
      kernel(
          g.data_ptr<float>(), previous.data_ptr<float>(), h.data_ptr<float>(), next.data_ptr<float>(), begin,
          end, H);
    });
    ctx->save_for_backward({g, previous});
    ctx->saved_data["isa"] = static_cast<int64_t>(isa);
    return {h, next};
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &gates = saved[0], &previous = saved[1];
    const int64_t n = previous.size(0), H = previous.size(1);
    const auto grad_h = grads[0].defined() ? grads[0].contiguous() : grads[0];
    const auto grad_next = grads[1].defined() ? grads[1].contiguous() : grads[1];
    auto grad_gates = torch::empty_like(gates), grad_previous = torch::empty_like(previous);
    const auto kernel = cell_kernels(static_cast<KernelIsa>(ctx->saved_data["isa"].toInt())).backward;
    at::parallel_for(0, n, std::max<int64_t>(1, kGrainElements / (5 * H)), [&](int64_t begin, int64_t end) {
      kernel(
          gates.data_ptr<float>(), previous.data_ptr<float>(),
          grad_h.defined() ? grad_h.data_ptr<float>() : nullptr,
          grad_next.defined() ? grad_next.data_ptr<float>() : nullptr, grad_gates.data_ptr<float>(),
          grad_previous.data_ptr<float>(), begin, end, H);
    });
    return {torch::Tensor(), grad_gates, grad_previous};
  }
};

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> lstm_cell(const torch::Tensor& gates, const torch::Tensor& c) {
  return lstm_cell(best_kernel_isa(), gates, c);
}

std::tuple<torch::Tensor, torch::Tensor> lstm_cell(
    KernelIsa isa, const torch::Tensor& gates, const torch::Tensor& c) {
  if (isa == KernelIsa::none || !takes_cpu_kernels(gates) || !takes_cpu_kernels(c) || c.dim() != 2 ||
      gates.dim() != 2 || gates.size(0) != c.size(0) || gates.size(1) != 4 * c.size(1)) {
    const auto chunks = gates.chunk(4, 1);  // i, f, g, o: [n, H] each
    const auto next = torch::sigmoid(chunks[1]) * c + torch::sigmoid(chunks[0]) * torch::tanh(chunks[2]);
    return {torch::sigmoid(chunks[3]) * torch::tanh(next), next};
  }
  const auto outputs = LstmCell::apply(isa, gates, c);
  return {outputs[0], outputs[1]};
}

}  // namespace saccade
