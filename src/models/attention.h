// Attention over the annotation grid: the kinds the seed papers use, behind one interface.
//
//   AttentionOptions options;            // additive, D = H = A = 512
//   Attention attention = build_attention(options);
//   AttentionMemory memory = attention->remember(annotations);   // once per image: [B, L, D]
//   for (t ...) {
//     AttentionStep step = attention->forward(memory, h);         // h_{t-1}: [B, H]
//     step.context;  // z_t [B, D]
//     step.alpha;    // [B, L] ([B, heads, L] for multihead), sums to 1 over L
//   }
//
// Shape legend: B batch, L = H*W locations, D annotation dim, H decoder state dim (the query),
// A attention dim, N heads (1 for single-head kinds), K key dim of one head.
//
// Kinds (score e_i of location i given the decoder state h; alpha = softmax_i(e)):
//   additive    e_i = w^T tanh(W_a a_i + b + W_h h)       the paper's f_att MLP (eq. 4, 5)
//   dot         e_i = (W_k a_i + b_k) . (W_q h + b_q)     dot product in an A-dim space
//   scaled_dot  e_i = dot / sqrt(A)
//   general     e_i = h^T W a_i                           bilinear (Luong's "general"), W: [H, D]
//   multihead   N heads of scaled_dot with K = A/N each, values W_v a_i per head; the N head
//               contexts are concatenated and mapped back to D by an output projection W_o.
//   local       additive scores inside a window of the grid around a centre predicted from h,
//               weighted by a Gaussian around it; exactly 0 outside (Luong et al. 2015, local-p,
//               in 2D; LocalAttentionImpl).
// With coverage (AttentionOptions::coverage), any kind's scores also read where the attention has
// looked (AttentionHistory), weighted by two gates the query sets at each step:
//   e_ti += g_t^last alpha_{t-1,i} + g_t^cov sum_{s<t} alpha_{s,i},   (g_t^last, g_t^cov) = W_g q_t + b_g
// so a step can look again where the last one looked (the shape after its colour) or away from
// what the caption has read (the next object): Tu et al. (2016)'s coverage vector, entering the
// score as a feature whose sign and weight the step chooses.
// The paper's scalar bias on e (c_tt in the authors' code) is left out: softmax ignores it.
//
// Everything that depends only on the annotations (keys, values) is computed once per image by
// remember(); the per-step work is the query projection and the scores. The query projection is
// exposed (query_weight/query_bias) so the decoder can fuse it with its other maps of h_{t-1}
// into one GEMM per step.
//
// Soft and hard attention differ only in the weights the context averages the values with: a
// ContextReader. The soft reader takes alpha itself, the expectation sum_i alpha_i a_i (paper
// Sec. 4.2, eq. 13); the hard reader one location per row, sampled from alpha (Sec. 4.1, eq. 8-9).
//
// Adding a kind: subclass AttentionImpl and define
//   memory_keys(annotations, project)    [B, L, D] -> keys, once per image; project(layer, a)
//                                        applies one of the kind's Linear layers to the annotations
//   memory_values(annotations, project)  what alpha averages, [B, N, L, Dv]; by default the
//                                        annotations themselves, one head
//   query_weight(), query_bias()         the map of h_{t-1} to the query q
//   scores(memory, q)                    e [B, N, L] from the keys and q, before masking
//   combine(glimpses)                    only with several heads: [B, N, Dv] -> the context [B, D]
// then add a builder under the kind's name to attention_registry(). The base class does the rest
// (shape checks, masking, softmax, soft or hard reading, packing the projections for decoding).
// DotAttentionImpl is the simplest complete kind; the additive kind's scores are a fused kernel
// (kernels/attention_kernels.h), which a new kind need not use.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/registry.h"
#include "kernels/packed_linear.h"
#include "kernels/time_shared.h"

