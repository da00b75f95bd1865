// The fused attention kernels: additive scores and the expected value, each one autograd node
// (see attention_kernels.h).
#include "kernels/attention_kernels.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "kernels/few_rows_linear.h"

namespace saccade {
namespace {

// tanh by a rational minimax approximation (the one Eigen's fast tanh uses): |error| < 4e-7 for
// every float, and unlike std::tanh it vectorizes. Doubles (the gradient tests) use std::tanh.
inline float fast_tanh(float x) {
  x = std::min(std::max(x, -7.90531110763549805f), 7.90531110763549805f);  // tanh rounds to +-1 beyond
  const float x2 = x * x;
  float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  return x * p / q;
}
inline double fast_tanh(double x) {
  return std::tanh(x);
}

// The additive scores of one image: e[l] = sum_a w[a] tanh(keys[l, a] + q[a]) (eq. 4, f_att).
// Sixteen partial sums per row keep the sum vectorizable without reassociating it. The kernels are
// compiled for AVX-512, AVX2 and the baseline; the loader picks the best the CPU has.
template <typename T>
__attribute__((target_clones("avx512f", "avx2", "default"))) void additive_scores_image(
    const T* __restrict keys,
    const T* __restrict q,
    const T* __restrict w,
    T* __restrict e,
    int64_t L,
    int64_t A) {
  constexpr int64_t kLanes = 16;
  for (int64_t l = 0; l < L; ++l) {
    const T* k = keys + l * A;
    T lanes[kLanes] = {};
    int64_t a = 0;
    for (; a + kLanes <= A; a += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lanes[j] += w[a + j] * fast_tanh(k[a + j] + q[a + j]);
    }
    T sum = 0;
    for (; a < A; ++a) sum += w[a] * fast_tanh(k[a] + q[a]);
    for (int64_t j = 0; j < kLanes; ++j) sum += lanes[j];
    e[l] = sum;
  }
}

// The backward of additive_scores_image, recomputing t = tanh(keys + q) rather than keeping it
// (T x [B, L, A] floats otherwise): d = g w (1 - t^2) is added into the keys' gradient and the
// query's, g t into w's.
template <typename T>
__attribute__((target_clones("avx512f", "avx2", "default"))) void additive_scores_backward_image(
    const T* __restrict keys,
    const T* __restrict q,
    const T* __restrict w,
    const T* __restrict grad_e,
    T* __restrict grad_keys,
    T* __restrict grad_q,
    T* __restrict grad_w,
    int64_t L,
    int64_t A) {
  for (int64_t l = 0; l < L; ++l) {
    const T g = grad_e[l];
    const T* k = keys + l * A;
    T* gk = grad_keys + l * A;
    for (int64_t a = 0; a < A; ++a) {
      const T t = fast_tanh(k[a] + q[a]);
      const T d = g * w[a] * (T(1) - t * t);
      gk[a] += d;
      grad_q[a] += d;
      grad_w[a] += g * t;
    }
  }
}

// Backward node of additive_scores(): edges to q, w and the keys' token.
class AdditiveScoresBackward : public torch::autograd::Node {
 public:
  AdditiveScoresBackward(TimeSharedTensor keys, torch::Tensor q, torch::Tensor w)
      : keys_(std::move(keys)), q_(std::move(q)), w_(std::move(w)) {}
  std::string name() const override { return "AdditiveScoresBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    if (!grads[0].defined()) return {torch::Tensor(), torch::Tensor(), torch::empty({0}, q_.options())};
    const auto grad_e = grads[0].contiguous();  // [n, L]
    const int64_t n = q_.size(0), L = grad_e.size(1), A = q_.size(1);
    const auto keys = keys_.value().narrow(0, 0, n).contiguous();                              // [n, L, A]
    auto grad_keys = should_compute_output(2) ? keys_.grad_rows(n) : torch::zeros_like(keys);  // [n, L, A]
    auto grad_q = torch::zeros({n, A}, q_.options());                                          // [n, A]
    auto grad_w_parts = torch::zeros({at::get_num_threads(), A}, q_.options());                // per thread
    AT_DISPATCH_FLOATING_TYPES(q_.scalar_type(), "additive_scores_backward", [&] {
      const scalar_t* k = keys.data_ptr<scalar_t>();
      const scalar_t* q = q_.data_ptr<scalar_t>();
      const scalar_t* ge = grad_e.data_ptr<scalar_t>();
      scalar_t* gk = grad_keys.data_ptr<scalar_t>();
      scalar_t* gq = grad_q.data_ptr<scalar_t>();
      scalar_t* gw_parts = grad_w_parts.data_ptr<scalar_t>();
      at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
        scalar_t* gw = gw_parts + at::get_thread_num() * A;
        for (int64_t b = begin; b < end; ++b) {
          additive_scores_backward_image(
              k + b * L * A, q + b * A, w_.data_ptr<scalar_t>(), ge + b * L, gk + b * L * A, gq + b * A, gw,
              L, A);
        }
      });
    });
    return {grad_q, grad_w_parts.sum(0), torch::empty({0}, q_.options())};
  }

