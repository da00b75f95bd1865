// PackedWeight: one kernel over vector lanes, compiled for AVX2 and AVX-512, over weights (float32
// or bf16) packed in k-major panels; PackedWeights: the per-product choice between it,
// few_rows_linear and torch::linear.
#include "kernels/packed_linear.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/util/BFloat16.h>
#include <torch/nn/functional/linear.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/few_rows_linear.h"
#include "kernels/inference_precision.h"
#include "kernels/vector_lanes.h"

namespace saccade {
namespace {

// Steps of k per pass (pairs of k for bf16 dot products): a [kDepth, kPanelWidth] slice of a
// panel (16 KiB in float32) stays in L1 while every block of
// rows of a chunk meets it.
constexpr int64_t kDepth = 128;
// Most rows of x packed per pass ([kChunkRows, K] stays in L2 and L3 while the panels stream by).
constexpr int64_t kChunkRows = 16 * kBlockRows;

// Rows per chunk of M rows on `threads` threads. With a chunk per thread or more, the chunks are
// as even as whole blocks allow and as many as a multiple of the threads (196 rows as 192 and 4
// had left one of two threads idle); with fewer, the threads share each chunk's panels.
int64_t chunk_rows_for(int64_t M, int64_t threads) {
  const int64_t chunks = (M + kChunkRows - 1) / kChunkRows;
  if (chunks < threads) return kChunkRows;
  const int64_t even_chunks = (chunks + threads - 1) / threads * threads;
  return ((M + even_chunks - 1) / even_chunks + kBlockRows - 1) / kBlockRows * kBlockRows;
}

// `rows` rows of x (K values each) as blocks of kBlockRows rows, step-major: [blocks, steps,
// kBlockRows]; a step is one value of x, or a pair of bf16 values (X = uint32_t: the first in the
// low half, zero past K). Each block is written in memory order, its rows read as parallel
// streams; only the rows a block has are written, so the last block's padding is never set.
template <typename X, typename XSource>
void pack_rows(const XSource* x, int64_t rows, int64_t K, int64_t steps, X* packed) {
  for (int64_t first = 0; first < rows; first += kBlockRows) {
    const int64_t block_rows = std::min(kBlockRows, rows - first);
    const XSource* source = x + first * K;
    X* target = packed + first * steps;
    for (int64_t step = 0; step < steps; ++step) {
      for (int64_t r = 0; r < block_rows; ++r) {
        const XSource* row = source + r * K;
        if constexpr (std::is_same_v<X, uint32_t>) {
          const uint32_t high = 2 * step + 1 < K ? row[2 * step + 1] : 0;
          target[step * kBlockRows + r] = row[2 * step] | high << 16;
        } else {
          target[step * kBlockRows + r] = row[step];
        }
      }
    }
  }
}

// The cache lines of the memory after a slice (the next slice or panel) that one block of rows
// asks for into L2 while it multiplies the slice, `per_step` lines a step of k. The panels are
// read in memory order, but each slice is a short stream that the hardware prefetcher starts
// late, and in training the panels come from memory: every step's attention reads evict them.
// The blocks of a chunk share the next slice's lines: one block asking for all of them needed
// them at the rate of the whole chunk's use, as fast as L3 delivers on two cores.
struct PrefetchShare {
  const char* from = nullptr;
  int64_t lines = 0;
  int64_t per_step = 0;
};

// y[r, 0:columns] (+)= sum_k x[k][r] w[k][0:columns] over `depth` steps of k, for the rows r
// of x a kernel takes, from x packed [depth][kBlockRows] and a panel slice w [depth][kPanelWidth]
// (float, or uint16_t for bf16 weights widened as they load). For bf16 dot products a step is a
// pair of k: X is uint32_t (two bf16 values of x) and w holds kPanelWidth pairs per step.
template <typename Weight, typename X = float>
struct PanelProduct {
  int64_t depth;
  const X* x;  // packed, x[k][r] at x[k * kBlockRows + r]
  // w[k][c] at w[k * kPanelWidth + c]; pairs: value i (0 or 1) of w[k][c] at w[(k * kPanelWidth + c) * 2 + i]
  const Weight* w;
  float* y;  // rows y_stride apart
  int64_t y_stride;
  int64_t columns;    // of y to write: 1 .. kPanelWidth
  bool accumulate;    // add to what y holds (the earlier passes over K)
  const float* bias;  // [columns], added when not null (the last pass only)
  PrefetchShare prefetch;
};

// Asks for the share's lines due at step k into L2.
SACCADE_INLINE void prefetch_lines(const PrefetchShare& share, int64_t k) {
  for (int64_t line = k * share.per_step; line < std::min(share.lines, (k + 1) * share.per_step); ++line)
    __builtin_prefetch(share.from + line * 64, 0, 2);
}

// Writes rows r < R of the block's sums acc[r][0 and 1] (two vectors of W columns) to y: added
// to y's values when accumulating, plus the bias on the last pass; columns past `columns` are not
// written.
template <int W, int R, typename Weight, typename X>
SACCADE_INLINE void finish_block(const PanelProduct<Weight, X>& product, const Lanes<float, W> (&acc)[R][2]) {
  const auto [depth, x, w, y, y_stride, columns, accumulate, bias, prefetch] = product;
  using V = Lanes<float, W>;
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    float* row = y + r * y_stride;
    if (columns == 2 * W) {
      V a = acc[r][0], b = acc[r][1];
      if (accumulate) a += load<W>(row), b += load<W>(row + W);
      if (bias != nullptr) a += load<W>(bias), b += load<W>(bias + W);
      store(row, a);
      store(row + W, b);
    } else {  // the last panel's columns past N are not written
      float sums[2 * W];
      store(sums, acc[r][0]);
      store(sums + W, acc[r][1]);
      for (int64_t c = 0; c < columns; ++c) {
        if (accumulate) sums[c] += row[c];
        if (bias != nullptr) sums[c] += bias[c];
        row[c] = sums[c];
      }
    }
  }
}

// Rows r < R by two vectors of W columns (`columns` in 1 .. 2W): 2R accumulators, two W vectors
// and a broadcast fill the registers.
template <int W, int R, typename Weight>
SACCADE_INLINE void panel_block(const PanelProduct<Weight>& product) {
  const auto& [depth, x, w, y, y_stride, columns, accumulate, bias, prefetch] = product;
  using V = Lanes<float, W>;
  // Every loop over the accumulators is unrolled: one indexing acc would keep them in memory,
  // stored at every step.
  V acc[R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = V{};
  for (int64_t k = 0; k < depth; ++k) {
    prefetch_lines(prefetch, k);
    const V w0 = load_floats<W>(w + k * kPanelWidth), w1 = load_floats<W>(w + k * kPanelWidth + W);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const V v = broadcast<W>(x[k * kBlockRows + r]);
      acc[r][0] += v * w0;
      acc[r][1] += v * w1;
    }
  }
  finish_block<W, R>(product, acc);
}

// R (<= kBlockRows) rows of x times one panel: blocks of up to MaxRows rows by 2W columns.
template <int W, int MaxRows, int R, typename Weight>
SACCADE_INLINE void panel_kernel(const PanelProduct<Weight>& product) {
  static_assert(R <= 2 * MaxRows, "two blocks of rows at most");
  constexpr int kFirst = R < MaxRows ? R : MaxRows;
  for (int64_t offset = 0; offset < product.columns; offset += 2 * W) {
    PanelProduct<Weight> part = product;
    part.w += offset;
    part.y += offset;
    part.columns = std::min<int64_t>(2 * W, product.columns - offset);
    if (part.bias != nullptr) part.bias += offset;
    if (offset > 0) part.prefetch = {};  // the first part asks for the whole share
    panel_block<W, kFirst>(part);
    if constexpr (R > MaxRows) {
      part.prefetch = {};
      part.x += MaxRows;
      part.y += MaxRows * part.y_stride;
      panel_block<W, R - MaxRows>(part);
    }
  }
}

template <typename Weight, typename X = float>
using PanelKernel = void (*)(const PanelProduct<Weight, X>&);

#if defined(__x86_64__)

// bf16 pairs of x and W by VDPBF16PS (AVX-512 BF16): per pair of k, each of R rows' broadcast
// pair meets a whole panel's 32 pairs in two instructions, half the instructions per weight of
// the kernels above, which take one k per step.
template <int R>
__attribute__((target("avx512f,avx512bf16,fma"))) void panel_kernel_bf16_dot(
    const PanelProduct<uint16_t, uint32_t>& product) {
  const auto& [depth, x, w, y, y_stride, columns, accumulate, bias, prefetch] = product;
  __m512 acc[R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    prefetch_lines(prefetch, k);
    const uint16_t* pairs = w + k * kPanelWidth * 2;
    const auto w0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(pairs));
    const auto w1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(pairs + kPanelWidth));
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const auto v = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(x[k * kBlockRows + r])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], v, w0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], v, w1);
    }
  }
  Lanes<float, 16> sums[R][2];
  std::memcpy(sums, acc, sizeof sums);
  finish_block<16, R>(product, sums);
}

