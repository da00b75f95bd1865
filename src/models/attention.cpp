// Attention kinds, the soft context reader and the attention registry (see attention.h).
#include "models/attention.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>

namespace saccade {
namespace {

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, AttentionBuilder>& registry() {
  static std::map<std::string, AttentionBuilder> builders;
  return builders;
}

template <typename Impl>
Attention make_attention(const AttentionOptions& options) {
  return Attention(std::shared_ptr<AttentionImpl>(std::make_shared<Impl>(options)));
}

void register_builtin_attentions() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& builders = registry();
    builders["additive"] = make_attention<AdditiveAttentionImpl>;
    builders["dot"] = make_attention<DotAttentionImpl>;
    builders["scaled_dot"] = make_attention<DotAttentionImpl>;
    builders["general"] = make_attention<GeneralAttentionImpl>;
    builders["multihead"] = make_attention<MultiheadAttentionImpl>;
  });
}

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// Checks annotations [B, L, D] and the optional mask [B, L]; returns the mask as bool.
torch::Tensor checked_mask(
    const torch::Tensor& annotations, const torch::Tensor& mask, int64_t annotation_dim) {
  if (annotations.dim() != 3 || annotations.size(2) != annotation_dim) {
    throw std::invalid_argument(
        "Attention expects annotations [B, L, " + std::to_string(annotation_dim) + "], got " +
        c10::str(annotations.sizes()));
  }
  if (!mask.defined()) return {};
  if (mask.dim() != 2 || mask.size(0) != annotations.size(0) || mask.size(1) != annotations.size(1)) {
    throw std::invalid_argument(
        "The attention mask must be [B, L] = " + c10::str(annotations.sizes().slice(0, 2)) + ", got " +
        c10::str(mask.sizes()));
  }
  return mask.to(torch::kBool);
}

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