 private:
  TimeSharedTensor keys_;
  torch::Tensor q_;  // [n, A] detached, contiguous
  torch::Tensor w_;  // [A] detached, contiguous
};

}  // namespace

// One autograd node whose backward makes one more pass over [n, L, A] (see the header).
torch::Tensor additive_scores(const TimeSharedTensor& keys, const torch::Tensor& q, const torch::Tensor& w) {
  const int64_t n = q.size(0), L = keys.value().size(1), A = keys.value().size(2);
  if (!takes_cpu_kernels(q, /*doubles_too=*/true) || keys.value().scalar_type() != q.scalar_type()) {
    return torch::matmul(torch::tanh(keys.source().narrow(0, 0, n) + q.unsqueeze(1)), w);  // [n, L]
  }
  RECORD_FUNCTION("saccade::additive_scores", std::vector<c10::IValue>({q}));  // named in profiles
  const auto k = keys.value().narrow(0, 0, n).contiguous();                    // [n, L, A]
  const auto q_values = q.detach().contiguous();                               // [n, A]
  const auto w_values = w.detach().contiguous();                               // [A]
  auto e = torch::empty({n, L}, q.options());                                  // [n, L]
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "additive_scores", [&] {
    const scalar_t* kp = k.data_ptr<scalar_t>();
    const scalar_t* qp = q_values.data_ptr<scalar_t>();
    scalar_t* ep = e.data_ptr<scalar_t>();
    at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        additive_scores_image(kp + b * L * A, qp + b * A, w_values.data_ptr<scalar_t>(), ep + b * L, L, A);
      }
    });
  });
  if (torch::autograd::compute_requires_grad(q, w, keys.token())) {
    auto node = std::shared_ptr<AdditiveScoresBackward>(
        new AdditiveScoresBackward(keys, q_values, w_values), torch::autograd::deleteNode);
    node->set_next_edges(torch::autograd::collect_next_edges(q, w, keys.token()));
    torch::autograd::set_history(e, node);
  }
  return e;
}

