// Attention overlays: maps, colormap blending, darkening and the panel grid (OpenCV for
// resizing, smoothing and text; the per-pixel arithmetic in plain loops so results are exact).
#include "viz/attention_overlay.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <sstream>
#include <stdexcept>

#include "base/enum_names.h"

namespace saccade {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}

// 0.25 -> "0.25", 25.0 -> "25".
std::string number_text(double value) {
  std::ostringstream text;
  text << std::setprecision(6) << value;
  return text.str();
}

// uint8 [H, W, 3] tensor -> a cv::Mat sharing its (contiguous) memory.
cv::Mat as_mat(const torch::Tensor& rgb) {
  return cv::Mat(
      static_cast<int>(rgb.size(0)), static_cast<int>(rgb.size(1)), CV_8UC3, rgb.data_ptr<uint8_t>());
}

torch::Tensor check_image(const torch::Tensor& image) {
  require(
      image.dim() == 3 && image.size(2) == 3 && image.scalar_type() == torch::kUInt8,
      "An overlay image must be uint8 [H, W, 3]");
  return image.to(torch::kCPU).contiguous();
}

// The image resized to side x side (area averaging to shrink, bilinear to enlarge).
torch::Tensor resize_square(const torch::Tensor& image, int64_t side) {
  const torch::Tensor source = check_image(image);
  if (source.size(0) == side && source.size(1) == side) return source.clone();
  auto output = torch::empty({side, side, 3}, torch::kUInt8);
  const cv::Mat target = as_mat(output);
  const bool shrinking = source.size(0) > side || source.size(1) > side;
  cv::resize(as_mat(source), target, target.size(), 0, 0, shrinking ? cv::INTER_AREA : cv::INTER_LINEAR);
  return output;
}

// The font scale that makes text about 55% of a strip `height` high.
double font_scale(int64_t height) {
  int baseline = 0;
  const cv::Size size = cv::getTextSize("Ag", kFont, 1.0, 1, &baseline);
  return 0.55 * static_cast<double>(height) / size.height;
}

int text_width(const std::string& text, double scale) {
  int baseline = 0;
  return cv::getTextSize(text, kFont, scale, 1, &baseline).width;
}

// `text` in black, its baseline vertically centered in the strip [top, top + height) and its
// left edge at x.
void put_text(cv::Mat& canvas, const std::string& text, int x, int64_t top, int64_t height, double scale) {
  int baseline = 0;
  const cv::Size size = cv::getTextSize(text, kFont, scale, 1, &baseline);
  const int y = static_cast<int>(top + (height + size.height) / 2);
  cv::putText(canvas, text, cv::Point(x, y), kFont, scale, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
}

// Greedy word wrap of `text` into lines at most `width` pixels wide (a longer word stays whole).
std::vector<std::string> wrap_text(const std::string& text, int width, double scale) {
  std::vector<std::string> lines;
  std::istringstream words(text);
  std::string line;
  for (std::string word; words >> word;) {
    const std::string longer = line.empty() ? word : line + " " + word;
    if (!line.empty() && text_width(longer, scale) > width) {
      lines.push_back(line);
      line = word;
    } else {
      line = longer;
    }
  }
  lines.push_back(line);
  return lines;
}

}  // namespace

const EnumNames<Upsample> kUpsampleNames(
    "upsampling",
    {{Upsample::nearest, "nearest"}, {Upsample::bilinear, "bilinear"}, {Upsample::bicubic, "bicubic"}});
const EnumNames<OverlayMode> kOverlayModeNames(
    "overlay mode",
    {{OverlayMode::contour, "contour"}, {OverlayMode::heatmap, "heatmap"}, {OverlayMode::darken, "darken"}});
const EnumNames<AttentionScale> kAttentionScaleNames(
    "attention scale", {{AttentionScale::per_word, "per_word"}, {AttentionScale::absolute, "absolute"}});
const EnumNames<HeadView> kHeadViewNames("head view", {{HeadView::mean, "mean"}, {HeadView::each, "each"}});

std::string to_string(Upsample upsample) {
  return kUpsampleNames.name(upsample);
}
Upsample parse_upsample(const std::string& name) {
  return kUpsampleNames.parse(name);
}
std::string to_string(OverlayMode mode) {
  return kOverlayModeNames.name(mode);
}
OverlayMode parse_overlay_mode(const std::string& name) {
  return kOverlayModeNames.parse(name);
}
std::string to_string(AttentionScale scale) {
  return kAttentionScaleNames.name(scale);
}
AttentionScale parse_attention_scale(const std::string& name) {
  return kAttentionScaleNames.parse(name);
}
std::string to_string(HeadView view) {
  return kHeadViewNames.name(view);
}
HeadView parse_head_view(const std::string& name) {
  return kHeadViewNames.parse(name);
}