// The kernel for `rows` (1 .. kBlockRows) rows of x.
template <typename Weight, typename X, size_t... R>
PanelKernel<Weight, X> panel_kernel_for(KernelIsa isa, int64_t rows, std::index_sequence<R...>) {
  if constexpr (std::is_same_v<X, uint32_t>) {
    static const PanelKernel<Weight, X> dot[] = {panel_kernel_bf16_dot<R + 1>...};
    return dot[rows - 1];
  } else {
    // AVX-512 (32 registers of 16 floats) takes a whole panel, 12 rows at a time; AVX2 (16
    // registers of 8 floats) half a panel, 6 rows at a time.
    static const PanelKernel<Weight> avx512[] = {OnAvx512<&panel_kernel<16, 12, R + 1, Weight>>::run...};
    static const PanelKernel<Weight> avx2[] = {OnAvx2<&panel_kernel<8, 6, R + 1, Weight>>::run...};
    return (isa == KernelIsa::avx512 ? avx512 : avx2)[rows - 1];
  }
}

template <typename Weight, typename X>
PanelKernel<Weight, X> panel_kernel_for(KernelIsa isa, int64_t rows) {
  return panel_kernel_for<Weight, X>(isa, rows, std::make_index_sequence<kBlockRows>());
}

#endif