namespace {

// z = sum_l alpha[l] v[l, :] for one (image, head): v [L, Dv] -> z [Dv]. Four rows per pass over z
// keep its loads and stores a quarter of v's.
template <typename T>
__attribute__((target_clones("avx512f", "avx2", "default"))) void expected_value_row(
    const T* __restrict alpha, const T* __restrict v, T* __restrict z, int64_t L, int64_t Dv) {
  for (int64_t d = 0; d < Dv; ++d) z[d] = 0;
  int64_t l = 0;
  for (; l + 4 <= L; l += 4) {
    const T a0 = alpha[l], a1 = alpha[l + 1], a2 = alpha[l + 2], a3 = alpha[l + 3];
    const T *r0 = v + l * Dv, *r1 = r0 + Dv, *r2 = r1 + Dv, *r3 = r2 + Dv;
    for (int64_t d = 0; d < Dv; ++d) z[d] += a0 * r0[d] + a1 * r1[d] + a2 * r2[d] + a3 * r3[d];
  }
  for (; l < L; ++l) {
    const T a = alpha[l];
    const T* row = v + l * Dv;
    for (int64_t d = 0; d < Dv; ++d) z[d] += a * row[d];
  }
}

// The gradient of alpha: grad_alpha[l] = g . v[l, :] for one (image, head), with sixteen partial
// sums so the dot product vectorizes.
template <typename T>
__attribute__((target_clones("avx512f", "avx2", "default"))) void expected_value_grad_alpha_row(
    const T* __restrict g, const T* __restrict v, T* __restrict grad_alpha, int64_t L, int64_t Dv) {
  constexpr int64_t kLanes = 16;
  for (int64_t l = 0; l < L; ++l) {
    const T* row = v + l * Dv;
    T lanes[kLanes] = {};
    int64_t d = 0;
    for (; d + kLanes <= Dv; d += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lanes[j] += g[d + j] * row[d + j];
    }
    T sum = 0;
    for (; d < Dv; ++d) sum += g[d] * row[d];
    for (int64_t j = 0; j < kLanes; ++j) sum += lanes[j];
    grad_alpha[l] = sum;
  }
}

// The soft context z = sum_l alpha_l v_l (eq. 13) per image and head, images over the threads.
class ExpectedValue : public torch::autograd::Function<ExpectedValue> {
 public:
  // alpha [B, N, L], values [B, N, L, Dv] -> [B, N, Dv]
  static torch::Tensor forward(
      torch::autograd::AutogradContext* ctx, const torch::Tensor& alpha, const torch::Tensor& values) {
    RECORD_FUNCTION("saccade::expected_value", std::vector<c10::IValue>({alpha}));  // named in profiles
    const int64_t rows = alpha.size(0) * alpha.size(1), L = values.size(2), Dv = values.size(3);
    const auto a = alpha.contiguous(), v = values.contiguous();
    auto z = torch::empty({alpha.size(0), alpha.size(1), Dv}, values.options());  // [B, N, Dv]
    AT_DISPATCH_FLOATING_TYPES(v.scalar_type(), "expected_value", [&] {
      const scalar_t* ap = a.data_ptr<scalar_t>();
      const scalar_t* vp = v.data_ptr<scalar_t>();
      scalar_t* zp = z.data_ptr<scalar_t>();
      at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
          expected_value_row(ap + r * L, vp + r * L * Dv, zp + r * Dv, L, Dv);
      });
    });
    ctx->save_for_backward({a, v});
    return z;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& alpha = saved[0];          // [B, N, L]
    const auto& values = saved[1];         // [B, N, L, Dv]
    const auto g = grads[0].contiguous();  // [B, N, Dv]
    const int64_t rows = alpha.size(0) * alpha.size(1), L = values.size(2), Dv = values.size(3);
    torch::Tensor grad_alpha, grad_values;
    if (ctx->needs_input_grad(0)) {
      grad_alpha = torch::empty_like(alpha);  // [B, N, L]
      AT_DISPATCH_FLOATING_TYPES(values.scalar_type(), "expected_value_backward", [&] {
        const scalar_t* gp = g.data_ptr<scalar_t>();
        const scalar_t* vp = values.data_ptr<scalar_t>();
        scalar_t* ga = grad_alpha.data_ptr<scalar_t>();
        at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r)
            expected_value_grad_alpha_row(gp + r * Dv, vp + r * L * Dv, ga + r * L, L, Dv);
        });
      });
    }
    if (ctx->needs_input_grad(1)) grad_values = alpha.unsqueeze(-1) * g.unsqueeze(-2);  // [B, N, L, Dv]
    return {grad_alpha, grad_values};
  }
};

}  // namespace

torch::Tensor expected_value(const torch::Tensor& alpha, const torch::Tensor& values) {
  if (!takes_cpu_kernels(values, /*doubles_too=*/true) || alpha.scalar_type() != values.scalar_type()) {
    return torch::matmul(alpha.unsqueeze(-2), values).squeeze(-2);  // [B, N, Dv]
  }
  return ExpectedValue::apply(alpha, values);
}

}  // namespace saccade