VizOptions viz_options_from(const Config& config) {
  VizOptions options;
  options.panel_size = config.get<int64_t>("viz.panel_size");
  options.columns = config.get<int64_t>("viz.columns");
  options.label_height = config.get<int64_t>("viz.label_height");
  options.upsample = config.get_parsed("viz.upsample", parse_upsample);
  options.smooth_sigma = config.get<double>("viz.smooth_sigma");
  options.mode = config.get_parsed("viz.mode", parse_overlay_mode);
  options.contour_levels = config.get<std::vector<double>>("viz.contour_levels");
  options.peak_marker = config.get<bool>("viz.peak_marker");
  options.heatmap_opacity = config.get<double>("viz.heatmap_opacity");
  options.darken_floor = config.get<double>("viz.darken_floor");
  options.normalize = config.get_parsed("viz.normalize", parse_attention_scale);
  options.heads = config.get_parsed("viz.heads", parse_head_view);
  options.sample_images = config.get<int64_t>("viz.sample_images");
  options.refiner_layer = config.get<int64_t>("viz.refiner_layer");
  if (const auto location = config.get_optional<std::vector<int64_t>>("viz.refiner_location")) {
    if (location->size() != 2 || (*location)[0] < 0 || (*location)[1] < 0) {
      throw ConfigError("viz.refiner_location must be [row, column] of non-negative cells, or null");
    }
    options.refiner_location = std::array<int64_t, 2>{(*location)[0], (*location)[1]};
  }
  return options;
}

void validate(const VizOptions& options) {
  require(options.panel_size >= 16, "viz.panel_size must be >= 16 pixels");
  require(options.columns >= 1, "viz.columns must be >= 1");
  require(options.label_height >= 8, "viz.label_height must be >= 8 pixels");
  require(options.smooth_sigma >= 0, "viz.smooth_sigma must be >= 0 (0 = no smoothing)");
  require(!options.contour_levels.empty(), "viz.contour_levels must list at least one level");
  for (size_t i = 0; i < options.contour_levels.size(); ++i) {
    const double level = options.contour_levels[i];
    require(
        level > 0 && level <= 1 && (i == 0 || level > options.contour_levels[i - 1]),
        "viz.contour_levels must be ascending and in (0, 1], got " + number_text(level) + " at position " +
            std::to_string(i));
  }
  require(
      options.heatmap_opacity >= 0 && options.heatmap_opacity <= 1, "viz.heatmap_opacity must be in [0, 1]");
  require(options.darken_floor >= 0 && options.darken_floor <= 1, "viz.darken_floor must be in [0, 1]");
  require(options.sample_images >= 0, "viz.sample_images must be >= 0");
}

torch::Tensor attention_map(
    const torch::Tensor& alpha,
    const std::array<int64_t, 2>& grid,
    int64_t height,
    int64_t width,
    const VizOptions& options) {
  require(
      grid[0] > 0 && grid[1] > 0 && height > 0 && width > 0,
      "An attention map needs a non-empty grid and image");
  require(
      alpha.numel() == grid[0] * grid[1], "The attention has " + std::to_string(alpha.numel()) +
                                              " weights but the grid is " + std::to_string(grid[0]) + "x" +
                                              std::to_string(grid[1]));
  const auto cells = alpha.detach().to(torch::kCPU, torch::kFloat).contiguous().view({grid[0], grid[1]});
  const cv::Mat cell_mat(
      static_cast<int>(grid[0]), static_cast<int>(grid[1]), CV_32F,
      const_cast<float*>(cells.data_ptr<float>()));
  const int interpolation = options.upsample == Upsample::nearest    ? cv::INTER_NEAREST_EXACT
                            : options.upsample == Upsample::bilinear ? cv::INTER_LINEAR
                                                                     : cv::INTER_CUBIC;
  cv::Mat map;
  cv::resize(cell_mat, map, cv::Size(static_cast<int>(width), static_cast<int>(height)), 0, 0, interpolation);
  if (options.smooth_sigma > 0) {
    // Sigma in cells, converted per axis to pixels (cells need not be square).
    const double sigma_x = options.smooth_sigma * static_cast<double>(width) / grid[1];
    const double sigma_y = options.smooth_sigma * static_cast<double>(height) / grid[0];
    cv::GaussianBlur(map, map, cv::Size(0, 0), sigma_x, sigma_y, cv::BORDER_REPLICATE);
  }
  map = cv::max(map, 0.0);  // bicubic overshoot
  if (options.normalize == AttentionScale::per_word) {
    double peak = 0;
    cv::minMaxLoc(map, nullptr, &peak);
    if (peak > 0) map /= peak;
  }
  map = cv::min(map, 1.0);
  return torch::from_blob(map.data, {height, width}, torch::kFloat).clone();
}

