// Attention kinds, the soft and hard context readers and the attention registry (see attention.h).
#include "models/attention.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "base/enum_names.h"
#include "kernels/attention_kernels.h"
#include "kernels/few_rows_linear.h"
#include "models/tensor_rows.h"

namespace saccade {
namespace {

const EnumNames<LocalCentre> kLocalCentreNames(
    "local attention centre", {{LocalCentre::predicted, "predicted"}, {LocalCentre::monotonic, "monotonic"}});

template <typename Impl>
Attention make_attention(const AttentionOptions& options) {
  return Attention(std::shared_ptr<AttentionImpl>(std::make_shared<Impl>(options)));
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

// local: the window is counted in cells of a known grid and must fit in it.
void validate_local_window(const AttentionOptions& options) {
  const auto [rows, columns] = options.grid;
  if (rows <= 0 || columns <= 0) {
    throw std::invalid_argument(
        "local attention needs the grid's size (encoder.grid): its window is counted in grid cells");
  }
  if (options.window < 1) {
    throw std::invalid_argument(
        "window must be >= 1 cell on each side of the centre, got " + std::to_string(options.window));
  }
  const int64_t span = 2 * options.window + 1, largest = (std::max(rows, columns) - 1) / 2;
  if (span > std::max(rows, columns)) {
    throw std::invalid_argument(
        "window " + std::to_string(options.window) + " spans " + std::to_string(span) + " x " +
        std::to_string(span) + " cells, more than the " + std::to_string(rows) + " x " +
        std::to_string(columns) + " grid" +
        (largest >= 1 ? "; at most " + std::to_string(largest) : ", which is too small for a local window"));
  }
}

}  // namespace

std::string to_string(LocalCentre centre) {
  return kLocalCentreNames.name(centre);
}
LocalCentre parse_local_centre(const std::string& name) {
  return kLocalCentreNames.parse(name);
}

void validate(const AttentionOptions& options) {
  attention_registry().check(options.kind);
  if (options.annotation_dim <= 0) throw std::invalid_argument("The attention's annotation dim must be > 0");
  if (options.query_dim <= 0) throw std::invalid_argument("The attention's query dim must be > 0");
  if (options.dim <= 0) throw std::invalid_argument("The attention dim must be > 0");
  if (options.heads <= 0) throw std::invalid_argument("The number of attention heads must be > 0");
  if (options.kind == "local") validate_local_window(options);
  if (options.kind == "multihead" && options.dim % options.heads != 0) {
    throw std::invalid_argument(
        "The attention dim (" + std::to_string(options.dim) + ") must be divisible by the number of heads (" +
        std::to_string(options.heads) + ")");
  }
}

AttentionHistory AttentionHistory::rows(const torch::Tensor& index) const {
  return {rows_of(previous_alpha, index), rows_of(coverage, index)};
}

AttentionHistory AttentionHistory::prefix(int64_t n) const {
  const auto first = [&](const torch::Tensor& x) { return x.defined() ? x.narrow(0, 0, n) : x; };
  return {first(previous_alpha), first(coverage)};
}

AttentionHistory AttentionHistory::repeated(int64_t beams) const {
  const auto per_beam = [&](const torch::Tensor& x) {
    return x.defined() ? x.repeat_interleave(beams, 0) : x;
  };
  return {per_beam(previous_alpha), per_beam(coverage)};
}

torch::Tensor AttentionMemory::per_image(const torch::Tensor& x) const {
  return images.defined() ? rows_of(x, images) : x;
}

AttentionMemory AttentionMemory::copied(
    const torch::Tensor& read, const torch::Tensor& rows, int64_t beams) const {
  AttentionMemory selected{
      rows_of(keys, read), rows_of(values, read), rows_of(mask, rows), nullptr, history.rows(rows), beams};
  selected.keys_t = rows_of(keys_t, read);
  return selected;
}

AttentionMemory AttentionMemory::index_select(const torch::Tensor& index) const {
  return copied(rows_read(images, beams > 1 ? index.div(beams, "floor") : index), index, 1);
}

AttentionMemory AttentionMemory::select_images(const torch::Tensor& chosen, const torch::Tensor& rows) const {
  TORCH_CHECK(
      rows.size(0) == chosen.size(0) * beams, "AttentionMemory::select_images: ", rows.size(0), " rows for ",
      chosen.size(0), " images of ", beams, " beams (a memory of one row per beam takes index_select)");
  // Where the CPU kernels read keys and values (the additive scores, the dot products' transposed
  // keys and every context), the chosen images read theirs in place.
  const auto read = rows_read(images, chosen);
  if (kernels_read_in_place(keys) && kernels_read_in_place(values)) {
    AttentionMemory selected = *this;
    selected.mask = rows_of(mask, rows);
    selected.history = history.rows(rows);
    selected.images = read;
    return selected;
  }
  AttentionMemory selected = copied(read, rows, beams);
  if (shared_keys) selected.shared_keys = std::make_shared<TimeSharedTensor>(selected.keys);
  return selected;
}

AttentionMemory AttentionMemory::head(int64_t n) const {
  TORCH_CHECK(beams == 1, "AttentionMemory::head: the rows of beams are not a length-sorted batch");
  TORCH_CHECK(
      !images.defined(), "AttentionMemory::head: the images of a search are not a length-sorted batch");
  const auto prefix = [&](const torch::Tensor& x) { return x.defined() ? x.narrow(0, 0, n) : x; };
  AttentionMemory first{prefix(keys), prefix(values), prefix(mask), shared_keys, history.prefix(n)};
  first.keys_t = prefix(keys_t);
  return first;
}

torch::Tensor HardContextReader::weights(const torch::Tensor& alpha) const {
  const int64_t rows = alpha.size(0), heads = alpha.size(1), locations = alpha.size(2);
  const auto flat = alpha.detach().reshape({rows * heads, locations});  // [B * N, L]
  const auto chosen = locations_.defined()
                          ? locations_.narrow(0, 0, rows).reshape({rows * heads, 1}).to(alpha.device())
                      : sample_ ? torch::multinomial(flat, 1)
                                : flat.argmax(1, true);  // [B * N, 1] eq. 8
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

torch::Tensor AnnotationProjector::operator()(
    const torch::nn::Linear& layer, const torch::Tensor& annotations) {
  const int64_t batch = annotations.size(0), locations = annotations.size(1);
  const auto rows = annotations.reshape({batch * locations, annotations.size(2)});  // [B * L, D]
  return packed_.linear(rows, layer->weight, layer->bias).view({batch, locations, layer->weight.size(0)});
}

AttentionMemory AttentionImpl::remember(
    const torch::Tensor& annotations, const torch::Tensor& mask, PackedWeights packed) {
  const auto valid = checked_mask(annotations, mask, options_.annotation_dim);
  AnnotationProjector project(std::move(packed));
  const auto keys = memory_keys(annotations, project);      // once per image
  const auto values = memory_values(annotations, project);  // [B, N, L, Dv]
  AttentionMemory memory{keys, values, valid, std::make_shared<TimeSharedTensor>(keys), AttentionHistory{}};
  if (dot_product_scores() && !torch::GradMode::is_enabled() && beams_can_share(memory))
    memory.keys_t = transposed_keys(keys);
  return memory;
}

torch::Tensor AttentionImpl::memory_values(const torch::Tensor& annotations, AnnotationProjector& project) {
  return annotations.unsqueeze(1);  // [B, 1, L, D]
}

torch::Tensor AttentionImpl::combine(const torch::Tensor& glimpses) {
  return glimpses.squeeze(1);  // [B, D]
}

bool AttentionImpl::beams_can_share(const AttentionMemory& memory) {
  return best_kernel_isa() != KernelIsa::none && takes_cpu_kernels(memory.keys, /*doubles_too=*/true) &&
         takes_cpu_kernels(memory.values, /*doubles_too=*/true) && memory.beams == 1;
}

AttentionMemory AttentionImpl::shared_by_beams(const AttentionMemory& memory, int64_t beams) {
  AttentionMemory shared = memory;
  shared.mask = memory.mask.defined() ? memory.mask.repeat_interleave(beams, 0) : memory.mask;
  shared.history = memory.history.repeated(beams);
  shared.beams = beams;
  return shared;
}

torch::Tensor AttentionImpl::dot_scores(const AttentionMemory& memory, const torch::Tensor& q) {
  if (memory.keys_t.defined()) {
    const auto per_head = q.reshape({q.size(0), memory.keys_t.size(1), memory.keys_t.size(2)});  // [B, N, A]
    return expected_value(per_head, memory.keys_t, memory.beams, memory.images);                 // [B, N, L]
  }
  const auto keys = memory.per_image(memory.keys);
  if (keys.dim() == 3) return torch::bmm(keys, q.unsqueeze(2)).transpose(1, 2);  // [B, 1, L]
  const int64_t heads = keys.size(1), head_dim = keys.size(3);
  return torch::matmul(keys, q.reshape({q.size(0), heads, head_dim, 1})).squeeze(-1);  // [B, N, L]
}

torch::Tensor AttentionImpl::transposed_keys(const torch::Tensor& keys) {
  const auto heads = keys.dim() == 3 ? keys.unsqueeze(1) : keys;  // [B, N, L, A]
  return heads.transpose(-2, -1).contiguous();                    // [B, N, A, L]
}

AttentionMemory AttentionImpl::for_beams(const AttentionMemory& memory, int64_t beams) {
  TORCH_CHECK(
      memory.beams == 1 && !memory.images.defined(),
      "for_beams: the memory already holds beams or a selection");
  if (!dot_product_scores() || !beams_can_share(memory)) {
    const auto rows = torch::arange(memory.size(), memory.keys.options().dtype(torch::kLong));
    return memory.index_select(rows.repeat_interleave(beams));
  }
  AttentionMemory shared = shared_by_beams(memory, beams);
  if (!shared.keys_t.defined()) shared.keys_t = transposed_keys(memory.keys);
  return shared;
}

AttentionStep AttentionImpl::attend(
    const AttentionMemory& memory, const torch::Tensor& q, const ContextReader& reader) {
  auto e = scores(memory, q);  // [B, N, L]
  if (options_.coverage && memory.history.previous_alpha.defined())
    e = e + history_scores(memory.history, q);  // [B, N, L]
  if (memory.mask.defined()) {
    e = e.masked_fill(
        memory.mask.logical_not().unsqueeze(1), -std::numeric_limits<double>::infinity());  // [B, N, L]
  }
  const auto alpha = torch::softmax(e, -1);    // [B, N, L]  eq. 5
  const auto weights = reader.weights(alpha);  // [B, N, L]
  const auto context =
      combine(expected_value(weights, memory.values, memory.beams, memory.images));  // [B, D]
  const auto unheaded = [&](const torch::Tensor& x) { return keeps_heads() ? x : x.squeeze(1); };
  return {context, unheaded(alpha), unheaded(weights)};
}

torch::Tensor AttentionImpl::history_scores(const AttentionHistory& history, const torch::Tensor& q) {
  TORCH_CHECK(
      coverage_gates, "Attention with coverage has no coverage gates (build it with build_attention)");
  const auto gates = coverage_gates(q).unsqueeze(2);  // [B, 2, 1]
  const auto per_head = [](const torch::Tensor& x) { return x.dim() == 2 ? x.unsqueeze(1) : x; };
  return gates.narrow(1, 0, 1) * per_head(history.previous_alpha) +
         gates.narrow(1, 1, 1) * per_head(history.coverage);  // [B, N, L]
}

AttentionHistory AttentionImpl::after_step(
    const AttentionHistory& history, const torch::Tensor& alpha) const {
  if (!options_.coverage) return {alpha, {}};
  return {alpha, history.coverage.defined() ? history.coverage + alpha : alpha};
}

void AttentionImpl::add_coverage_gates() {
  // Zero gates: the model starts as the one without coverage, and learns how much to read it.
  coverage_gates = register_module("coverage_gates", torch::nn::Linear(query_size(), 2));
  torch::NoGradGuard no_grad;
  coverage_gates->weight.zero_();
  coverage_gates->bias.zero_();
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

torch::Tensor AdditiveAttentionImpl::memory_keys(
    const torch::Tensor& annotations, AnnotationProjector& project) {
  return project(key, annotations);  // [B, L, A]  W_a a_i + b
}

torch::Tensor AdditiveAttentionImpl::scores(const AttentionMemory& memory, const torch::Tensor& q) {
  const auto keys = memory.shared_keys ? *memory.shared_keys : TimeSharedTensor(memory.keys);
  return additive_scores(keys, q, score->weight.squeeze(0), memory.beams, memory.images)
      .unsqueeze(1);  // [B, 1, L]
}

AttentionMemory AdditiveAttentionImpl::for_beams(const AttentionMemory& memory, int64_t beams) {
  // The additive kernel reads the keys as they lie; elsewhere the plain ops would copy them per
  // beam at every step, so they are copied once (AttentionImpl::for_beams).
  if (!beams_can_share(memory)) return AttentionImpl::for_beams(memory, beams);
  AttentionMemory shared = shared_by_beams(memory, beams);
  if (!shared.shared_keys) shared.shared_keys = std::make_shared<TimeSharedTensor>(memory.keys);
  return shared;
}

DotAttentionImpl::DotAttentionImpl(const AttentionOptions& options)
    : AttentionImpl(options),
      scale_(options.kind == "scaled_dot" ? 1.0 / std::sqrt(double(options.dim)) : 1.0) {
  key = register_module("key", torch::nn::Linear(options.annotation_dim, options.dim));
  query = register_module("query", torch::nn::Linear(options.query_dim, options.dim));
}

torch::Tensor DotAttentionImpl::memory_keys(const torch::Tensor& annotations, AnnotationProjector& project) {
  return project(key, annotations);  // [B, L, A]
}

torch::Tensor DotAttentionImpl::scores(const AttentionMemory& memory, const torch::Tensor& q) {
  auto e = dot_scores(memory, q);         // [B, 1, L]
  return scale_ == 1.0 ? e : e * scale_;  // [B, 1, L]
}

GeneralAttentionImpl::GeneralAttentionImpl(const AttentionOptions& options) : AttentionImpl(options) {
  key = register_module(
      "key",
      torch::nn::Linear(torch::nn::LinearOptions(options.annotation_dim, options.query_dim).bias(false)));
}

torch::Tensor GeneralAttentionImpl::memory_keys(
    const torch::Tensor& annotations, AnnotationProjector& project) {
  return project(key, annotations);  // [B, L, H]  W a_i
}

torch::Tensor GeneralAttentionImpl::scores(const AttentionMemory& memory, const torch::Tensor& q) {
  return dot_scores(memory, q);  // [B, 1, L]  h^T W a_i
}

MultiheadAttentionImpl::MultiheadAttentionImpl(const AttentionOptions& options) : AttentionImpl(options) {
  key = register_module("key", torch::nn::Linear(options.annotation_dim, options.dim));
  value = register_module("value", torch::nn::Linear(options.annotation_dim, options.dim));
  query = register_module("query", torch::nn::Linear(options.query_dim, options.dim));
  output = register_module("output", torch::nn::Linear(options.dim, options.annotation_dim));
}

torch::Tensor MultiheadAttentionImpl::split_heads(const torch::Tensor& x) const {
  const int64_t batch = x.size(0), locations = x.size(1), heads = options_.heads;
  return x.view({batch, locations, heads, options_.dim / heads})
      .transpose(1, 2)
      .contiguous();  // [B, N, L, K]
}

torch::Tensor MultiheadAttentionImpl::memory_keys(
    const torch::Tensor& annotations, AnnotationProjector& project) {
  return split_heads(project(key, annotations));  // [B, N, L, K]
}

torch::Tensor MultiheadAttentionImpl::memory_values(
    const torch::Tensor& annotations, AnnotationProjector& project) {
  return split_heads(project(value, annotations));  // [B, N, L, K]
}

torch::Tensor MultiheadAttentionImpl::scores(const AttentionMemory& memory, const torch::Tensor& q) {
  return dot_scores(memory, q) / std::sqrt(double(options_.dim / options_.heads));  // [B, N, L]
}

torch::Tensor MultiheadAttentionImpl::combine(const torch::Tensor& glimpses) {
  // A decoding step's few rows stream the weight once (BLAS packed it for 5 rows at ~10 GB/s).
  return few_rows_linear(
      glimpses.reshape({glimpses.size(0), options_.dim}), output->weight, output->bias);  // [B, D]
}

LocalAttentionImpl::LocalAttentionImpl(const AttentionOptions& options) : AdditiveAttentionImpl(options) {
  centre_hidden = register_module(
      "centre_hidden",
      torch::nn::Linear(torch::nn::LinearOptions(options.query_dim, options.dim).bias(false)));
  centre_out = register_module("centre_out", torch::nn::Linear(options.dim, 2));
}

torch::Tensor LocalAttentionImpl::query_weight() const {
  return torch::cat({query->weight, centre_hidden->weight});  // [2A, H]: W_h, then W_p
}

torch::Tensor LocalAttentionImpl::memory_keys(
    const torch::Tensor& annotations, AnnotationProjector& project) {
  const auto [rows, columns] = options_.grid;
  if (annotations.size(1) != rows * columns) {
    throw std::invalid_argument(
        "Local attention over a " + std::to_string(rows) + " x " + std::to_string(columns) +
        " grid expects " + std::to_string(rows * columns) + " locations, got " +
        std::to_string(annotations.size(1)));
  }
  return AdditiveAttentionImpl::memory_keys(annotations, project);
}

torch::Tensor LocalAttentionImpl::window_centre(const torch::Tensor& q) {
  const int64_t dim = options_.dim;
  const auto unit = torch::sigmoid(centre_out(torch::tanh(q.narrow(1, dim, dim))));  // [B, 2] in (0, 1)
  const auto last_cell = torch::tensor(
      {static_cast<double>(options_.grid[0] - 1), static_cast<double>(options_.grid[1] - 1)}, q.options());
  return unit * last_cell;  // [B, 2]
}

torch::Tensor LocalAttentionImpl::peak_cell(const torch::Tensor& alpha) const {
  const auto peak = alpha.detach().argmax(1);  // [B]
  const int64_t columns = options_.grid[1];
  return torch::stack({peak.div(columns, "floor"), peak.remainder(columns)}, 1)
      .to(alpha.scalar_type());  // [B, 2]
}

torch::Tensor LocalAttentionImpl::scores(const AttentionMemory& memory, const torch::Tensor& q) {
  const auto [rows, columns] = options_.grid;
  const int64_t dim = options_.dim;
  const auto additive =
      AdditiveAttentionImpl::scores(memory, q.narrow(1, 0, dim).contiguous()).squeeze(1);  // [B, L]
  const auto cells = torch::stack(
      {torch::arange(rows, q.options()).repeat_interleave(columns),
       torch::arange(columns, q.options()).repeat({rows})},
      1);  // [L, 2] (row, column)
  const auto& previous_alpha = memory.history.previous_alpha;
  const bool monotonic = options_.centre == LocalCentre::monotonic && previous_alpha.defined();
  const auto centre = monotonic ? peak_cell(previous_alpha) : window_centre(q);  // [B, 2]
  const auto offset = cells.unsqueeze(0) - centre.unsqueeze(1);                  // [B, L, 2]
  const auto nearest = centre.detach().round().unsqueeze(1);  // [B, 1, 2]: the window's centre cell
  const auto outside = (cells.unsqueeze(0) - nearest).abs().gt(options_.window).any(2);  // [B, L]
  const double sigma = options_.window / 2.0;
  const auto local = additive - offset.pow(2).sum(2) / (2.0 * sigma * sigma);                // [B, L]
  return local.masked_fill(outside, -std::numeric_limits<double>::infinity()).unsqueeze(1);  // [B, 1, L]
}

Registry<AttentionBuilder>& attention_registry() {
  static Registry<AttentionBuilder> registry(
      "attention kind", {{"additive", make_attention<AdditiveAttentionImpl>},
                         {"dot", make_attention<DotAttentionImpl>},
                         {"scaled_dot", make_attention<DotAttentionImpl>},
                         {"general", make_attention<GeneralAttentionImpl>},
                         {"multihead", make_attention<MultiheadAttentionImpl>},
                         {"local", make_attention<LocalAttentionImpl>}});
  return registry;
}

Attention build_attention(const AttentionOptions& options) {
  validate(options);
  auto attention = attention_registry().get(options.kind)(options);
  if (options.coverage) attention->add_coverage_gates();
  return attention;
}

}  // namespace saccade
