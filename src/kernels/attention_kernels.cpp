// The fused attention kernels: additive scores and the expected value, each one autograd node
// (see attention_kernels.h).
#include "kernels/attention_kernels.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/vector_lanes.h"

namespace saccade {
namespace {

// The additive scores of one image: e[l] = sum_a w[a] tanh(keys[l, a] + q[a]) (eq. 4, f_att),
// W values of a at a time.
template <int W, typename T>
SACCADE_INLINE void additive_scores_image(const T* keys, const T* q, const T* w, T* e, int64_t L, int64_t A) {
  const int64_t A_lanes = A - A % W;
  for (int64_t l = 0; l < L; ++l) {
    const T* k = keys + l * A;
    Lanes<T, W> lanes = {};
    for (int64_t a = 0; a < A_lanes; a += W)
      lanes += load<W>(w + a) * tanh_lanes(load<W>(k + a) + load<W>(q + a));
    T sum = sum_lanes(lanes);
    for (int64_t a = A_lanes; a < A; ++a) sum += w[a] * tanh_lanes(load<1>(k + a) + load<1>(q + a))[0];
    e[l] = sum;
  }
}

// The backward of additive_scores_image for W values of a at one location, recomputing
// t = tanh(keys + q) rather than keeping it (T x [B, L, A] values otherwise): d = g w (1 - t^2)
// is added into the keys' gradient and the query's, g t into w's.
template <int W, typename T>
SACCADE_INLINE void add_additive_scores_gradients(
    const T* k, const T* q, const T* w, T g, T* grad_k, T* grad_q, T* grad_w) {
  const auto t = tanh_lanes(load<W>(k) + load<W>(q));
  const auto d = g * load<W>(w) * (T(1) - t * t);
  store(grad_k, load<W>(grad_k) + d);
  store(grad_q, load<W>(grad_q) + d);
  store(grad_w, load<W>(grad_w) + g * t);
}

template <int W, typename T>
SACCADE_INLINE void additive_scores_backward_image(
    const T* keys,
    const T* q,
    const T* w,
    const T* grad_e,
    T* grad_keys,
    T* grad_q,
    T* grad_w,
    int64_t L,
    int64_t A) {
  const int64_t A_lanes = A - A % W;
  for (int64_t l = 0; l < L; ++l) {
    const T* k = keys + l * A;
    T* gk = grad_keys + l * A;
    int64_t a = 0;
    for (; a < A_lanes; a += W)
      add_additive_scores_gradients<W>(k + a, q + a, w + a, grad_e[l], gk + a, grad_q + a, grad_w + a);
    for (; a < A; ++a)
      add_additive_scores_gradients<1>(k + a, q + a, w + a, grad_e[l], gk + a, grad_q + a, grad_w + a);
  }
}

// z[0:W] += sum_{j < R} alpha[j] v[j, 0:W], v's rows `stride` apart.
template <int W, int R, typename T>
SACCADE_INLINE void add_weighted_rows(T* z, const T* alpha, const T* v, int64_t stride) {
  auto sum = load<W>(z);
  for (int j = 0; j < R; ++j) sum += alpha[j] * load<W>(v + j * stride);
  store(z, sum);
}

// z = sum_l alpha[l] v[l, :] for one (image, head): v [L, Dv] -> z [Dv]. Four rows per pass over z
// keep its loads and stores a quarter of v's, and v is read in order.
template <int W, int R, typename T>
SACCADE_INLINE void add_weighted_row_group(T* z, const T* alpha, const T* v, int64_t Dv) {
  int64_t d = 0;
  for (; d + W <= Dv; d += W) add_weighted_rows<W, R>(z + d, alpha, v + d, Dv);
  for (; d < Dv; ++d) add_weighted_rows<1, R>(z + d, alpha, v + d, Dv);
}

template <int W, typename T>
SACCADE_INLINE void expected_value_row(const T* alpha, const T* v, T* z, int64_t L, int64_t Dv) {
  std::fill(z, z + Dv, T(0));
  int64_t l = 0;
  for (; l + 4 <= L; l += 4) add_weighted_row_group<W, 4>(z, alpha + l, v + l * Dv, Dv);
  for (; l < L; ++l) add_weighted_row_group<W, 1>(z, alpha + l, v + l * Dv, Dv);
}

// The gradient of alpha: grad_alpha[l] = g . v[l, :] for one (image, head).
template <int W, typename T>
SACCADE_INLINE void expected_value_grad_alpha_row(
    const T* g, const T* v, T* grad_alpha, int64_t L, int64_t Dv) {
  const int64_t Dv_lanes = Dv - Dv % W;
  for (int64_t l = 0; l < L; ++l) {
    const T* row = v + l * Dv;
    Lanes<T, W> lanes = {};
    for (int64_t d = 0; d < Dv_lanes; d += W) lanes += load<W>(g + d) * load<W>(row + d);
    T sum = sum_lanes(lanes);
    for (int64_t d = Dv_lanes; d < Dv; ++d) sum += g[d] * row[d];
    grad_alpha[l] = sum;
  }
}

// The four loops over one image (or one image and head), each compiled for AVX2 and for
// AVX-512: the lanes one register wide, a * b + c one FMA.
template <typename T>
struct ImageKernels {
  void (*scores)(const T* keys, const T* q, const T* w, T* e, int64_t L, int64_t A);
  void (*scores_backward)(
      const T* keys,
      const T* q,
      const T* w,
      const T* grad_e,
      T* grad_keys,
      T* grad_q,
      T* grad_w,
      int64_t L,
      int64_t A);
  void (*expected_value)(const T* alpha, const T* v, T* z, int64_t L, int64_t Dv);
  void (*expected_value_grad_alpha)(const T* g, const T* v, T* grad_alpha, int64_t L, int64_t Dv);
};

#if defined(__x86_64__)

// The kernels of ImageKernels compiled for one instruction set (`features`), whose registers
// hold `bytes` bytes.
#define SACCADE_DEFINE_IMAGE_KERNELS(isa, features, bytes)                                             \
  template <typename T>                                                                                \
  __attribute__((target(features))) void scores_##isa(                                                 \
      const T* keys, const T* q, const T* w, T* e, int64_t L, int64_t A) {                             \
    additive_scores_image<bytes / sizeof(T)>(keys, q, w, e, L, A);                                     \
  }                                                                                                    \
  template <typename T>                                                                                \
  __attribute__((target(features))) void scores_backward_##isa(                                        \
      const T* keys, const T* q, const T* w, const T* ge, T* gk, T* gq, T* gw, int64_t L, int64_t A) { \
    additive_scores_backward_image<bytes / sizeof(T)>(keys, q, w, ge, gk, gq, gw, L, A);               \
  }                                                                                                    \
  template <typename T>                                                                                \
  __attribute__((target(features))) void expected_value_##isa(                                         \
      const T* alpha, const T* v, T* z, int64_t L, int64_t Dv) {                                       \
    expected_value_row<bytes / sizeof(T)>(alpha, v, z, L, Dv);                                         \
  }                                                                                                    \
  template <typename T>                                                                                \
  __attribute__((target(features))) void grad_alpha_##isa(                                             \
      const T* g, const T* v, T* grad_alpha, int64_t L, int64_t Dv) {                                  \
    expected_value_grad_alpha_row<bytes / sizeof(T)>(g, v, grad_alpha, L, Dv);                         \
  }                                                                                                    \
  template <typename T>                                                                                \
  constexpr ImageKernels<T> image_kernels_##isa = {                                                    \
      scores_##isa<T>, scores_backward_##isa<T>, expected_value_##isa<T>, grad_alpha_##isa<T>};