// e = w^T tanh(keys[:n] + q) (eq. 4, f_att) for q [n, A], as one autograd node. This [n, L, A]
// work dominates an attention step; plain autograd would keep tanh's output for every step and
// make five passes over [n, L, A] in backward (outer product with w, tanh backward, sum over L,
// w's gradient, adding up the keys' gradients of all steps). Here forward makes one pass and
// keeps nothing, backward one more, adding into the keys' shared gradient in place.
torch::Tensor additive_scores(const TimeSharedTensor& keys, const torch::Tensor& q, const torch::Tensor& w) {
  RECORD_FUNCTION("saccade::additive_scores", std::vector<c10::IValue>({q}));  // named in profiles
  const int64_t n = q.size(0), L = keys.value().size(1), A = keys.value().size(2);
  const auto k = keys.value().narrow(0, 0, n).contiguous();  // [n, L, A]
  const auto q_values = q.detach().contiguous();             // [n, A]
  const auto w_values = w.detach().contiguous();             // [A]
  auto e = torch::empty({n, L}, q.options());                // [n, L]
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

// The soft context z = sum_l alpha_l v_l (eq. 13) per image and head. ATen's bmm runs this as one
// single-row GEMM per image, one after another; these loops split the images over the threads
// and read the [B, L, D] values once per pass.
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

void validate(const AttentionOptions& options) {
  const auto kinds = attention_kinds();
  if (std::find(kinds.begin(), kinds.end(), options.kind) == kinds.end()) {
    throw std::invalid_argument("Unknown attention kind '" + options.kind + "'; known kinds: " + join(kinds));
  }
  if (options.annotation_dim <= 0) throw std::invalid_argument("The attention's annotation dim must be > 0");
  if (options.query_dim <= 0) throw std::invalid_argument("The attention's query dim must be > 0");
  if (options.dim <= 0) throw std::invalid_argument("The attention dim must be > 0");
  if (options.heads <= 0) throw std::invalid_argument("The number of attention heads must be > 0");
  if (options.kind == "multihead" && options.dim % options.heads != 0) {
    throw std::invalid_argument(
        "The attention dim (" + std::to_string(options.dim) + ") must be divisible by the number of heads (" +
        std::to_string(options.heads) + ")");
  }
}

AttentionMemory AttentionMemory::index_select(const torch::Tensor& index) const {
  return {
      keys.index_select(0, index), values.index_select(0, index),
      mask.defined() ? mask.index_select(0, index) : torch::Tensor(), nullptr};
}

AttentionMemory AttentionMemory::head(int64_t n) const {
  return {
      keys.narrow(0, 0, n), values.narrow(0, 0, n), mask.defined() ? mask.narrow(0, 0, n) : torch::Tensor(),
      shared_keys};
}

torch::Tensor HardContextReader::weights(const torch::Tensor& alpha) const {
  const int64_t rows = alpha.size(0), heads = alpha.size(1), locations = alpha.size(2);
  const auto flat = alpha.detach().reshape({rows * heads, locations});               // [B * N, L]
  const auto chosen = sample_ ? torch::multinomial(flat, 1) : flat.argmax(1, true);  // [B * N, 1] eq. 8
  const auto one_hot =
      torch::zeros_like(flat).scatter_(1, chosen, 1.0).view({rows, heads, locations});  // [B, N, L]
  if (!expectation_rows_.defined()) return one_hot;
  const auto expected = expectation_rows_.narrow(0, 0, rows).view({rows, 1, 1});  // [B, 1, 1]
  return torch::where(expected, alpha, one_hot);                                  // [B, N, L]
}

const ContextReader& soft_context_reader() {
  static const SoftContextReader reader;
  return reader;
}

AttentionImpl::AttentionImpl(const AttentionOptions& options) : options_(options) {
  validate(options_);
}

int64_t AttentionImpl::query_size() const {
  const auto weight = query_weight();
  return weight.defined() ? weight.size(0) : options_.query_dim;
}

torch::Tensor AttentionImpl::project_query(const torch::Tensor& h) {
  const auto weight = query_weight();
  if (!weight.defined()) return h;                                // [B, H]
  return torch::nn::functional::linear(h, weight, query_bias());  // [B, Q]
}

torch::Tensor AttentionImpl::combine(const torch::Tensor& glimpses) {
  return glimpses.squeeze(1);  // [B, D]
}

AttentionStep AttentionImpl::attend(
    const AttentionMemory& memory, const torch::Tensor& q, const ContextReader& reader) {
  auto e = scores(memory, q);  // [B, N, L]
  if (memory.mask.defined()) {
    e = e.masked_fill(
        memory.mask.logical_not().unsqueeze(1), -std::numeric_limits<double>::infinity());  // [B, N, L]
  }
  const auto alpha = torch::softmax(e, -1);                                    // [B, N, L]  eq. 5
  const auto weights = reader.weights(alpha);                                  // [B, N, L]
  const auto context = combine(ExpectedValue::apply(weights, memory.values));  // [B, D]  eq. 13
  const auto unheaded = [&](const torch::Tensor& x) { return keeps_heads() ? x : x.squeeze(1); };
  return {context, unheaded(alpha), unheaded(weights)};
}

AttentionStep AttentionImpl::forward(
    const AttentionMemory& memory, const torch::Tensor& h, const ContextReader& reader) {
  return attend(memory, project_query(h), reader);
}

AdditiveAttentionImpl::AdditiveAttentionImpl(const AttentionOptions& options) : AttentionImpl(options) {
  key = register_module("key", torch::nn::Linear(options.annotation_dim, options.dim));
  query = register_module(
      "query", torch::nn::Linear(torch::nn::LinearOptions(options.query_dim, options.dim).bias(false)));
  score = register_module("score", torch::nn::Linear(torch::nn::LinearOptions(options.dim, 1).bias(false)));
}

torch::Tensor AttentionImpl::project(
    const torch::nn::Linear& layer, const torch::Tensor& annotations, PackedWeights& packed) {
  const int64_t batch = annotations.size(0), locations = annotations.size(1);
  const auto rows = annotations.reshape({batch * locations, annotations.size(2)});  // [B * L, D]
  return packed.linear(rows, layer->weight, layer->bias).view({batch, locations, layer->weight.size(0)});
}

AttentionMemory AdditiveAttentionImpl::remember(
    const torch::Tensor& annotations, const torch::Tensor& mask, PackedWeights packed) {
  const auto valid = checked_mask(annotations, mask, options_.annotation_dim);
  const auto keys = project(key, annotations, packed);  // [B, L, A]  W_a a_i + b, once per image
  return {keys, annotations.unsqueeze(1), valid, std::make_shared<TimeSharedTensor>(keys)};
}

torch::Tensor AdditiveAttentionImpl::scores(const AttentionMemory& memory, const torch::Tensor& q) {
  const auto keys = memory.shared_keys ? *memory.shared_keys : TimeSharedTensor(memory.keys);
  return additive_scores(keys, q, score->weight.squeeze(0)).unsqueeze(1);  // [B, 1, L]
}

DotAttentionImpl::DotAttentionImpl(const AttentionOptions& options)
    : AttentionImpl(options),
      scale_(options.kind == "scaled_dot" ? 1.0 / std::sqrt(double(options.dim)) : 1.0) {
  key = register_module("key", torch::nn::Linear(options.annotation_dim, options.dim));
  query = register_module("query", torch::nn::Linear(options.query_dim, options.dim));
}

AttentionMemory DotAttentionImpl::remember(
    const torch::Tensor& annotations, const torch::Tensor& mask, PackedWeights packed) {
  const auto valid = checked_mask(annotations, mask, options_.annotation_dim);
  return {
      project(key, annotations, packed), annotations.unsqueeze(1), valid,
      nullptr};  // keys [B, L, A], values [B, 1, L, D]
}

torch::Tensor DotAttentionImpl::scores(const AttentionMemory& memory, const torch::Tensor& q) {
  auto e = torch::bmm(memory.keys, q.unsqueeze(2)).transpose(1, 2);  // [B, 1, L]
  return scale_ == 1.0 ? e : e * scale_;                             // [B, 1, L]
}

GeneralAttentionImpl::GeneralAttentionImpl(const AttentionOptions& options) : AttentionImpl(options) {
  key = register_module(
      "key",
      torch::nn::Linear(torch::nn::LinearOptions(options.annotation_dim, options.query_dim).bias(false)));
}

AttentionMemory GeneralAttentionImpl::remember(
    const torch::Tensor& annotations, const torch::Tensor& mask, PackedWeights packed) {
  const auto valid = checked_mask(annotations, mask, options_.annotation_dim);
  return {
      project(key, annotations, packed), annotations.unsqueeze(1), valid,
      nullptr};  // keys [B, L, H] = W a_i, values [B, 1, L, D]
}

torch::Tensor GeneralAttentionImpl::scores(const AttentionMemory& memory, const torch::Tensor& q) {
  return torch::bmm(memory.keys, q.unsqueeze(2)).transpose(1, 2);  // [B, 1, L]  h^T W a_i
}

MultiheadAttentionImpl::MultiheadAttentionImpl(const AttentionOptions& options) : AttentionImpl(options) {
  key = register_module("key", torch::nn::Linear(options.annotation_dim, options.dim));
  value = register_module("value", torch::nn::Linear(options.annotation_dim, options.dim));
  query = register_module("query", torch::nn::Linear(options.query_dim, options.dim));
  output = register_module("output", torch::nn::Linear(options.dim, options.annotation_dim));
}

AttentionMemory MultiheadAttentionImpl::remember(
    const torch::Tensor& annotations, const torch::Tensor& mask, PackedWeights packed) {
  const auto valid = checked_mask(annotations, mask, options_.annotation_dim);
  const int64_t batch = annotations.size(0), locations = annotations.size(1);
  const int64_t heads = options_.heads, head_dim = options_.dim / options_.heads;
  const auto split = [&](const torch::Tensor& x) {
    return x.view({batch, locations, heads, head_dim}).transpose(1, 2).contiguous();  // [B, N, L, K]
  };
  return {
      split(project(key, annotations, packed)), split(project(value, annotations, packed)), valid, nullptr};
}

torch::Tensor MultiheadAttentionImpl::scores(const AttentionMemory& memory, const torch::Tensor& q) {
  const int64_t heads = options_.heads, head_dim = options_.dim / options_.heads;
  const auto per_head = q.reshape({q.size(0), heads, head_dim, 1});                       // [B, N, K, 1]
  return torch::matmul(memory.keys, per_head).squeeze(-1) / std::sqrt(double(head_dim));  // [B, N, L]
}

torch::Tensor MultiheadAttentionImpl::combine(const torch::Tensor& glimpses) {
  return output(glimpses.reshape({glimpses.size(0), options_.dim}));  // [B, D]
}

void register_attention(const std::string& kind, AttentionBuilder builder) {
  register_builtin_attentions();
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[kind] = std::move(builder);
}

std::vector<std::string> attention_kinds() {
  register_builtin_attentions();
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<std::string> kinds;
  for (const auto& entry : registry()) kinds.push_back(entry.first);
  return kinds;
}

Attention build_attention(const AttentionOptions& options) {
  validate(options);
  AttentionBuilder builder;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    builder = registry().at(options.kind);
  }
  return builder(options);
}

}  // namespace saccade