// W [N, K] float32 (any strides) into panels [ceil(N / 32), steps, 32, PerStep] (steps >=
// K / PerStep): panels[p][s][c][i] = W[32 p + c][PerStep s + i], zero past N and K; as float, or as bf16 bits
// rounded to nearest even (uint16_t), as LibTorch rounds. One pass over W, in the order its
// memory runs: along k when its rows are contiguous, along n when it is a transposed view (the
// backward pass's weights), so neither layout costs a transposing copy.
template <int64_t PerStep, typename T>
void pack_panels(const torch::Tensor& weight, int64_t steps, T* panels) {
  const float* w = weight.data_ptr<float>();
  const int64_t N = weight.size(0), K = weight.size(1), row_stride = weight.stride(0),
                column_stride = weight.stride(1);
  constexpr int64_t per_step = PerStep;
  const int64_t panel_size = steps * kPanelWidth * per_step;
  const auto convert = [](float value) -> T {
    if constexpr (std::is_same_v<T, float>) {
      return value;
    } else {
      return c10::BFloat16(value).x;
    }
  };
  const bool along_n = row_stride == 1 && column_stride != 1;
  at::parallel_for(0, (N + kPanelWidth - 1) / kPanelWidth, 1, [&](int64_t begin, int64_t end) {
    for (int64_t panel = begin; panel < end; ++panel) {
      T* out = panels + panel * panel_size;
      const int64_t first = panel * kPanelWidth, columns = std::min(kPanelWidth, N - first);
      const auto at = [&](int64_t c, int64_t k) -> T& {
        return out[(k / per_step * kPanelWidth + c) * per_step + k % per_step];
      };
      if (columns < kPanelWidth || steps * per_step != K) std::fill(out, out + panel_size, T(0));
      if (along_n) {
        for (int64_t k = 0; k < K; ++k) {
          const float* source = w + k * column_stride + first;
          for (int64_t c = 0; c < columns; ++c) at(c, k) = convert(source[c]);
        }
      } else {
        for (int64_t c = 0; c < columns; ++c) {
          const float* source = w + (first + c) * row_stride;
          for (int64_t k = 0; k < K; ++k) at(c, k) = convert(source[k * column_stride]);
        }
      }
    }
  });
}