namespace saccade {

// Where local attention centres its window (LocalAttentionImpl).
enum class LocalCentre {
  predicted,  // local-p: from the decoder state, at every step
  monotonic,  // the previous step's peak cell; the first step predicts it
};
std::string to_string(LocalCentre centre);
// "predicted" | "monotonic"; throws std::invalid_argument naming the value otherwise.
LocalCentre parse_local_centre(const std::string& name);

struct AttentionOptions {
  // A registered kind: additive | dot | scaled_dot | general | multihead | local (attention_registry()).
  std::string kind = "additive";
  // D: size of one annotation vector a_i (the encoder's channels, e.g. 2048 for ResNet-101).
  int64_t annotation_dim = 512;
  // H: size of the query, the decoder's hidden state h_{t-1}.
  int64_t query_dim = 512;
  // A: the space scores are computed in (additive: the MLP's hidden size; dot, scaled_dot,
  // multihead: the projected key/query size). Unused by general, which scores in the H space.
  int64_t dim = 512;
  // N: number of heads for multihead (must divide dim); ignored by the other kinds.
  int64_t heads = 1;
  // local: cells on each side of the centre cell, a window of (2 window + 1)^2 cells.
  int64_t window = 2;
  // local: how the window's centre is chosen.
  LocalCentre centre = LocalCentre::predicted;
  // [Hg, Wg] of the annotation grid (L = Hg * Wg, row-major); local needs it, {0, 0} = unknown.
  std::array<int64_t, 2> grid{0, 0};
  // Whether the scores read the attention's history through two gates of the query (see above).
  bool coverage = false;
};

// Throws std::invalid_argument, one sentence per broken rule (unknown kind lists the known ones).
void validate(const AttentionOptions& options);

// Where the attention has looked before the current step, one row per row of the memory.
struct AttentionHistory {
  // The previous step's alpha [B, L] (or [B, N, L]); undefined before the first step.
  torch::Tensor previous_alpha;
  // With coverage: the sum of every previous step's alpha, like previous_alpha; undefined before
  // the first step and without coverage.
  torch::Tensor coverage;

  // Rows `index` [B'] of both, in that order.
  AttentionHistory rows(const torch::Tensor& index) const;
  // Their first n rows, as views.
  AttentionHistory prefix(int64_t n) const;
  // Each row repeated `beams` times, b R .. b R + R - 1.
  AttentionHistory repeated(int64_t beams) const;
};

// The encoder-side part of attention, computed once per image and reused at every step and beam.
struct AttentionMemory {
  torch::Tensor keys;    // [B, L, A] (general: [B, L, H]; multihead: [B, N, L, K])
  torch::Tensor values;  // [B, N, L, Dv]: what alpha averages (single head: the annotations)
  torch::Tensor mask;    // [B, L] bool, true = a real location; undefined = every location is real
  // The keys again, for fused kernels that read a prefix keys[:n] per step and add its gradient
  // in place into one buffer for all steps (additive); kinds written with plain ops read `keys`.
  // Shared by head(), dropped by index_select() (those keys are new tensors), made anew for
  // them by select_images().
  std::shared_ptr<TimeSharedTensor> shared_keys;
  // Where the attention has looked: the decoder sets it after each step (AttentionImpl::after_step);
  // local attention with a monotonic centre and coverage read it.
  AttentionHistory history;
  // Rows per image: 1, or R beams whose rows b R .. b R + R - 1 all read image b's keys and
  // values, kept once (AttentionImpl::for_beams); mask and history have a row per beam.
  int64_t beams = 1;
  // The keys transposed, [B, N, A, L] (N = 1 but for multihead), for the kinds whose scores are
  // dot products where no gradient is needed and the CPU kernels run: the expected-value kernel
  // (kernels/attention_kernels.h) reads them in that layout, an image's once for all its beams.
  torch::Tensor keys_t = {};
  // The rows of keys, values and keys_t (int64 [B'], on their device) that the images of a search
  // read, in order, where images have left it; undefined: every row, in order. Set by
  // select_images() where the CPU kernels read the memory, so that leaving copies nothing.
  torch::Tensor images = {};

