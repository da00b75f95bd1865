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
#include <utility>
#include <vector>

#include "kernels/vector_lanes.h"

namespace saccade {
namespace {

// The rows of a [B, ...] memory that a step's images read, as a kernel indexes them: `images`
// [count] (int64, each in [0, B)) or, undefined, 0 .. count - 1. Holds the index's CPU copy.
class ImageRows {
 public:
  ImageRows(const torch::Tensor& images, int64_t count, int64_t rows, const char* kernel) {
    if (!images.defined()) {
      TORCH_CHECK(count <= rows, kernel, ": ", count, " images read a memory of ", rows);
      return;
    }
    TORCH_CHECK(
        images.dim() == 1 && images.size(0) == count && images.scalar_type() == torch::kLong, kernel,
        ": the images' rows must be int64 [", count, "], got ", images.sizes(), " ", images.scalar_type());
    index_ = images.to(torch::kCPU).contiguous();
    const int64_t* row = index_.data_ptr<int64_t>();
    TORCH_CHECK(
        std::all_of(row, row + count, [rows](int64_t r) { return r >= 0 && r < rows; }), kernel,
        ": an image's row is outside the memory's ", rows);
  }

  int64_t operator[](int64_t image) const {
    return index_.defined() ? index_.data_ptr<int64_t>()[image] : image;
  }

  // x's rows for the plain ops: the index's, or the first count.
  static torch::Tensor select(const torch::Tensor& x, const torch::Tensor& images, int64_t count) {
    return images.defined() ? x.index_select(0, images.to(x.device())) : x.narrow(0, 0, count);
  }