#if defined(__x86_64__)

// AMX: x's rows in bf16 as 16-row A tiles of 32 values of k (16 pairs), a panel's two halves of
// 16 columns as B tiles of 16 pairs (the dot-product panels are laid out so already: a pair step
// holds 32 columns' pairs, 128 bytes), four float32 C tiles for a block of 32 rows by 32 columns.
constexpr int64_t kTileRows = 16, kPairsPerTile = 16;

// Palette 1, every tile 16 rows of 64 bytes: tiles 0-3 C, 4-5 A, 6-7 B.
struct TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// GCC 12's AMX intrinsics tell the compiler of no memory they read or write beyond 8 bytes of
// ldtilecfg's configuration (none for the tile loads and stores): without a compiler barrier it
// drops the configuration's stores, and could read the sums before the tiles are stored.
inline void memory_barrier() {
  asm volatile("" ::: "memory");
}

__attribute__((target("amx-tile,amx-bf16"))) void configure_tiles() {
  TileConfig config;
  for (int tile = 0; tile < 8; ++tile) {
    config.bytes_per_row[tile] = 64;
    config.rows[tile] = kTileRows;
  }
  memory_barrier();
  _tile_loadconfig(&config);
}

__attribute__((target("amx-tile"))) void release_tiles() {
  _tile_release();
}

// A block of up to 32 rows of x times one panel, every pair step: sums [32][32] into `sums`.
struct TileProduct {
  const uint16_t* x;  // the block's first row, bf16, rows x_stride values apart (padded to 16 rows)
  int64_t x_stride;
  const uint16_t* panel;  // [pairs][32][2]
  int64_t pairs;          // a multiple of kPairsPerTile
  bool second_half;       // rows 16-31 too
  float* sums;            // [32][32]
};

__attribute__((target("amx-tile,amx-bf16"))) void multiply_tile_block(const TileProduct& p) {
  const int64_t x_bytes = p.x_stride * 2, panel_bytes = 2 * kPanelWidth * 2;
  memory_barrier();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t pair = 0; pair < p.pairs; pair += kPairsPerTile) {
    const uint16_t* w = p.panel + pair * 2 * kPanelWidth;
    _tile_loadd(4, p.x + 2 * pair, x_bytes);
    _tile_loadd(6, w, panel_bytes);
    _tile_loadd(7, w + kPanelWidth, panel_bytes);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if (p.second_half) {
      _tile_loadd(5, p.x + kTileRows * p.x_stride + 2 * pair, x_bytes);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  constexpr int64_t sums_bytes = kPanelWidth * 4;
  _tile_stored(0, p.sums, sums_bytes);
  _tile_stored(1, p.sums + kTileRows, sums_bytes);
  if (p.second_half) {
    _tile_stored(2, p.sums + kTileRows * kPanelWidth, sums_bytes);
    _tile_stored(3, p.sums + kTileRows * kPanelWidth + kTileRows, sums_bytes);
  }
  memory_barrier();
}

#endif

}  // namespace