  // Number of rows: images times beams.
  int64_t size() const { return (images.defined() ? images.size(0) : keys.size(0)) * beams; }
  // x [B, ...] (keys, values or keys_t) at the rows the images read, for the plain ops.
  torch::Tensor per_image(const torch::Tensor& x) const;
  // Rows `index` [B'] of every member, in that order, one image's copy per row (beams = 1).
  AttentionMemory index_select(const torch::Tensor& index) const;
  // Images `images` [B'] and their rows `rows` [B' beams], in that order: the beams keep sharing
  // their image's keys and values (a row count other than B' beams is refused). Where the CPU
  // kernels read them, they are not copied: the selection reads them through `images`.
  AttentionMemory select_images(const torch::Tensor& images, const torch::Tensor& rows) const;
  // The first n rows of every member, as views (the active prefix of a length-sorted batch);
  // beams = 1 only.
  AttentionMemory head(int64_t n) const;
  // A copy: keys, values and keys_t at rows `read` of theirs, mask and history at `rows`,
  // `beams` rows per image; shared_keys not carried (the keys are new tensors).
  AttentionMemory copied(const torch::Tensor& read, const torch::Tensor& rows, int64_t beams) const;
};

// The output of one attention step.
struct AttentionStep {
  torch::Tensor context;  // z_t [B, D]
  torch::Tensor alpha;    // [B, L] ([B, N, L] for multihead); 0 at masked locations
  torch::Tensor weights;  // like alpha: what the context averaged (alpha itself, or one-hot rows)
};

// How attention weights become a context: the one place where soft and hard attention differ.
// The context is sum_i w_i v_i with the weights w this returns.
class ContextReader {
 public:
  virtual ~ContextReader() = default;
  // alpha [B, N, L] (rows sum to 1) -> w [B, N, L] (rows sum to 1).
  virtual torch::Tensor weights(const torch::Tensor& alpha) const = 0;
};

// Soft (deterministic) attention: w = alpha, the expected annotation.
class SoftContextReader : public ContextReader {
 public:
  torch::Tensor weights(const torch::Tensor& alpha) const override { return alpha; }
};

// Hard (stochastic) attention: w is one-hot at one location per row and head, sampled from alpha
// (`sample`, training) or alpha's most likely location (decoding). No gradient flows through the
// choice (REINFORCE trains alpha: train/objectives.h, train/scst.h). Rows b with expectation_rows[b] read
// alpha itself: the paper (Sec. 4.1) sets the sampled location to its expected value for half
// of the training captions. Readers see a prefix of B rows when the batch shrinks. Given
// `locations` ([B] with one head, [B, N] with N), every row reads those instead of choosing: a
// path replayed.
class HardContextReader : public ContextReader {
 public:
  explicit HardContextReader(bool sample, torch::Tensor expectation_rows = {}, torch::Tensor locations = {})
      : sample_(sample), expectation_rows_(std::move(expectation_rows)), locations_(std::move(locations)) {}
  torch::Tensor weights(const torch::Tensor& alpha) const override;

 private:
  bool sample_;
  torch::Tensor expectation_rows_;  // [B] bool, or undefined: every row reads its chosen location
  torch::Tensor locations_;         // [B] or [B, N] int64, or undefined: choose
};

// The shared soft reader (stateless).
const ContextReader& soft_context_reader();

// Applies a kind's linear layer to the annotations [B, L, D] -> [B, L, out] in memory_keys() and
// memory_values(), through the packed weights a decoding decoder keeps (kernels/packed_linear.h).
class AnnotationProjector {
 public:
  explicit AnnotationProjector(PackedWeights packed) : packed_(std::move(packed)) {}
  torch::Tensor operator()(const torch::nn::Linear& layer, const torch::Tensor& annotations);