std::array<double, 3> jet(double v) {
  v = std::clamp(v, 0.0, 1.0);
  // Piecewise-linear segments (x, value) of matplotlib's _jet_data.
  auto segment = [v](const std::vector<std::array<double, 2>>& points) {
    for (size_t i = 1; i < points.size(); ++i) {
      if (v <= points[i][0]) {
        const double t = (v - points[i - 1][0]) / (points[i][0] - points[i - 1][0]);
        return points[i - 1][1] + t * (points[i][1] - points[i - 1][1]);
      }
    }
    return points.back()[1];
  };
  return {
      segment({{0, 0}, {0.35, 0}, {0.66, 1}, {0.89, 1}, {1, 0.5}}),
      segment({{0, 0}, {0.125, 0}, {0.375, 1}, {0.64, 1}, {0.91, 0}, {1, 0}}),
      segment({{0, 0.5}, {0.11, 1}, {0.34, 1}, {0.65, 0}, {1, 0}})};
}

namespace {

// The iso-lines of `map` at each level over a copy of `image`: a black halo, then the line in
// jet(level).
torch::Tensor draw_contours(const torch::Tensor& image, const torch::Tensor& map, const VizOptions& options) {
  auto output = image.clone();
  cv::Mat canvas = as_mat(output);
  const auto values = map.to(torch::kCPU, torch::kFloat).contiguous();
  const cv::Mat map_mat(
      static_cast<int>(values.size(0)), static_cast<int>(values.size(1)), CV_32F,
      const_cast<float*>(values.data_ptr<float>()));
  const int thickness = std::max(1, static_cast<int>(image.size(0) / 112));
  for (const double level : options.contour_levels) {
    cv::Mat inside;
    cv::compare(map_mat, level, inside, cv::CMP_GE);
    std::vector<std::vector<cv::Point>> contours;
    cv::findContours(inside, contours, cv::RETR_LIST, cv::CHAIN_APPROX_NONE);
    const auto color = jet(level);
    cv::drawContours(canvas, contours, -1, cv::Scalar(0, 0, 0), thickness + 2, cv::LINE_8);
    cv::drawContours(
        canvas, contours, -1, cv::Scalar(255 * color[0], 255 * color[1], 255 * color[2]), thickness,
        cv::LINE_8);
  }
  return output;
}

std::string percent(double fraction) {
  return number_text(100 * fraction) + "%";
}

}  // namespace

int64_t peak_marker_radius(int64_t panel_size) {
  return std::max<int64_t>(3, panel_size / 28);
}

void draw_peak_marker(torch::Tensor& panel, int64_t cell, const std::array<int64_t, 2>& grid) {
  cv::Mat canvas = as_mat(panel);
  const int64_t side = panel.size(0), row = cell / grid[1], column = cell % grid[1];
  const cv::Point centre(
      static_cast<int>((2 * column + 1) * panel.size(1) / (2 * grid[1])),
      static_cast<int>((2 * row + 1) * side / (2 * grid[0])));
  const int radius = static_cast<int>(peak_marker_radius(side));
  for (const auto& [color, width] :
       {std::pair{cv::Scalar(0, 0, 0), 3}, std::pair{cv::Scalar(255, 255, 255), 1}}) {
    cv::line(canvas, centre - cv::Point(radius, 0), centre + cv::Point(radius, 0), color, width, cv::LINE_8);
    cv::line(canvas, centre - cv::Point(0, radius), centre + cv::Point(0, radius), color, width, cv::LINE_8);
  }
}

std::string attention_legend(const VizOptions& options, const std::string& panel) {
  const std::string scale = options.normalize == AttentionScale::per_word ? "each " + panel + "'s peak"
                                                                          : "all attention on one cell";
  std::string legend = "Attention: ";
  if (options.mode == OverlayMode::contour) {
    legend += "contours at ";
    for (size_t i = 0; i < options.contour_levels.size(); ++i)
      legend += (i == 0 ? "" : ", ") + percent(options.contour_levels[i]);
    legend += " of " + scale;
  } else if (options.mode == OverlayMode::heatmap) {
    legend += "colour from blue (none) to red (" + scale + ")";
  } else {
    legend += "brightness from " + percent(options.darken_floor) + " (none) to full (" + scale + ")";
  }
  return options.peak_marker ? legend + "; + marks the peak cell" : legend;
}