SACCADE_DEFINE_IMAGE_KERNELS(avx2, "avx2,fma", 32)
SACCADE_DEFINE_IMAGE_KERNELS(avx512, "avx512f,fma", 64)
#undef SACCADE_DEFINE_IMAGE_KERNELS

template <typename T>
const ImageKernels<T>& image_kernels(KernelIsa isa) {
  return isa == KernelIsa::avx512 ? image_kernels_avx512<T> : image_kernels_avx2<T>;
}

#else

template <typename T>
const ImageKernels<T>& image_kernels(KernelIsa) {
  throw std::logic_error("the attention kernels are compiled for x86-64 only");
}

#endif

// Backward node of additive_scores(): edges to q, w and the keys' token.
class AdditiveScoresBackward : public torch::autograd::Node {
 public:
  AdditiveScoresBackward(KernelIsa isa, TimeSharedTensor keys, torch::Tensor q, torch::Tensor w)
      : isa_(isa), keys_(std::move(keys)), q_(std::move(q)), w_(std::move(w)) {}
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
      const auto backward_image = image_kernels<scalar_t>(isa_).scores_backward;
      at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
        scalar_t* gw = gw_parts + at::get_thread_num() * A;
        for (int64_t b = begin; b < end; ++b) {
          backward_image(
              k + b * L * A, q + b * A, w_.data_ptr<scalar_t>(), ge + b * L, gk + b * L * A, gq + b * A, gw,
              L, A);
        }
      });
    });
    return {grad_q, grad_w_parts.sum(0), torch::empty({0}, q_.options())};
  }

 private:
  KernelIsa isa_;
  TimeSharedTensor keys_;
  torch::Tensor q_;  // [n, A] detached, contiguous
  torch::Tensor w_;  // [A] detached, contiguous
};

}  // namespace