PackedWeight::PackedWeight(
    const torch::Tensor& weight, const torch::Tensor& bias, WeightStorage storage, Bf16Product bf16_product) {
  if (weight.dim() != 2 || !takes_cpu_kernels(weight) ||
      (bias.defined() && (bias.dim() != 1 || bias.size(0) != weight.size(0) || !takes_cpu_kernels(bias)))) {
    throw std::invalid_argument(
        "PackedWeight expects a float32 CPU weight [N, K] and bias [N], got " + c10::str(weight.sizes()) +
        (bias.defined() ? " and " + c10::str(bias.sizes()) : ""));
  }
  dot_products_ = storage == WeightStorage::bf16 && bf16_product != Bf16Product::widen;
  tiles_ = storage == WeightStorage::bf16 && bf16_product == Bf16Product::amx;
  if (dot_products_ && !has_avx512_bf16())
    throw std::logic_error("PackedWeight: this CPU has no AVX-512 BF16 dot products");
  if (tiles_ && !has_amx_bf16())
    throw std::logic_error("PackedWeight: this CPU (or its OS) has no AMX BF16 tiles");
  out_features_ = weight.size(0);
  in_features_ = weight.size(1);
  const int64_t panels = (out_features_ + kPanelWidth - 1) / kPanelWidth;
  // Dot products take k in pairs: K is padded to even, and each column's pair is adjacent; tiles
  // take 16 pairs at a time, so K is padded to a multiple of 32 for them.
  const int64_t per_step = dot_products_ ? 2 : 1;
  int64_t steps = (in_features_ + per_step - 1) / per_step;
#if defined(__x86_64__)
  if (tiles_) steps = (steps + kPairsPerTile - 1) / kPairsPerTile * kPairsPerTile;
#endif
  const auto values = weight.detach();
  if (storage == WeightStorage::bf16) {
    panels_ = torch::empty({panels, steps, kPanelWidth, per_step}, weight.options().dtype(torch::kBFloat16));
    auto* bits = reinterpret_cast<uint16_t*>(panels_.data_ptr());
    dot_products_ ? pack_panels<2>(values, steps, bits) : pack_panels<1>(values, steps, bits);
  } else {
    panels_ = torch::empty({panels, steps, kPanelWidth, per_step}, weight.options());
    pack_panels<1>(values, steps, panels_.data_ptr<float>());
  }
  if (bias.defined()) bias_ = bias.detach().contiguous();
}

bool PackedWeight::supported() {
  return best_kernel_isa() != KernelIsa::none;
}

WeightStorage PackedWeight::storage() const {
  return panels_.scalar_type() == torch::kBFloat16 ? WeightStorage::bf16 : WeightStorage::fp32;
}

torch::Tensor PackedWeight::linear(const torch::Tensor& x) const {
  return linear(best_kernel_isa(), x);
}

torch::Tensor PackedWeight::linear(KernelIsa isa, const torch::Tensor& x) const {
  if (x.dim() != 2 || x.size(1) != in_features_ || !takes_cpu_kernels(x)) {
    throw std::invalid_argument(
        "PackedWeight of " + std::to_string(in_features_) + " inputs got x " + c10::str(x.sizes()));
  }
  if (isa == KernelIsa::none || (isa == KernelIsa::avx512 && best_kernel_isa() != KernelIsa::avx512)) {
    throw std::logic_error(
        std::string("PackedWeight::linear: this CPU does not run the ") + to_string(isa) + " kernel");
  }
  if (dot_products_ && isa != KernelIsa::avx512)
    throw std::logic_error("PackedWeight::linear: bf16 dot-product panels need the AVX-512 kernel");
#if defined(__x86_64__)
  RECORD_FUNCTION("saccade::packed_linear", std::vector<c10::IValue>({x}));  // named in profiles
  auto y = torch::empty({x.size(0), out_features_}, x.options());            // [M, N]
  const auto* bf16_panels = reinterpret_cast<const uint16_t*>(panels_.data_ptr());
  if (tiles_) {
    multiply_tiles(x.contiguous(), y);
  } else if (dot_products_) {
    // x rounded to bf16 (to nearest even, as LibTorch rounds), its bits paired by the packing.
    const auto rows = x.to(torch::kBFloat16).contiguous();  // [M, K]
    multiply<uint16_t, uint32_t>(isa, reinterpret_cast<const uint16_t*>(rows.data_ptr()), bf16_panels, y);
  } else if (storage() == WeightStorage::bf16) {
    const auto rows = x.contiguous();
    multiply<uint16_t, float>(isa, rows.data_ptr<float>(), bf16_panels, y);
  } else {
    const auto rows = x.contiguous();
    multiply<float, float>(isa, rows.data_ptr<float>(), panels_.data_ptr<float>(), y);
  }
  return y;
#else
  return torch::Tensor();
#endif
}