torch::Tensor overlay_attention(
    const torch::Tensor& image, const torch::Tensor& map, const VizOptions& options) {
  const torch::Tensor source = check_image(image);
  require(
      map.dim() == 2 && map.size(0) == source.size(0) && map.size(1) == source.size(1),
      "An attention map must be [H, W] like its image");
  if (options.mode == OverlayMode::contour) return draw_contours(source, map, options);
  const auto values = map.to(torch::kCPU, torch::kDouble).contiguous();
  auto output = torch::empty_like(source);
  const auto in = source.accessor<uint8_t, 3>();
  const auto m = values.accessor<double, 2>();
  auto out = output.accessor<uint8_t, 3>();
  for (int64_t y = 0; y < source.size(0); ++y) {
    for (int64_t x = 0; x < source.size(1); ++x) {
      const double a = std::clamp(m[y][x], 0.0, 1.0);
      if (options.mode == OverlayMode::heatmap) {
        const auto color = jet(a);
        for (int c = 0; c < 3; ++c) {
          const double blended =
              (1 - options.heatmap_opacity) * in[y][x][c] + options.heatmap_opacity * 255.0 * color[c];
          out[y][x][c] = static_cast<uint8_t>(std::clamp(std::lround(blended), 0L, 255L));
        }
      } else {
        const double factor = options.darken_floor + (1 - options.darken_floor) * a;
        for (int c = 0; c < 3; ++c) out[y][x][c] = static_cast<uint8_t>(std::lround(in[y][x][c] * factor));
      }
    }
  }
  return output;
}

PanelGridLayout panel_grid_layout(
    const std::vector<int64_t>& block_sizes, int64_t note_lines, const VizOptions& options) {
  PanelGridLayout layout;
  int64_t longest = 1;
  for (const int64_t size : block_sizes) longest = std::max(longest, size);
  layout.columns = std::min(options.columns, longest);
  for (const int64_t size : block_sizes)
    layout.rows += std::max<int64_t>(1, (size + layout.columns - 1) / layout.columns);
  layout.width = layout.columns * options.panel_size + (layout.columns + 1) * kPanelGap;
  layout.height = layout.rows * (options.panel_size + options.label_height) + (layout.rows + 1) * kPanelGap;
  if (note_lines > 0) layout.height += note_lines * options.label_height + kPanelGap;
  return layout;
}

torch::Tensor draw_panel_grid(
    const std::vector<std::vector<Panel>>& blocks,
    const std::vector<std::string>& notes,
    const VizOptions& options) {
  validate(options);
  const int64_t side = options.panel_size;
  std::vector<int64_t> block_sizes;
  for (const auto& block : blocks) block_sizes.push_back(static_cast<int64_t>(block.size()));
  const double scale = font_scale(options.label_height);
  const int64_t text_room = panel_grid_layout(block_sizes, 0, options).width - 2 * kPanelGap;
  std::vector<std::string> lines;
  for (const auto& note : notes) {
    for (auto& line : wrap_text(note, static_cast<int>(text_room), scale)) lines.push_back(std::move(line));
  }
  const PanelGridLayout layout = panel_grid_layout(block_sizes, static_cast<int64_t>(lines.size()), options);

  auto canvas_tensor = torch::full({layout.height, layout.width, 3}, 255, torch::kUInt8);
  cv::Mat canvas = as_mat(canvas_tensor);
  const int64_t row_height = side + options.label_height + kPanelGap;
  int64_t first_row = 0;
  for (const auto& block : blocks) {
    for (size_t k = 0; k < block.size(); ++k) {
      const int64_t row = first_row + static_cast<int64_t>(k) / layout.columns;
      const int64_t column = static_cast<int64_t>(k) % layout.columns;
      const int64_t x = kPanelGap + column * (side + kPanelGap);
      const int64_t y = kPanelGap + row * row_height;
      const torch::Tensor panel = check_image(block[k].image);
      require(panel.size(0) == side && panel.size(1) == side, "A panel must be panel_size x panel_size");
      canvas_tensor.slice(0, y, y + side).slice(1, x, x + side).copy_(panel);
      if (block[k].label.empty()) continue;
      // Shrink a word wider than its panel until it fits.
      const int width = text_width(block[k].label, scale);
      const double fitted = width > side - 4 ? scale * static_cast<double>(side - 4) / width : scale;
      const int left = static_cast<int>(x + (side - text_width(block[k].label, fitted)) / 2);
      put_text(canvas, block[k].label, left, y + side, options.label_height, fitted);
    }
    first_row +=
        std::max<int64_t>(1, (static_cast<int64_t>(block.size()) + layout.columns - 1) / layout.columns);
  }
  const int64_t notes_top = kPanelGap + layout.rows * row_height;
  for (size_t i = 0; i < lines.size(); ++i) {
    put_text(
        canvas, lines[i], kPanelGap, notes_top + static_cast<int64_t>(i) * options.label_height,
        options.label_height, scale);
  }
  return canvas_tensor;
}