// One autograd node whose backward makes one more pass over [n, L, A] (see the header).
torch::Tensor additive_scores(const TimeSharedTensor& keys, const torch::Tensor& q, const torch::Tensor& w) {
  return additive_scores(best_kernel_isa(), keys, q, w);
}

torch::Tensor additive_scores(
    KernelIsa isa, const TimeSharedTensor& keys, const torch::Tensor& q, const torch::Tensor& w) {
  const int64_t n = q.size(0), L = keys.value().size(1), A = keys.value().size(2);
  if (isa == KernelIsa::none || !takes_cpu_kernels(q, /*doubles_too=*/true) ||
      keys.value().scalar_type() != q.scalar_type()) {
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
    const auto scores_image = image_kernels<scalar_t>(isa).scores;
    at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        scores_image(kp + b * L * A, qp + b * A, w_values.data_ptr<scalar_t>(), ep + b * L, L, A);
      }
    });
  });
  if (torch::autograd::compute_requires_grad(q, w, keys.token())) {
    auto node = std::shared_ptr<AdditiveScoresBackward>(
        new AdditiveScoresBackward(isa, keys, q_values, w_values), torch::autograd::deleteNode);
    node->set_next_edges(torch::autograd::collect_next_edges(q, w, keys.token()));
    torch::autograd::set_history(e, node);
  }
  return e;
}

namespace {

// The soft context z = sum_l alpha_l v_l (eq. 13) per image and head, images over the threads.
class ExpectedValue : public torch::autograd::Function<ExpectedValue> {
 public:
  // alpha [B, N, L], values [B, N, L, Dv] -> [B, N, Dv]
  static torch::Tensor forward(
      torch::autograd::AutogradContext* ctx,
      KernelIsa isa,
      const torch::Tensor& alpha,
      const torch::Tensor& values) {
    RECORD_FUNCTION("saccade::expected_value", std::vector<c10::IValue>({alpha}));  // named in profiles
    const int64_t rows = alpha.size(0) * alpha.size(1), L = values.size(2), Dv = values.size(3);
    const auto a = alpha.contiguous(), v = values.contiguous();
    auto z = torch::empty({alpha.size(0), alpha.size(1), Dv}, values.options());  // [B, N, Dv]
    AT_DISPATCH_FLOATING_TYPES(v.scalar_type(), "expected_value", [&] {
      const scalar_t* ap = a.data_ptr<scalar_t>();
      const scalar_t* vp = v.data_ptr<scalar_t>();
      scalar_t* zp = z.data_ptr<scalar_t>();
      const auto expected_value_image = image_kernels<scalar_t>(isa).expected_value;
      at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
          expected_value_image(ap + r * L, vp + r * L * Dv, zp + r * Dv, L, Dv);
      });
    });
    ctx->save_for_backward({a, v});
    ctx->saved_data["isa"] = static_cast<int64_t>(isa);
    return z;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& alpha = saved[0];          // [B, N, L]
    const auto& values = saved[1];         // [B, N, L, Dv]
    const auto g = grads[0].contiguous();  // [B, N, Dv]
    const int64_t rows = alpha.size(0) * alpha.size(1), L = values.size(2), Dv = values.size(3);
    const auto isa = static_cast<KernelIsa>(ctx->saved_data["isa"].toInt());
    torch::Tensor grad_alpha, grad_values;
    if (ctx->needs_input_grad(0)) {
      grad_alpha = torch::empty_like(alpha);  // [B, N, L]
      AT_DISPATCH_FLOATING_TYPES(values.scalar_type(), "expected_value_backward", [&] {
        const scalar_t* gp = g.data_ptr<scalar_t>();
        const scalar_t* vp = values.data_ptr<scalar_t>();
        scalar_t* ga = grad_alpha.data_ptr<scalar_t>();
        const auto grad_alpha_image = image_kernels<scalar_t>(isa).expected_value_grad_alpha;
        at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r)
            grad_alpha_image(gp + r * Dv, vp + r * L * Dv, ga + r * L, L, Dv);
        });
      });
    }
    if (ctx->needs_input_grad(1)) grad_values = alpha.unsqueeze(-1) * g.unsqueeze(-2);  // [B, N, L, Dv]
    return {torch::Tensor(), grad_alpha, grad_values};
  }
};

}  // namespace

torch::Tensor expected_value(const torch::Tensor& alpha, const torch::Tensor& values) {
  return expected_value(best_kernel_isa(), alpha, values);
}

torch::Tensor expected_value(KernelIsa isa, const torch::Tensor& alpha, const torch::Tensor& values) {
  if (isa == KernelIsa::none || !takes_cpu_kernels(values, /*doubles_too=*/true) ||
      alpha.scalar_type() != values.scalar_type()) {
    return torch::matmul(alpha.unsqueeze(-2), values).squeeze(-2);  // [B, N, Dv]
  }
  return ExpectedValue::apply(isa, alpha, values);
}

}  // namespace saccade