 private:
  PackedWeights packed_;
};

// The attention interface (see "Adding a kind" above). The softmax, masking and reading are shared.
class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const AttentionOptions& options);
  const AttentionOptions& options() const { return options_; }

  // Encoder side, once per image: annotations [B, L, D], optional mask [B, L] (true = real).
  // The projections of the annotations go through `packed`: a decoder passes the packs it keeps
  // while its weights do not change.
  AttentionMemory remember(
      const torch::Tensor& annotations, const torch::Tensor& mask = {}, PackedWeights packed = {});

  // The query map h [B, H] -> q [B, Q] as weight [Q, H] and bias [Q] (either may be undefined:
  // no weight means q = h, no bias means zero). The decoder fuses this weight with its other
  // maps of h_{t-1}; project_query() applies it on its own.
  virtual torch::Tensor query_weight() const = 0;
  virtual torch::Tensor query_bias() const { return {}; }
  // Q: the size of the projected query.
  int64_t query_size() const;
  torch::Tensor project_query(const torch::Tensor& h);

  // Scores e [B, N, L] of every location for a projected query q [B, Q], before masking.
  virtual torch::Tensor scores(const AttentionMemory& memory, const torch::Tensor& q) = 0;

  // Maps the per-head glimpses [B, N, Dv] to the context [B, D] (identity for one head).
  virtual torch::Tensor combine(const torch::Tensor& glimpses);

  // `memory` for beam search: each image's rows repeated `beams` times, b K .. b K + K - 1.
  // Where the CPU kernels run, the keys and values stay one copy per image (AttentionMemory::beams):
  // the dot-product kinds keep their keys transposed (keys_t), additive and local read them as
  // they are; elsewhere they are copied per beam.
  virtual AttentionMemory for_beams(const AttentionMemory& memory, int64_t beams);

  // One step from a projected query q [B, Q]: scores (with coverage, the history's too), mask,
  // softmax over L, read, combine.
  AttentionStep attend(
      const AttentionMemory& memory,
      const torch::Tensor& q,
      const ContextReader& reader = soft_context_reader());

  // One step from the decoder state h [B, H]: attend(memory, project_query(h), reader).
  AttentionStep forward(
      const AttentionMemory& memory,
      const torch::Tensor& h,
      const ContextReader& reader = soft_context_reader());

  // `history` after a step whose weights were alpha: alpha is the previous one, and with coverage
  // it joins the sum.
  AttentionHistory after_step(const AttentionHistory& history, const torch::Tensor& alpha) const;

  // With coverage: W_g, b_g, the two gates of the history's terms, {weight [2, Q], bias [2]}.
  // build_attention adds them once the kind has its query map.
  torch::nn::Linear coverage_gates{nullptr};
  void add_coverage_gates();

 protected:
  // The keys of annotations [B, L, D]: [B, L, A] (or per head [B, N, L, K]).
  virtual torch::Tensor memory_keys(const torch::Tensor& annotations, AnnotationProjector& project) = 0;
  // keys [B, L, A] or [B, N, L, A] -> [B, N, A, L], contiguous.
  static torch::Tensor transposed_keys(const torch::Tensor& keys);
  // Whether for_beams may keep one copy per image of `memory`'s keys and values.
  static bool beams_can_share(const AttentionMemory& memory);
  // `memory` with a row of mask and history per beam and `beams` rows per image of the rest.
  static AttentionMemory shared_by_beams(const AttentionMemory& memory, int64_t beams);
  // Dot-product scores [B, N, L] of q [B, N * A] against keys [B, L, A] or [B, N, L, A], or
  // against memory.keys_t where it is kept.
  static torch::Tensor dot_scores(const AttentionMemory& memory, const torch::Tensor& q);

  // What alpha averages, [B, N, L, Dv]: the annotations as one head unless a kind says otherwise.
  virtual torch::Tensor memory_values(const torch::Tensor& annotations, AnnotationProjector& project);
  // Whether alpha keeps its head dimension ([B, N, L]) in AttentionStep.
  virtual bool keeps_heads() const { return false; }
  // Whether the scores are dot products of the query with the keys (dot_scores).
  virtual bool dot_product_scores() const { return false; }
  // The history's share of the scores, [B, 1, L] or [B, N, L], for q [B, Q].
  torch::Tensor history_scores(const AttentionHistory& history, const torch::Tensor& q);

  AttentionOptions options_;
};
TORCH_MODULE(Attention);

// dot and scaled_dot: e_i = key(a_i) . query(h) * scale, scale 1 or 1/sqrt(A). Parameters: key
// [A, D] + bias, query [A, H] + bias. The simplest kind: keys, a query map and a score.
class DotAttentionImpl : public AttentionImpl {
 public:
  explicit DotAttentionImpl(const AttentionOptions& options);
  torch::Tensor query_weight() const override { return query->weight; }
  torch::Tensor query_bias() const override { return query->bias; }
  torch::Tensor scores(const AttentionMemory& memory, const torch::Tensor& q) override;

  torch::nn::Linear key{nullptr}, query{nullptr};

 protected:
  torch::Tensor memory_keys(const torch::Tensor& annotations, AnnotationProjector& project) override;
  bool dot_product_scores() const override { return true; }

 private:
  double scale_ = 1.0;  // 1 for dot, 1/sqrt(A) for scaled_dot
};

// additive: e_i = w^T tanh(key(a_i) + query(h)). Parameters: key [A, D] + bias (the paper's W_a,
// b), query [A, H] without bias (W_h; the authors' Wd_att), score [1, A] without bias (w).
class AdditiveAttentionImpl : public AttentionImpl {
 public:
  explicit AdditiveAttentionImpl(const AttentionOptions& options);
  torch::Tensor query_weight() const override { return query->weight; }
  torch::Tensor scores(const AttentionMemory& memory, const torch::Tensor& q) override;
  AttentionMemory for_beams(const AttentionMemory& memory, int64_t beams) override;