template <typename Weight, typename X, typename XSource>
void PackedWeight::multiply(
    KernelIsa isa, const XSource* x_data, const Weight* w_data, torch::Tensor& y) const {
#if defined(__x86_64__)
  const int64_t M = y.size(0), K = in_features_, N = out_features_;
  const int64_t panels = panels_.size(0), steps = panels_.size(1);  // steps of k: K, or pairs
  const int64_t w_step = panels_.numel() / (panels * steps);        // values of W per step
  const float* b_data = bias_.defined() ? bias_.data_ptr<float>() : nullptr;
  float* y_data = y.data_ptr<float>();
  const int64_t threads = at::get_num_threads();
  const int64_t chunk_size = chunk_rows_for(M, threads), chunks = (M + chunk_size - 1) / chunk_size;
  // The buffer is allocated without being filled (pack_rows): zeroing a chunk's worth for each
  // product took longer than multiplying 32 rows by 32 columns.
  const int64_t buffer_rows = (std::min(chunk_size, M) + kBlockRows - 1) / kBlockRows * kBlockRows;
  const auto chunk_buffer = [&] { return std::unique_ptr<X[]>(new X[buffer_rows * steps]); };
  const auto pack_chunk = [&](int64_t chunk, X* packed_x) {
    pack_rows(x_data + chunk * K, std::min(chunk_size, M - chunk), K, steps, packed_x);
  };
  const auto multiply_chunk = [&](int64_t chunk, const X* packed_x, int64_t begin, int64_t end) {
    const int64_t chunk_rows = std::min(chunk_size, M - chunk);
    const int64_t blocks = (chunk_rows + kBlockRows - 1) / kBlockRows;
    for (int64_t panel = begin; panel < end; ++panel) {
      const int64_t column = panel * kPanelWidth, columns = std::min(kPanelWidth, N - column);
      for (int64_t step = 0; step < steps; step += kDepth) {
        const int64_t depth = std::min(kDepth, steps - step);
        const float* bias = b_data != nullptr && step + depth == steps ? b_data + column : nullptr;
        const Weight* slice = w_data + (panel * steps + step) * w_step;
        const int64_t slice_lines = (depth * w_step * static_cast<int64_t>(sizeof(Weight)) + 63) / 64;
        const int64_t block_lines = (slice_lines + blocks - 1) / blocks;
        for (int64_t block = 0; block < blocks; ++block) {
          const PrefetchShare prefetch{
              reinterpret_cast<const char*>(slice + depth * w_step) + block * block_lines * 64,
              std::min(block_lines, slice_lines - block * block_lines), (block_lines + depth - 1) / depth};
          const X* x_block = packed_x + (block * steps + step) * kBlockRows;
          float* y_block = y_data + (chunk + block * kBlockRows) * N + column;
          const PanelProduct<Weight, X> product{depth,   x_block,  slice, y_block, N,
                                                columns, step > 0, bias,  prefetch};
          panel_kernel_for<Weight, X>(isa, std::min(kBlockRows, chunk_rows - block * kBlockRows))(product);
        }
      }
    }
  };
  if (chunks >= threads) {
    // Many rows (the keys of a batch): each thread packs and multiplies its own chunks.
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      const auto packed_x = chunk_buffer();
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        pack_chunk(chunk * chunk_size, packed_x.get());
        multiply_chunk(chunk * chunk_size, packed_x.get(), 0, panels);
      }
    });
  } else {
    // A decoding step's rows: the threads share each packed chunk and split the panels.
    const auto packed_x = chunk_buffer();
    for (int64_t chunk = 0; chunk < M; chunk += chunk_size) {
      pack_chunk(chunk, packed_x.get());
      at::parallel_for(0, panels, 1, [&](int64_t begin, int64_t end) {
        multiply_chunk(chunk, packed_x.get(), begin, end);
      });
    }
  }
#endif
}

