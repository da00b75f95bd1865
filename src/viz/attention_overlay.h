// Attention overlays: where each generated word looked, drawn over the image as in the paper's
// figures (Xu et al. 2015, Fig. 2, 3 and 5).
//
//   VizOptions options = viz_options_from(config);   // viz.* keys
//   AttentionFigure figure{crop, words, caption.alphas, encoder->grid_size(224, 224), {}};
//   torch::Tensor grid = render_attention_figure(figure, options);   // uint8 [H, W, 3]
//   write_image_file("overlay.png", grid);                           // data/image_pipeline.h
//
// Shapes: n words, L = Hg * Wg grid locations (row-major, l = y * Wg + x, as the encoder flattens),
// N heads (multihead attention only), P = panel_size. Images travel as uint8 [H, W, 3] RGB like
// everywhere in data/; OpenCV stays behind this header.
//
// One word's picture is made in three steps:
//   1. attention_map: the alpha row [L] as a Hg x Wg grid, upsampled to the panel (nearest,
//      bilinear or bicubic; the grid's cells cover the image in equal blocks), optionally smoothed
//      with a Gaussian, then scaled (per_word: peak = 1; absolute: the raw weights, 1 = all the
//      attention on one cell) and clipped to [0, 1].
//   2. overlay_attention: contour = the image with the iso-lines m = level for each of
//      contour_levels, each drawn in jet(level) over a black halo, so the picture stays visible;
//      heatmap = (1 - opacity) * image + opacity * 255 * jet(m), per channel;
//      darken = image * (floor + (1 - floor) * m), the paper's look (attended pixels keep
//      their value, the rest dim towards `floor`). Results are rounded to the nearest integer.
//      With peak_marker, a cross at the centre of the cell holding the word's largest weight
//      (the cell the pointing game scores).
//   3. draw_panel_grid: the image first, then one panel per word with the word underneath, in
//      rows of `columns` panels; notes (caption, references) are written below the panels.
#pragma once

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace saccade {

// How the attention grid is enlarged to the image.
enum class Upsample {
  nearest,   // blocks: each cell paints exactly its part of the image
  bilinear,  // smooth ramps between cell centers
  bicubic,   // smoother; overshoot below 0 is clipped
};
std::string to_string(Upsample upsample);
// "nearest" | "bilinear" | "bicubic"; throws std::invalid_argument naming the value otherwise.
Upsample parse_upsample(const std::string& name);

// How the attention is drawn over the image.
enum class OverlayMode {
  contour,  // iso-lines of the attention over the untouched image
  heatmap,  // the jet colormap blended over the image
  darken,   // the image dimmed where attention is low (the paper's figures)
};
std::string to_string(OverlayMode mode);
// "contour" | "heatmap" | "darken"; throws std::invalid_argument naming the value otherwise.
OverlayMode parse_overlay_mode(const std::string& name);

// How a word's map is scaled before drawing.
enum class AttentionScale {
  per_word,  // each map divided by its own peak, so every word uses the full range
  absolute,  // the weights as they are: 1 = all the attention on one cell, comparable across words
};
std::string to_string(AttentionScale scale);
// "per_word" | "absolute"; throws std::invalid_argument naming the value otherwise.
AttentionScale parse_attention_scale(const std::string& name);

// What a figure shows for multihead attention ([n, N, L] alphas).
enum class HeadView {
  mean,  // the heads' average: one row of panels
  each,  // one block of panels per head, each starting a new row
};
std::string to_string(HeadView view);
// "mean" | "each"; throws std::invalid_argument naming the value otherwise.
HeadView parse_head_view(const std::string& name);

struct VizOptions {
  // Pixels: the side of each square panel (the image and every word's overlay).
  int64_t panel_size = 224;
  // Panels per row; longer captions wrap into more rows.
  int64_t columns = 6;
  // Pixels: the height of the strip under each panel holding its word, and of each note line.
  int64_t label_height = 28;
  Upsample upsample = Upsample::bilinear;
  // Standard deviation of the Gaussian smoothing after upsampling, in grid cells (1.0 = one
  // cell's width); 0 = no smoothing.
  double smooth_sigma = 1.0;
  OverlayMode mode = OverlayMode::contour;
  // contour: the map values whose iso-lines are drawn, each in (0, 1], ascending.
  std::vector<double> contour_levels = {0.25, 0.5, 0.75};
  // A cross at the centre of the word's peak cell, in every mode.
  bool peak_marker = true;
  // heatmap: the colormap's weight in the blend, 0 (image only) .. 1 (colormap only).
  double heatmap_opacity = 0.5;
  // darken: the brightness factor kept where the attention is 0, 0 (black) .. 1 (no dimming).
  double darken_floor = 0.2;
  AttentionScale normalize = AttentionScale::per_word;
  HeadView heads = HeadView::mean;
  // End of training: test images whose overlays go into <run>/samples/; 0 = none.
  int64_t sample_images = 4;
  // With a refiner: the layer whose self-attention maps are drawn (0-based; negative counts from
  // the last), and the [row, column] whose maps they are (nullopt = the cell the caption's first
  // word looked at most).
  int64_t refiner_layer = -1;
  std::optional<std::array<int64_t, 2>> refiner_location;
};

// Reads viz.{panel_size, columns, label_height, upsample, smooth_sigma, mode, contour_levels,
// peak_marker, heatmap_opacity, darken_floor, normalize, heads, sample_images, refiner_layer,
// refiner_location}. Throws
// ConfigError for a missing key or a bad value.
VizOptions viz_options_from(const Config& config);

// Throws std::invalid_argument, one sentence per broken rule: panel_size >= 16, columns >= 1,
// label_height >= 8, smooth_sigma >= 0, contour_levels non-empty, ascending and in (0, 1],
// heatmap_opacity and darken_floor in [0, 1], sample_images >= 0.
void validate(const VizOptions& options);

// Blank pixels between panels and around the grid.
constexpr int64_t kPanelGap = 4;

// One word's attention as a float [height, width] map in [0, 1] (steps 1 above). `alpha` holds
// grid[0] * grid[1] weights ([L], any float dtype). Throws std::invalid_argument when the sizes
// disagree.
torch::Tensor attention_map(
    const torch::Tensor& alpha,
    const std::array<int64_t, 2>& grid,
    int64_t height,
    int64_t width,
    const VizOptions& options);

// The jet colormap (matplotlib's segments) at v in [0, 1] as RGB in [0, 1]: 0 -> (0, 0, 0.5)
// dark blue, 1 -> (0.5, 0, 0) dark red.
std::array<double, 3> jet(double v);

// Draws `map` float [H, W] in [0, 1] over `image` uint8 [H, W, 3] (step 2 above, without the
// marker) -> uint8 [H, W, 3].
torch::Tensor overlay_attention(
    const torch::Tensor& image, const torch::Tensor& map, const VizOptions& options);

// Pixels: the half-width of the peak marker's arms in a P-pixel panel (at least 3).
int64_t peak_marker_radius(int64_t panel_size);

// Draws the peak marker on `panel` uint8 [P, P, 3] (in place) at the centre of grid cell `cell`:
// a white cross of arms peak_marker_radius(P) over a black one a pixel wider.
void draw_peak_marker(torch::Tensor& panel, int64_t cell, const std::array<int64_t, 2>& grid);

// One line saying how the overlays are drawn and scaled, for under a figure: "Attention:
// contours at 25%, 50%, 75% of each word's peak; + marks the peak cell", with `panel` for what
// each panel shows ("word", "head").
std::string attention_legend(const VizOptions& options, const std::string& panel = "word");

// A picture in the grid with its label underneath.
struct Panel {
  torch::Tensor image;  // uint8 [P, P, 3]
  std::string label;    // "" = none
};

// Where a grid's panels go. Blocks of panels each start on a new row and wrap after `columns`.
struct PanelGridLayout {
  int64_t columns = 0;  // panels per row: min(options.columns, the longest block)
  int64_t rows = 0;     // sum over blocks of ceil(block size / columns)
  int64_t width = 0;    // columns * P + (columns + 1) * kPanelGap
  // rows * (P + label_height) + (rows + 1) * kPanelGap, plus note_lines * label_height + kPanelGap
  // when there are notes.
  int64_t height = 0;
};

// The layout of blocks of `block_sizes` panels with `note_lines` lines of notes below.
PanelGridLayout panel_grid_layout(
    const std::vector<int64_t>& block_sizes, int64_t note_lines, const VizOptions& options);

// Draws `blocks` on white: panel k of a block at row (block's first row + k / columns), column
// k % columns, its top-left corner at (kPanelGap + column * (P + kPanelGap),
// kPanelGap + row * (P + label_height + kPanelGap)); the label centered in the strip under it.
// Notes are written one per line below the panels (lines too wide are wrapped at spaces).
// Returns uint8 [height, width, 3].
torch::Tensor draw_panel_grid(
    const std::vector<std::vector<Panel>>& blocks,
    const std::vector<std::string>& notes,
    const VizOptions& options);

// Everything one figure shows.
struct AttentionFigure {
  torch::Tensor image;             // uint8 [H, W, 3]: what the model saw (the pipeline's crop)
  std::vector<std::string> words;  // the n generated words
  torch::Tensor alphas;            // [n, L] or [n, N, L] (multihead): where each word looked
  std::array<int64_t, 2> grid{};   // [Hg, Wg] of the encoder's grid, Hg * Wg = L
  std::vector<std::string> notes;  // lines written below the panels (caption, references)
  // Hard attention: frame the cell each word read (its alpha's peak) in white.
  bool outline_read_cell = false;
  // A cell framed in every panel, the image's included (the location a refiner map belongs to);
  // -1 = none.
  int64_t framed_cell = -1;
  // Add attention_legend(options, panel_subject) as the last note line.
  bool legend = false;
  // What each panel after the image shows, as the legend names it.
  std::string panel_subject = "word";
};

// Pixels: the width of the frame outline_read_cell draws (thinner in cells under 8 pixels).
constexpr int64_t kOutlineWidth = 2;

// The image resized to P x P, then its overlays per word (heads averaged, or one block per head
// labelled "head h"), in a panel grid. With outline_read_cell, each overlay gets a white frame
// just inside the block of the peak's cell (rows [y P / Hg, (y + 1) P / Hg), likewise columns), and
// every panel one around framed_cell. Throws
// std::invalid_argument when words, alphas and grid disagree.
torch::Tensor render_attention_figure(const AttentionFigure& figure, const VizOptions& options);

}  // namespace saccade