  torch::nn::Linear key{nullptr}, query{nullptr}, score{nullptr};

 protected:
  torch::Tensor memory_keys(const torch::Tensor& annotations, AnnotationProjector& project) override;
};

// general: e_i = h^T W a_i with W [H, D] (stored as key: a_i -> W a_i, no bias); the query is h.
class GeneralAttentionImpl : public AttentionImpl {
 public:
  explicit GeneralAttentionImpl(const AttentionOptions& options);
  torch::Tensor query_weight() const override { return {}; }
  torch::Tensor scores(const AttentionMemory& memory, const torch::Tensor& q) override;

  torch::nn::Linear key{nullptr};

 protected:
  torch::Tensor memory_keys(const torch::Tensor& annotations, AnnotationProjector& project) override;
  bool dot_product_scores() const override { return true; }
};

// multihead: N heads of scaled dot-product attention with K = A/N. Parameters: key [A, D] + bias,
// value [A, D] + bias, query [A, H] + bias, output [D, A] + bias; head n uses rows n*K..(n+1)*K-1
// of key, value and query. alpha is [B, N, L], one map per head for visualization.
class MultiheadAttentionImpl : public AttentionImpl {
 public:
  explicit MultiheadAttentionImpl(const AttentionOptions& options);
  torch::Tensor query_weight() const override { return query->weight; }
  torch::Tensor query_bias() const override { return query->bias; }
  torch::Tensor scores(const AttentionMemory& memory, const torch::Tensor& q) override;
  torch::Tensor combine(const torch::Tensor& glimpses) override;

  torch::nn::Linear key{nullptr}, value{nullptr}, query{nullptr}, output{nullptr};

 protected:
  torch::Tensor memory_keys(const torch::Tensor& annotations, AnnotationProjector& project) override;
  torch::Tensor memory_values(const torch::Tensor& annotations, AnnotationProjector& project) override;
  bool keeps_heads() const override { return true; }
  bool dot_product_scores() const override { return true; }

 private:
  torch::Tensor split_heads(const torch::Tensor& x) const;  // [B, L, A] -> [B, N, L, K]
};

// local: Luong et al. (2015)'s local-p attention on the 2D grid. The state predicts a centre in
// cells, p = (Hg - 1, Wg - 1) * sigmoid(v_p tanh(W_p h)) (row, column), or with a monotonic
// centre p is the previous step's peak cell (predicted at the first step), and only the window of
// cells within `window` rows and columns of the cell nearest p (fewer at the border) is scored:
//   e_s = w^T tanh(W_a a_s + b + W_h h) - |s - p|^2 / (2 sigma^2),  sigma = window / 2,
// and -inf outside, so alpha is the additive kind's weights times a Gaussian around p, renormalized
// over the window, and exactly 0 elsewhere. The Gaussian carries the gradient to the centre.
// Parameters: the additive kind's, centre_hidden [A, H] without bias (W_p) and centre_out
// {weight [2, A], bias} (v_p). The query q = [W_h h; W_p h] is [B, 2A].
class LocalAttentionImpl : public AdditiveAttentionImpl {
 public:
  explicit LocalAttentionImpl(const AttentionOptions& options);
  torch::Tensor query_weight() const override;
  torch::Tensor scores(const AttentionMemory& memory, const torch::Tensor& q) override;
  // The window's centre p [B, 2] (row, column; in cells, 0 = the first) for a query q [B, 2A].
  torch::Tensor window_centre(const torch::Tensor& q);
  // The (row, column) [B, 2] of each row's largest weight in alpha [B, L].
  torch::Tensor peak_cell(const torch::Tensor& alpha) const;

  torch::nn::Linear centre_hidden{nullptr}, centre_out{nullptr};

 protected:
  torch::Tensor memory_keys(const torch::Tensor& annotations, AnnotationProjector& project) override;
};

// The attention kinds by name: additive, dot, scaled_dot, general, multihead, local, and any added.
using AttentionBuilder = std::function<Attention(const AttentionOptions&)>;
Registry<AttentionBuilder>& attention_registry();

// Validates the options and builds the module of options.kind (with its coverage gates).
Attention build_attention(const AttentionOptions& options);

}  // namespace saccade