 private:
  torch::Tensor index_;
};

// The additive scores at locations [l_begin, l_end) of one image for its R query rows:
// e[j][l] = sum_a w[a] tanh(keys[l, a] + q[j][a]) (eq. 4, f_att), W values of a at a time. A
// location's keys are read once for all R rows (the beams of one image), from L1 after the first.
template <int W, typename T>
SACCADE_INLINE void additive_scores_locations(
    const T* keys,
    const T* q,
    const T* w,
    T* e,
    int64_t l_begin,
    int64_t l_end,
    int64_t L,
    int64_t A,
    int64_t R) {
  const int64_t A_lanes = A - A % W;
  for (int64_t l = l_begin; l < l_end; ++l) {
    const T* k = keys + l * A;
    for (int64_t j = 0; j < R; ++j) {
      const T* query = q + j * A;
      Lanes<T, W> lanes = {};
      for (int64_t a = 0; a < A_lanes; a += W)
        lanes += load<W>(w + a) * tanh_lanes(load<W>(k + a) + load<W>(query + a));
      T sum = sum_lanes(lanes);
      for (int64_t a = A_lanes; a < A; ++a) sum += w[a] * tanh_lanes(load<1>(k + a) + load<1>(query + a))[0];
      e[j * L + l] = sum;
    }
  }
}

// A step's backward of the additive scores for W values of a at one location, recomputing
// t = tanh(keys + q) rather than keeping it (T x [B, L, A] values otherwise): d = g w (1 - t^2)
// is added into the query's gradient, g t into w's. The keys' gradient waits for every step
// (keys_gradient_locations).
template <int W, typename T>
SACCADE_INLINE void add_query_gradients(const T* k, const T* q, const T* w, T g, T* grad_q, T* grad_w) {
  const auto t = tanh_lanes(load<W>(k) + load<W>(q));
  store(grad_q, load<W>(grad_q) + g * load<W>(w) * (T(1) - t * t));
  store(grad_w, load<W>(grad_w) + g * t);
}

template <int W, typename T>
SACCADE_INLINE void additive_scores_backward_image(
    const T* keys, const T* q, const T* w, const T* grad_e, T* grad_q, T* grad_w, int64_t L, int64_t A) {
  const int64_t A_lanes = A - A % W;
  for (int64_t l = 0; l < L; ++l) {
    const T* k = keys + l * A;
    int64_t a = 0;
    for (; a < A_lanes; a += W)
      add_query_gradients<W>(k + a, q + a, w + a, grad_e[l], grad_q + a, grad_w + a);
    for (; a < A; ++a) add_query_gradients<1>(k + a, q + a, w + a, grad_e[l], grad_q + a, grad_w + a);
  }
}

// W values of a of the keys' gradient at one location of an image, over the `steps` steps that
// read it: w sum_t g_t (1 - tanh(k + q_t)^2), g_t the gradient of the step's score there.
template <int W, typename T>
SACCADE_INLINE void keys_gradient_lanes(
    const T* k, const T* const* q, const T* g, int64_t steps, int64_t a, const T* w, T* grad_k) {
  const auto key = load<W>(k + a);
  Lanes<T, W> sum = {};
  for (int64_t t = 0; t < steps; ++t) {
    const auto tanh = tanh_lanes(key + load<W>(q[t] + a));
    sum += g[t] * (T(1) - tanh * tanh);
  }
  store(grad_k + a, sum * load<W>(w + a));
}

// The keys' gradient of one image at locations [l_begin, l_end), every step at once: one pass over
// the keys and their gradient, where adding each step's share in its own backward made one each.
// q[t] is the image's query at step t, g[t] the gradient of its scores [L].
template <int W, typename T>
SACCADE_INLINE void keys_gradient_locations(
    const T* keys,
    const T* const* q,
    const T* const* g,
    int64_t steps,
    const T* w,
    T* grad_keys,
    int64_t l_begin,
    int64_t l_end,
    int64_t A) {
  const int64_t A_lanes = A - A % W;
  std::vector<T> g_at(static_cast<size_t>(steps));
  for (int64_t l = l_begin; l < l_end; ++l) {
    for (int64_t t = 0; t < steps; ++t) g_at[t] = g[t][l];
    int64_t a = 0;
    for (; a < A_lanes; a += W)
      keys_gradient_lanes<W>(keys + l * A, q, g_at.data(), steps, a, w, grad_keys + l * A);
    for (; a < A; ++a) keys_gradient_lanes<1>(keys + l * A, q, g_at.data(), steps, a, w, grad_keys + l * A);
  }
}

// z[0:W] += sum_{i < G} alpha[i] v[i, 0:W], v's rows `stride` apart.
template <int W, int G, typename T>
SACCADE_INLINE void add_weighted_rows(T* z, const T* alpha, const T* v, int64_t stride) {
  auto sum = load<W>(z);
  for (int i = 0; i < G; ++i) sum += alpha[i] * load<W>(v + i * stride);
  store(z, sum);
}

// Columns [d_begin, d_end) of z_j = sum_l alpha_j[l] v[l, :] for one (image, head) and its R rows
// j (the beams of one image): v [L, Dv], alpha_j at alpha + j * alpha_stride, z_j at
// z + j * z_stride. G rows of v per pass over the columns keep z's loads and stores a G-th of
// v's, v is read in order and once for all R rows, and a block of columns of every z_j stays in L1.
template <int W, int G, typename T>
SACCADE_INLINE void add_weighted_row_group(
    T* z,
    int64_t z_stride,
    const T* alpha,
    int64_t alpha_stride,
    const T* v,
    int64_t Dv,
    int64_t d_begin,
    int64_t d_end,
    int64_t R) {
  int64_t d = d_begin;
  for (; d + W <= d_end; d += W) {
    for (int64_t j = 0; j < R; ++j)
      add_weighted_rows<W, G>(z + j * z_stride + d, alpha + j * alpha_stride, v + d, Dv);
  }
  for (; d < d_end; ++d) {
    for (int64_t j = 0; j < R; ++j)
      add_weighted_rows<1, G>(z + j * z_stride + d, alpha + j * alpha_stride, v + d, Dv);
  }
}

template <int W, typename T>
SACCADE_INLINE void expected_value_columns(
    const T* alpha,
    int64_t alpha_stride,
    const T* v,
    T* z,
    int64_t z_stride,
    int64_t L,
    int64_t Dv,
    int64_t d_begin,
    int64_t d_end,
    int64_t R) {
  for (int64_t j = 0; j < R; ++j) std::fill(z + j * z_stride + d_begin, z + j * z_stride + d_end, T(0));
  int64_t l = 0;
  for (; l + 4 <= L; l += 4)
    add_weighted_row_group<W, 4>(z, z_stride, alpha + l, alpha_stride, v + l * Dv, Dv, d_begin, d_end, R);
  for (; l < L; ++l)
    add_weighted_row_group<W, 1>(z, z_stride, alpha + l, alpha_stride, v + l * Dv, Dv, d_begin, d_end, R);
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

// The loops over one image (or one image and head), each compiled for AVX2 and for AVX-512: the
// lanes one register wide, a * b + c one FMA.
template <typename T>
struct ImageKernels {
  decltype(&additive_scores_locations<1, T>) scores;
  decltype(&additive_scores_backward_image<1, T>) scores_backward;
  decltype(&keys_gradient_locations<1, T>) keys_gradient;
  decltype(&expected_value_columns<1, T>) expected_value;
  decltype(&expected_value_grad_alpha_row<1, T>) expected_value_grad_alpha;
};

#if defined(__x86_64__)

// The kernels on one instruction set (`On`), whose registers hold `Bytes` bytes.
template <template <auto> class On, int Bytes, typename T>
constexpr ImageKernels<T> image_kernels_on = {
    On<&additive_scores_locations<Bytes / sizeof(T), T>>::run,
    On<&additive_scores_backward_image<Bytes / sizeof(T), T>>::run,
    On<&keys_gradient_locations<Bytes / sizeof(T), T>>::run,
    On<&expected_value_columns<Bytes / sizeof(T), T>>::run,
    On<&expected_value_grad_alpha_row<Bytes / sizeof(T), T>>::run};

template <typename T>
const ImageKernels<T>& image_kernels(KernelIsa isa) {
  return isa == KernelIsa::avx512 ? image_kernels_on<OnAvx512, 64, T> : image_kernels_on<OnAvx2, 32, T>;
}

#else

template <typename T>
const ImageKernels<T>& image_kernels(KernelIsa) {
  throw std::logic_error("the attention kernels are compiled for x86-64 only");
}

#endif

// What the keys' gradient needs from every step's backward: the step's queries [n, A] and the
// gradient of its scores [n, L] (n: the images the step read, a prefix); the gradient is then
// made in one pass over the keys.
class AdditiveKeysGradient : public TimeSharedTensor::Gathered {
 public:
  AdditiveKeysGradient(KernelIsa isa, torch::Tensor keys, torch::Tensor w)
      : isa_(isa), keys_(keys.contiguous()), w_(std::move(w)) {}

  void record(torch::Tensor q, torch::Tensor grad_e) { steps_.push_back({std::move(q), std::move(grad_e)}); }

  torch::Tensor gradient() override {
    const int64_t B = keys_.size(0), L = keys_.size(1), A = keys_.size(2);
    auto grad = torch::empty_like(keys_);  // [B, L, A]; every location is written
    AT_DISPATCH_FLOATING_TYPES(keys_.scalar_type(), "additive_keys_gradient", [&] {
      const auto keys_gradient = image_kernels<scalar_t>(isa_).keys_gradient;
      at::parallel_for(0, B * L, 1, [&](int64_t begin, int64_t end) {
        std::vector<const scalar_t*> q, g;
        for (int64_t at = begin; at < end;) {
          const int64_t b = at / L, l_begin = at % L, l_end = std::min(L, l_begin + end - at);
          q.clear();
          g.clear();
          for (const auto& [step_q, step_grad] : steps_) {
            if (step_q.size(0) <= b) continue;  // the image had finished by this step
            q.push_back(step_q.data_ptr<scalar_t>() + b * A);
            g.push_back(step_grad.data_ptr<scalar_t>() + b * L);
          }
          keys_gradient(
              keys_.data_ptr<scalar_t>() + b * L * A, q.data(), g.data(), static_cast<int64_t>(q.size()),
              w_.data_ptr<scalar_t>(), grad.data_ptr<scalar_t>() + b * L * A, l_begin, l_end, A);
          at += l_end - l_begin;
        }
      });
    });
    return grad;
  }

 private:
  KernelIsa isa_;
  torch::Tensor keys_;                                          // [B, L, A]
  torch::Tensor w_;                                             // [A] contiguous
  std::vector<std::pair<torch::Tensor, torch::Tensor>> steps_;  // per step: q [n, A], grad_e [n, L]
};

// Backward node of additive_scores(): edges to q, w and the keys' token. The query's and w's
// gradients now, the keys' once every step has recorded its share (AdditiveKeysGradient).
class AdditiveScoresBackward : public torch::autograd::Node {
 public:
  AdditiveScoresBackward(KernelIsa isa, TimeSharedTensor keys, torch::Tensor q, torch::Tensor w)
      : isa_(isa), keys_(std::move(keys)), q_(std::move(q)), w_(std::move(w)) {}
  std::string name() const override { return "AdditiveScoresBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    if (!grads[0].defined()) return {torch::Tensor(), torch::Tensor(), torch::empty({0}, q_.options())};
    const auto grad_e = grads[0].contiguous();  // [n, L]
    const int64_t n = q_.size(0), L = grad_e.size(1), A = q_.size(1);
    const auto keys = keys_.value().narrow(0, 0, n).contiguous();                // [n, L, A]
    auto grad_q = torch::zeros({n, A}, q_.options());                            // [n, A]
    auto grad_w_parts = torch::zeros({at::get_num_threads(), A}, q_.options());  // per thread
    AT_DISPATCH_FLOATING_TYPES(q_.scalar_type(), "additive_scores_backward", [&] {
      const scalar_t* k = keys.data_ptr<scalar_t>();
      const scalar_t* q = q_.data_ptr<scalar_t>();
      const scalar_t* ge = grad_e.data_ptr<scalar_t>();
      scalar_t* gq = grad_q.data_ptr<scalar_t>();
      scalar_t* gw_parts = grad_w_parts.data_ptr<scalar_t>();
      const auto backward_image = image_kernels<scalar_t>(isa_).scores_backward;
      at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
        scalar_t* gw = gw_parts + at::get_thread_num() * A;
        for (int64_t b = begin; b < end; ++b)
          backward_image(k + b * L * A, q + b * A, w_.data_ptr<scalar_t>(), ge + b * L, gq + b * A, gw, L, A);
      });
    });
    if (should_compute_output(2))
      keys_.gathered<AdditiveKeysGradient>(isa_, keys_.value(), w_).record(q_, grad_e);
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
torch::Tensor additive_scores(
    const TimeSharedTensor& keys,
    const torch::Tensor& q,
    const torch::Tensor& w,
    int64_t beams,
    const torch::Tensor& images) {
  return additive_scores(best_kernel_isa(), keys, q, w, beams, images);
}

torch::Tensor additive_scores(
    KernelIsa isa,
    const TimeSharedTensor& keys,
    const torch::Tensor& q,
    const torch::Tensor& w,
    int64_t beams,
    const torch::Tensor& images) {
  const int64_t n = q.size(0), L = keys.value().size(1), A = keys.value().size(2);
  TORCH_CHECK(
      beams >= 1 && n % beams == 0, "additive_scores: ", n, " query rows are not whole images of ", beams,
      " beams");
  const int64_t count = n / beams;
  const ImageRows image_rows(images, count, keys.value().size(0), "additive_scores");
  if (isa == KernelIsa::none || !takes_cpu_kernels(q, /*doubles_too=*/true) ||
      keys.value().scalar_type() != q.scalar_type()) {
    const auto k = ImageRows::select(keys.source(), images, count);
    return torch::matmul(
        torch::tanh((beams > 1 ? k.repeat_interleave(beams, 0) : k) + q.unsqueeze(1)), w);  // [n, L]
  }
  const bool gradient = torch::autograd::compute_requires_grad(q, w, keys.token());
  TORCH_CHECK(!gradient || beams == 1, "additive_scores: no gradient through keys shared by beams");
  TORCH_CHECK(!gradient || !images.defined(), "additive_scores: no gradient through keys read by an index");
  RECORD_FUNCTION("saccade::additive_scores", std::vector<c10::IValue>({q}));  // named in profiles
  const auto k = keys.value().contiguous();                                    // [B, L, A]
  const auto q_values = q.detach().contiguous();                               // [n, A]
  const auto w_values = w.detach().contiguous();                               // [A]
  auto e = torch::empty({n, L}, q.options());                                  // [n, L]
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "additive_scores", [&] {
    const scalar_t* kp = k.data_ptr<scalar_t>();
    const scalar_t* qp = q_values.data_ptr<scalar_t>();
    scalar_t* ep = e.data_ptr<scalar_t>();
    const auto scores_locations = image_kernels<scalar_t>(isa).scores;
    // The images' locations split over the threads, so one image's beams use them all.
    at::parallel_for(0, count * L, 1, [&](int64_t begin, int64_t end) {
      for (int64_t at = begin; at < end;) {
        const int64_t b = at / L, l_begin = at % L, l_end = std::min(L, l_begin + end - at);
        scores_locations(
            kp + image_rows[b] * L * A, qp + b * beams * A, w_values.data_ptr<scalar_t>(), ep + b * beams * L,
            l_begin, l_end, L, A, beams);
        at += l_end - l_begin;
      }
    });
  });
  if (gradient) {
    auto node = std::shared_ptr<AdditiveScoresBackward>(
        new AdditiveScoresBackward(isa, keys, q_values, w_values), torch::autograd::deleteNode);
    node->set_next_edges(torch::autograd::collect_next_edges(q, w, keys.token()));
    torch::autograd::set_history(e, node);
  }
  return e;
}

namespace {

// The soft context z = sum_l alpha_l v_l (eq. 13) per image and head, images over the threads:
// alpha [C R, N, L], values [B, N, L, Dv] -> [C R, N, Dv], R rows (beams) for each of the C
// images, which read rows `images` of values (undefined: the first C).
torch::Tensor expected_value_rows(
    KernelIsa isa,
    const torch::Tensor& alpha,
    const torch::Tensor& values,
    int64_t beams,
    const torch::Tensor& images) {
  RECORD_FUNCTION("saccade::expected_value", std::vector<c10::IValue>({alpha}));  // named in profiles
  const int64_t N = alpha.size(1), L = values.size(2), Dv = values.size(3), count = alpha.size(0) / beams;
  const ImageRows image_rows(images, count, values.size(0), "expected_value");
  const auto a = alpha.contiguous(), v = values.contiguous();
  auto z = torch::empty({alpha.size(0), N, Dv}, values.options());  // [C R, N, Dv]
  // Tasks of (image, head, block of columns): an image's beams split its columns over the threads.
  constexpr int64_t kColumns = 512;
  const int64_t blocks = (Dv + kColumns - 1) / kColumns;
  AT_DISPATCH_FLOATING_TYPES(v.scalar_type(), "expected_value", [&] {
    const scalar_t* ap = a.data_ptr<scalar_t>();
    const scalar_t* vp = v.data_ptr<scalar_t>();
    scalar_t* zp = z.data_ptr<scalar_t>();
    const auto expected_value_columns = image_kernels<scalar_t>(isa).expected_value;
    at::parallel_for(0, count * N * blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t block = task % blocks, h = task / blocks % N, b = task / blocks / N;
        expected_value_columns(
            ap + (b * beams * N + h) * L, N * L, vp + (image_rows[b] * N + h) * L * Dv,
            zp + (b * beams * N + h) * Dv, N * Dv, L, Dv, block * kColumns,
            std::min(Dv, (block + 1) * kColumns), beams);
      }
    });
  });
  return z;
}

// expected_value_rows as an autograd node, one row per image (beams = 1, no index).
class ExpectedValue : public torch::autograd::Function<ExpectedValue> {
 public:
  static torch::Tensor forward(
      torch::autograd::AutogradContext* ctx,
      KernelIsa isa,
      const torch::Tensor& alpha,
      const torch::Tensor& values) {
    const auto a = alpha.contiguous(), v = values.contiguous();
    auto z = expected_value_rows(isa, a, v, 1, {});
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

torch::Tensor expected_value(
    const torch::Tensor& alpha, const torch::Tensor& values, int64_t beams, const torch::Tensor& images) {
  return expected_value(best_kernel_isa(), alpha, values, beams, images);
}

torch::Tensor expected_value(
    KernelIsa isa,
    const torch::Tensor& alpha,
    const torch::Tensor& values,
    int64_t beams,
    const torch::Tensor& images) {
  const int64_t count = images.defined() ? images.size(0) : values.size(0);
  TORCH_CHECK(
      beams >= 1 && alpha.size(0) == count * beams, "expected_value: alpha ", alpha.sizes(), " is not ",
      beams, " rows per image of ", count, " images of values ", values.sizes());
  if (isa == KernelIsa::none || !takes_cpu_kernels(values, /*doubles_too=*/true) ||
      alpha.scalar_type() != values.scalar_type()) {
    const auto read = ImageRows::select(values, images, count);
    const auto per_row = beams > 1 ? read.repeat_interleave(beams, 0) : read;
    return torch::matmul(alpha.unsqueeze(-2), per_row).squeeze(-2);  // [C R, N, Dv]
  }
  if (!torch::autograd::compute_requires_grad(alpha, values))
    return expected_value_rows(isa, alpha, values, beams, images);
  TORCH_CHECK(beams == 1, "expected_value: no gradient through values shared by beams");
  TORCH_CHECK(!images.defined(), "expected_value: no gradient through values read by an index");
  return ExpectedValue::apply(isa, alpha, values);
}

bool kernels_read_in_place(const torch::Tensor& memory) {
  return best_kernel_isa() != KernelIsa::none && takes_cpu_kernels(memory, /*doubles_too=*/true) &&
         !torch::GradMode::is_enabled();
}

}  // namespace saccade