namespace {

// Paints a white frame just inside the block of grid cell `cell` of `panel` (uint8 [P, P, 3]).
void outline_cell(torch::Tensor& panel, int64_t cell, const std::array<int64_t, 2>& grid) {
  const int64_t side = panel.size(0), row = cell / grid[1], column = cell % grid[1];
  const int64_t y0 = row * side / grid[0], y1 = (row + 1) * side / grid[0];
  const int64_t x0 = column * side / grid[1], x1 = (column + 1) * side / grid[1];
  const int64_t width = std::max<int64_t>(1, std::min({kOutlineWidth, (y1 - y0) / 4, (x1 - x0) / 4}));
  auto block = panel.slice(0, y0, y1).slice(1, x0, x1);  // a view
  block.slice(0, 0, width).fill_(255);
  block.slice(0, block.size(0) - width, block.size(0)).fill_(255);
  block.slice(1, 0, width).fill_(255);
  block.slice(1, block.size(1) - width, block.size(1)).fill_(255);
}

}  // namespace

torch::Tensor render_attention_figure(const AttentionFigure& figure, const VizOptions& options) {
  validate(options);
  const auto& alphas = figure.alphas;
  const int64_t n = static_cast<int64_t>(figure.words.size());
  require(
      alphas.defined() && (alphas.dim() == 2 || alphas.dim() == 3) && alphas.size(0) == n,
      "A figure needs alphas [n, L] or [n, N, L] with one row per word (" + std::to_string(n) + " words)");
  require(
      alphas.size(-1) == figure.grid[0] * figure.grid[1],
      "The alphas have " + std::to_string(alphas.size(-1)) + " locations but the grid is " +
          std::to_string(figure.grid[0]) + "x" + std::to_string(figure.grid[1]));
  const int64_t side = options.panel_size;
  const torch::Tensor image = resize_square(figure.image, side);
  torch::Tensor first_panel = image;
  if (figure.framed_cell >= 0) {
    first_panel = image.clone();
    outline_cell(first_panel, figure.framed_cell, figure.grid);
  }

  // One [n, L] matrix per block: the head mean, or each head.
  std::vector<torch::Tensor> per_block;
  if (alphas.dim() == 2) {
    per_block.push_back(alphas);
  } else if (options.heads == HeadView::mean) {
    per_block.push_back(alphas.to(torch::kFloat).mean(1));  // [n, L]
  } else {
    for (int64_t h = 0; h < alphas.size(1); ++h) per_block.push_back(alphas.select(1, h));  // [n, L]
  }
  std::vector<std::vector<Panel>> blocks;
  for (size_t b = 0; b < per_block.size(); ++b) {
    std::vector<Panel> block;
    block.push_back({first_panel, per_block.size() > 1 ? "head " + std::to_string(b + 1) : ""});
    for (int64_t i = 0; i < n; ++i) {
      const auto map = attention_map(per_block[b][i], figure.grid, side, side, options);
      auto panel = overlay_attention(image, map, options);
      const int64_t peak = per_block[b][i].argmax().item<int64_t>();
      if (figure.outline_read_cell) outline_cell(panel, peak, figure.grid);
      if (figure.framed_cell >= 0) outline_cell(panel, figure.framed_cell, figure.grid);
      if (options.peak_marker) draw_peak_marker(panel, peak, figure.grid);
      block.push_back({panel, figure.words[i]});
    }
    blocks.push_back(std::move(block));
  }
  std::vector<std::string> notes = figure.notes;
  if (figure.legend) notes.push_back(attention_legend(options, figure.panel_subject));
  return draw_panel_grid(blocks, notes, options);
}

}  // namespace saccade