void PackedWeight::multiply_tiles(const torch::Tensor& x, torch::Tensor& y) const {
#if defined(__x86_64__)
  const int64_t M = x.size(0), K = in_features_, N = out_features_;
  const int64_t panels = panels_.size(0), pairs = panels_.size(1), stride = 2 * pairs;
  // x rounded to bf16 (to nearest even, as LibTorch rounds), rows padded to whole tiles with zeros
  // and K to the panels' padded depth.
  const int64_t rows = (M + kTileRows - 1) / kTileRows * kTileRows;
  std::unique_ptr<uint16_t[]> x_bits(new uint16_t[rows * stride]);
  const float* x_data = x.data_ptr<float>();
  at::parallel_for(0, rows, kTileRows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      uint16_t* row = x_bits.get() + r * stride;
      const int64_t values = r < M ? K : 0;
      for (int64_t k = 0; k < values; ++k) row[k] = c10::BFloat16(x_data[r * K + k]).x;
      std::fill(row + values, row + stride, uint16_t{0});
    }
  });
  const auto* w_data = reinterpret_cast<const uint16_t*>(panels_.data_ptr());
  const float* b_data = bias_.defined() ? bias_.data_ptr<float>() : nullptr;
  float* y_data = y.data_ptr<float>();
  constexpr int64_t kBlock = 2 * kTileRows;
  const int64_t blocks = (M + kBlock - 1) / kBlock;
  // Block `block` of rows times panels [begin, end), in a thread whose tiles are configured.
  const auto multiply_blocks = [&](int64_t block, int64_t begin, int64_t end) {
    alignas(64) float sums[kBlock * kPanelWidth];
    const int64_t first = block * kBlock, block_rows = std::min(kBlock, M - first);
    for (int64_t panel = begin; panel < end; ++panel) {
      multiply_tile_block(TileProduct{
          x_bits.get() + first * stride, stride, w_data + panel * pairs * 2 * kPanelWidth, pairs,
          block_rows > kTileRows, sums});
      const int64_t column = panel * kPanelWidth, columns = std::min(kPanelWidth, N - column);
      for (int64_t r = 0; r < block_rows; ++r) {
        float* out = y_data + (first + r) * N + column;
        for (int64_t c = 0; c < columns; ++c)
          out[c] = sums[r * kPanelWidth + c] + (b_data ? b_data[column + c] : 0.0f);
      }
    }
  };
  if (blocks >= at::get_num_threads()) {
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
      configure_tiles();
      for (int64_t block = begin; block < end; ++block) multiply_blocks(block, 0, panels);
      release_tiles();
    });
  } else {
    at::parallel_for(0, panels, 1, [&](int64_t begin, int64_t end) {
      configure_tiles();
      for (int64_t block = 0; block < blocks; ++block) multiply_blocks(block, begin, end);
      release_tiles();
    });
  }
#endif
}

torch::Tensor PackedWeights::linear(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const bool kernels = !linear_needs_gradient(x, weight, bias) && PackedWeight::supported() && x.dim() == 2 &&
                       weight.dim() == 2 && x.size(1) == weight.size(1) && takes_cpu_kernels(x) &&
                       takes_cpu_kernels(weight) && (!bias.defined() || takes_cpu_kernels(bias));
  if (!kernels) return few_rows_linear(x, weight, bias);  // torch::linear, as the kernels do not take it
  const auto storage = InferencePrecision::bf16_weights() ? WeightStorage::bf16 : WeightStorage::fp32;
  const Key key{
      weight.data_ptr(),
      weight.size(0),
      weight.size(1),
      weight.stride(0),
      weight.stride(1),
      bias.defined() ? bias.data_ptr() : nullptr,
      storage};
  // bf16 weights on AMX take the tiles for any rows: even 5 rows ran 1.2-1.9x faster by tiles than
  // by dot products (the peers' decoder's products, 2-core Xeon with AMX).
  const bool tiles = storage == WeightStorage::bf16 && best_bf16_product() == Bf16Product::amx;
  if (x.size(0) <= kMaxRows && !tiles) {
    if (storage == WeightStorage::fp32) return few_rows_linear(x, weight, bias);
    auto& rows = packs_->bf16_rows[key];
    if (!rows.defined()) rows = weight.detach().to(torch::kBFloat16).contiguous();  // [N, K]
    return few_rows_linear(x, rows, bias);
  }
  auto found = packs_->panels.find(key);
  if (found == packs_->panels.end())
    found = packs_->panels.emplace(key, PackedWeight(weight.detach(), bias, storage)).first;
  return found->second.linear(x);
}

int64_t PackedWeights::size() const {
  return static_cast<int64_t>(packs_->panels.size() + packs_->bf16_rows.size());
}

}  // namespace saccade
