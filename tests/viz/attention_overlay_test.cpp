// Attention overlays on small synthetic cases, every expected pixel worked out by hand: maps of
// one-hot alphas, bilinear weights, colormap blending, darkening, panel grid geometry.
#include "viz/attention_overlay.h"
#include "viz/sample_overlays.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include "test_util.h"

namespace saccade {
namespace {

// Exact options: blocky upsampling, no smoothing, each map scaled to peak 1, no peak marker.
VizOptions exact_options() {
  VizOptions options;
  options.upsample = Upsample::nearest;
  options.smooth_sigma = 0;
  options.normalize = AttentionScale::per_word;
  options.peak_marker = false;
  return options;
}

// [rows * cols] weights, all on cell (row, col).
torch::Tensor one_hot(int64_t rows, int64_t cols, int64_t row, int64_t col) {
  auto alpha = torch::zeros({rows * cols});
  alpha[row * cols + col] = 1.0;
  return alpha;
}

// uint8 [h, w, 3] filled with `value`.
torch::Tensor solid(int64_t h, int64_t w, int value) {
  return torch::full({h, w, 3}, value, torch::kUInt8);
}

// Pixel (y, x) as {r, g, b}.
std::array<int, 3> pixel(const torch::Tensor& image, int64_t y, int64_t x) {
  return {image[y][x][0].item<int>(), image[y][x][1].item<int>(), image[y][x][2].item<int>()};
}

TEST(AttentionMap, OneHotWithNearestLightsExactlyItsCell) {
  // 4x4 grid over 32x32 pixels: cell (1, 2) covers rows [8, 16) and columns [16, 24).
  const auto map = attention_map(one_hot(4, 4, 1, 2), {4, 4}, 32, 32, exact_options());
  ASSERT_EQ(map.sizes(), torch::IntArrayRef({32, 32}));
  int64_t mismatches = 0;
  for (int64_t y = 0; y < 32; ++y) {
    for (int64_t x = 0; x < 32; ++x) {
      const float expected = (y >= 8 && y < 16 && x >= 16 && x < 24) ? 1.0f : 0.0f;
      if (map[y][x].item<float>() != expected) ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(AttentionMap, NonSquareGridMapsCellsToBlocks) {
  // 2x3 grid over 4x6 pixels: cell (1, 0) covers rows [2, 4), columns [0, 2).
  const auto map = attention_map(one_hot(2, 3, 1, 0), {2, 3}, 4, 6, exact_options());
  const auto expected = torch::tensor({0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f,
                                       1.f, 1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 0.f, 0.f})
                            .view({4, 6});
  EXPECT_TRUE(torch::equal(map, expected)) << map;
}

TEST(AttentionMap, BilinearUsesHalfPixelCenters) {
  // 2x2 -> 4x4: output i samples the grid at (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25
  // (clamped at the border), so cell 0's weight along an axis is 1, 0.75, 0.25, 0.
  VizOptions options = exact_options();
  options.upsample = Upsample::bilinear;
  options.normalize = AttentionScale::absolute;
  const auto map = attention_map(one_hot(2, 2, 0, 0), {2, 2}, 4, 4, options);
  const auto axis = torch::tensor({1.0f, 0.75f, 0.25f, 0.0f});
  const auto expected = axis.unsqueeze(1) * axis.unsqueeze(0);
  EXPECT_LT((map - expected).abs().max().item<float>(), 1e-6) << map;
}

TEST(AttentionMap, AbsoluteKeepsWeightsAndPerWordScalesToPeakOne) {
  const auto uniform = torch::full({16}, 1.0f / 16);
  VizOptions options = exact_options();
  options.normalize = AttentionScale::absolute;
  EXPECT_TRUE(torch::allclose(attention_map(uniform, {4, 4}, 8, 8, options), torch::full({8, 8}, 0.0625f)));
  options.normalize = AttentionScale::per_word;
  EXPECT_TRUE(torch::equal(attention_map(uniform, {4, 4}, 8, 8, options), torch::ones({8, 8})));
}

TEST(AttentionMap, SmoothingSpreadsAroundTheCellAndKeepsItsPeak) {
  VizOptions options = exact_options();
  options.smooth_sigma = 1.0;
  const auto map = attention_map(one_hot(4, 4, 1, 1), {4, 4}, 32, 32, options);
  EXPECT_FLOAT_EQ(map.max().item<float>(), 1.0f);
  // Symmetric about the cell's center (pixel 12), nonzero outside the cell.
  EXPECT_NEAR(map[11][4].item<float>(), map[11][19].item<float>(), 1e-6);
  EXPECT_GT(map[11][20].item<float>(), 0.0f);
  EXPECT_GT(map[12][12].item<float>(), map[12][24].item<float>());
}

TEST(AttentionMap, WrongSizeIsAnError) {
  try {
    attention_map(torch::zeros({15}), {4, 4}, 8, 8, exact_options());
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()), "The attention has 15 weights but the grid is 4x4");
  }
}

TEST(Jet, MatchesMatplotlibSegments) {
  const auto low = jet(0.0), high = jet(1.0), middle = jet(0.5);
  EXPECT_DOUBLE_EQ(low[0], 0.0);
  EXPECT_DOUBLE_EQ(low[1], 0.0);
  EXPECT_DOUBLE_EQ(low[2], 0.5);
  EXPECT_DOUBLE_EQ(high[0], 0.5);
  EXPECT_DOUBLE_EQ(high[1], 0.0);
  EXPECT_DOUBLE_EQ(high[2], 0.0);
  // red: 0 -> 1 over [0.35, 0.66]; green 1 on [0.375, 0.64]; blue 1 -> 0 over [0.34, 0.65].
  EXPECT_NEAR(middle[0], 0.15 / 0.31, 1e-12);
  EXPECT_DOUBLE_EQ(middle[1], 1.0);
  EXPECT_NEAR(middle[2], 1.0 - 0.16 / 0.31, 1e-12);
}

TEST(Overlay, HeatmapBlendsJetOverTheImage) {
  // Gray 100, opacity 0.5: inside 0.5 * 100 + 0.5 * 255 * (0.5, 0, 0) = (113.75, 50, 50) -> (114, 50, 50);
  // outside 0.5 * 100 + 0.5 * 255 * (0, 0, 0.5) = (50, 50, 114).
  VizOptions options = exact_options();
  options.mode = OverlayMode::heatmap;
  options.heatmap_opacity = 0.5;
  const auto map = attention_map(one_hot(4, 4, 1, 2), {4, 4}, 32, 32, options);
  const auto out = overlay_attention(solid(32, 32, 100), map, options);
  int64_t mismatches = 0;
  for (int64_t y = 0; y < 32; ++y) {
    for (int64_t x = 0; x < 32; ++x) {
      const bool inside = y >= 8 && y < 16 && x >= 16 && x < 24;
      const std::array<int, 3> expected =
          inside ? std::array<int, 3>{114, 50, 50} : std::array<int, 3>{50, 50, 114};
      if (pixel(out, y, x) != expected) ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Overlay, ContourOutlinesTheAttendedCellAndLeavesTheImage) {
  // The map is 1 on rows 8..15, columns 16..23 and 0 elsewhere: the 0.5 iso-line runs along that
  // block's border pixels in jet(0.5) (a 32-pixel panel draws 1-pixel lines), over a black halo
  // of 3-pixel lines, which OpenCV draws 2 pixels to each side.
  VizOptions options = exact_options();
  options.mode = OverlayMode::contour;
  options.contour_levels = {0.5};
  const auto map = attention_map(one_hot(4, 4, 1, 2), {4, 4}, 32, 32, options);
  const auto out = overlay_attention(solid(32, 32, 100), map, options);
  const auto color = jet(0.5);
  const std::array<int, 3> line = {
      static_cast<int>(std::lround(255 * color[0])), static_cast<int>(std::lround(255 * color[1])),
      static_cast<int>(std::lround(255 * color[2]))};
  for (const auto& [y, x] : {std::pair{8, 20}, std::pair{15, 20}, std::pair{12, 16}, std::pair{12, 23}})
    EXPECT_EQ(pixel(out, y, x), line) << y << ", " << x;
  for (const auto& [y, x] :
       {std::pair{6, 20}, std::pair{7, 20}, std::pair{9, 20}, std::pair{16, 20}, std::pair{17, 20},
        std::pair{12, 14}, std::pair{12, 15}, std::pair{12, 25}})
    EXPECT_EQ(pixel(out, y, x), (std::array<int, 3>{0, 0, 0})) << "halo at " << y << ", " << x;
  int64_t changed_far = 0;
  for (int64_t y = 0; y < 32; ++y) {
    for (int64_t x = 0; x < 32; ++x) {
      const bool near_border = y >= 6 && y <= 17 && x >= 14 && x <= 25;
      const bool deep_inside = y >= 11 && y <= 12 && x >= 19 && x <= 20;
      if ((!near_border || deep_inside) && pixel(out, y, x) != std::array<int, 3>{100, 100, 100})
        ++changed_far;
    }
  }
  EXPECT_EQ(changed_far, 0) << "only the line and its halo change the image";
}

TEST(Overlay, PeakMarkerCrossesTheCentreOfThePeakCell) {
  // Cell (1, 2) of a 4x4 grid on 32 px spans rows 8..15, columns 16..23: centre (12, 20).
  // Arms of peak_marker_radius(32) = 3 pixels: white on (12, 17..23) and (9..15, 20).
  auto panel = solid(32, 32, 100);
  draw_peak_marker(panel, 1 * 4 + 2, {4, 4});
  ASSERT_EQ(peak_marker_radius(32), 3);
  for (int x = 17; x <= 23; ++x) EXPECT_EQ(pixel(panel, 12, x), (std::array<int, 3>{255, 255, 255})) << x;
  for (int y = 9; y <= 15; ++y) EXPECT_EQ(pixel(panel, y, 20), (std::array<int, 3>{255, 255, 255})) << y;
  EXPECT_EQ(pixel(panel, 11, 18), (std::array<int, 3>{0, 0, 0}));  // the black cross under it
  EXPECT_EQ(pixel(panel, 13, 22), (std::array<int, 3>{0, 0, 0}));
  EXPECT_EQ(pixel(panel, 9, 17), (std::array<int, 3>{100, 100, 100}));  // between the arms
  EXPECT_EQ(pixel(panel, 8, 16), (std::array<int, 3>{100, 100, 100}));
  EXPECT_EQ(pixel(panel, 0, 0), (std::array<int, 3>{100, 100, 100}));
}

TEST(Overlay, LegendSaysHowTheAttentionIsDrawnAndScaled) {
  EXPECT_EQ(
      attention_legend(VizOptions{}),
      "Attention: contours at 25%, 50%, 75% of each word's peak; + marks the peak cell");
  VizOptions options;
  options.mode = OverlayMode::darken;
  options.normalize = AttentionScale::absolute;
  options.peak_marker = false;
  EXPECT_EQ(
      attention_legend(options), "Attention: brightness from 20% (none) to full (all attention on one cell)");
  options.mode = OverlayMode::heatmap;
  EXPECT_EQ(
      attention_legend(options), "Attention: colour from blue (none) to red (all attention on one cell)");
}

TEST(Overlay, DarkenKeepsTheAttendedCellAndScalesTheRestByTheFloor) {
  VizOptions options = exact_options();
  options.mode = OverlayMode::darken;
  options.darken_floor = 0.25;
  // A gradient image so that every pixel is checked against its own value.
  auto image = torch::empty({16, 16, 3}, torch::kUInt8);
  for (int64_t y = 0; y < 16; ++y)
    for (int64_t x = 0; x < 16; ++x)
      for (int64_t c = 0; c < 3; ++c) image[y][x][c] = static_cast<int>((y * 16 + x) * 3 + c) % 256;
  const auto map = attention_map(one_hot(2, 2, 1, 0), {2, 2}, 16, 16, options);
  const auto out = overlay_attention(image, map, options);
  int64_t mismatches = 0;
  for (int64_t y = 0; y < 16; ++y) {
    for (int64_t x = 0; x < 16; ++x) {
      for (int64_t c = 0; c < 3; ++c) {
        const int value = image[y][x][c].item<int>();
        // v / 4 rounded half up, in integers.
        const int expected = (y >= 8 && x < 8) ? value : (value + 2) / 4;
        if (out[y][x][c].item<int>() != expected) ++mismatches;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(PanelGrid, LayoutWrapsLongCaptionsIntoRows) {
  VizOptions options;
  options.panel_size = 32;
  options.label_height = 10;
  options.columns = 3;
  // The image + 7 words = 8 panels in rows of 3: 3 rows.
  auto layout = panel_grid_layout({8}, 0, options);
  EXPECT_EQ(layout.columns, 3);
  EXPECT_EQ(layout.rows, 3);
  EXPECT_EQ(layout.width, 3 * 32 + 4 * kPanelGap);          // 112
  EXPECT_EQ(layout.height, 3 * (32 + 10) + 4 * kPanelGap);  // 142
  layout = panel_grid_layout({8}, 2, options);
  EXPECT_EQ(layout.height, 3 * (32 + 10) + 4 * kPanelGap + 2 * 10 + kPanelGap);  // 166
  // A short caption uses only as many columns as it needs.
  layout = panel_grid_layout({2}, 0, options);
  EXPECT_EQ(layout.columns, 2);
  EXPECT_EQ(layout.rows, 1);
  EXPECT_EQ(layout.width, 2 * 32 + 3 * kPanelGap);
  // Blocks start new rows: two heads of 3 panels with 6 columns = 2 rows of 3.
  options.columns = 6;
  layout = panel_grid_layout({3, 3}, 0, options);
  EXPECT_EQ(layout.columns, 3);
  EXPECT_EQ(layout.rows, 2);
}

TEST(PanelGrid, PanelsLandAtTheirCornersOnWhite) {
  VizOptions options;
  options.panel_size = 16;
  options.label_height = 8;
  options.columns = 2;
  // Three unlabelled panels of values 10, 20, 30: (row 0, col 0), (0, 1), (1, 0).
  std::vector<Panel> block = {{solid(16, 16, 10), ""}, {solid(16, 16, 20), ""}, {solid(16, 16, 30), ""}};
  const auto grid = draw_panel_grid({block}, {}, options);
  ASSERT_EQ(grid.sizes(), torch::IntArrayRef({2 * 24 + 3 * kPanelGap, 2 * 16 + 3 * kPanelGap, 3}));
  const int64_t row_step = 16 + 8 + kPanelGap;  // 28
  const int64_t column_step = 16 + kPanelGap;   // 20
  const int values[3] = {10, 20, 30};
  for (int k = 0; k < 3; ++k) {
    const int64_t top = kPanelGap + (k / 2) * row_step, left = kPanelGap + (k % 2) * column_step;
    const auto panel = grid.slice(0, top, top + 16).slice(1, left, left + 16);
    EXPECT_TRUE(torch::equal(panel, solid(16, 16, values[k]))) << "panel " << k;
    EXPECT_EQ(pixel(grid, top - 1, left), (std::array<int, 3>{255, 255, 255})) << "gap above panel " << k;
    EXPECT_EQ(pixel(grid, top, left - 1), (std::array<int, 3>{255, 255, 255})) << "gap left of panel " << k;
  }
  // The missing fourth panel's place stays white.
  EXPECT_TRUE(torch::equal(grid.slice(0, 4 + 28, 4 + 28 + 16).slice(1, 24, 40), solid(16, 16, 255)));
}

TEST(Figure, ImageFirstThenOneDarkenedPanelPerWord) {
  VizOptions options = exact_options();
  options.mode = OverlayMode::darken;
  options.darken_floor = 0.5;
  options.panel_size = 16;
  options.label_height = 8;
  options.columns = 2;
  AttentionFigure figure;
  figure.image = solid(16, 16, 200);
  figure.words = {"a", "red", "dot"};
  figure.grid = {2, 2};
  figure.alphas = torch::stack({one_hot(2, 2, 0, 0), one_hot(2, 2, 0, 1), one_hot(2, 2, 1, 1)});  // [3, 4]
  figure.notes = {"a"};
  const auto grid = render_attention_figure(figure, options);
  // 4 panels in 2 columns = 2 rows, plus one note line.
  ASSERT_EQ(
      grid.sizes(), torch::IntArrayRef({2 * 24 + 3 * kPanelGap + 8 + kPanelGap, 2 * 16 + 3 * kPanelGap, 3}));
  // The legend comes below the notes, wrapped into whole 8-pixel lines; the panels are unchanged.
  figure.legend = true;
  const auto with_legend = render_attention_figure(figure, options);
  const int64_t added = with_legend.size(0) - grid.size(0);
  EXPECT_GT(added, 0);
  EXPECT_EQ(added % 8, 0);
  const int64_t notes_top = kPanelGap + 2 * (16 + 8 + kPanelGap);
  EXPECT_TRUE(torch::equal(with_legend.slice(0, 0, notes_top), grid.slice(0, 0, notes_top)));
  const auto panel = [&](int k) {
    const int64_t top = kPanelGap + (k / 2) * (24 + kPanelGap), left = kPanelGap + (k % 2) * (16 + kPanelGap);
    return grid.slice(0, top, top + 16).slice(1, left, left + 16);
  };
  EXPECT_TRUE(torch::equal(panel(0), figure.image));
  // Word k lights its 8x8 cell (200) and halves the rest (100).
  const int64_t cells[3][2] = {{0, 0}, {0, 8}, {8, 8}};
  for (int k = 0; k < 3; ++k) {
    auto expected = solid(16, 16, 100);
    expected.slice(0, cells[k][0], cells[k][0] + 8).slice(1, cells[k][1], cells[k][1] + 8).fill_(200);
    EXPECT_TRUE(torch::equal(panel(k + 1), expected)) << "word " << figure.words[k];
  }
}

// 16-pixel darkened panels of a 200-grey image with one word, "dot", on a 2x2 grid.
std::pair<VizOptions, AttentionFigure> darkened_dot_figure(double floor) {
  VizOptions options = exact_options();
  options.mode = OverlayMode::darken;
  options.darken_floor = floor;
  options.panel_size = 16;
  options.label_height = 8;
  AttentionFigure figure;
  figure.image = solid(16, 16, 200);
  figure.words = {"dot"};
  figure.grid = {2, 2};
  return {options, figure};
}

TEST(Figure, HardAttentionFramesTheCellEachWordRead) {
  auto [options, figure] = darkened_dot_figure(0.5);
  figure.alphas = one_hot(2, 2, 1, 0).unsqueeze(0);  // [1, 4]: the bottom-left cell
  figure.outline_read_cell = true;
  const auto grid = render_attention_figure(figure, options);
  const auto panel =
      grid.slice(0, kPanelGap, kPanelGap + 16).slice(1, 2 * kPanelGap + 16, 2 * kPanelGap + 32);
  // The darkened overlay (cell 200, rest 100) with a 2-pixel white frame inside rows 8..15,
  // columns 0..7.
  auto expected = solid(16, 16, 100);
  auto cell = expected.slice(0, 8, 16).slice(1, 0, 8);
  cell.fill_(255);
  cell.slice(0, 2, 6).slice(1, 2, 6).fill_(200);
  EXPECT_TRUE(torch::equal(panel, expected)) << panel.select(2, 0);
}

TEST(Figure, RefinerMapsShowOneLocationPerHeadFramedInEveryPanel) {
  VizOptions options = darkened_dot_figure(0.5).first;
  // Two layers of two heads on a 2 x 2 grid; in the last layer, location 2 (row 1, column 0)
  // looks at cell 3 with head 1 and at cell 0 with head 2.
  std::vector<torch::Tensor> maps = {torch::full({2, 4, 4}, 0.25), torch::full({2, 4, 4}, 0.25)};
  maps[1][0][2] = one_hot(2, 2, 1, 1);
  maps[1][1][2] = one_hot(2, 2, 0, 0);
  DecodedCaption caption;
  caption.alphas = one_hot(2, 2, 1, 0).unsqueeze(0);  // the first word looked at location 2
  const auto crop = solid(16, 16, 200);
  AttentionFigure figure = make_refiner_figure(crop, maps, {2, 2}, caption, options);
  EXPECT_EQ(figure.words, (std::vector<std::string>{"head 1", "head 2"}));
  EXPECT_TRUE(torch::equal(figure.alphas, torch::stack({one_hot(2, 2, 1, 1), one_hot(2, 2, 0, 0)})));
  EXPECT_EQ(figure.framed_cell, 2);
  ASSERT_FALSE(figure.notes.empty());
  EXPECT_EQ(
      figure.notes[0],
      "refiner layer 2 of 2: where the framed cell (row 1, column 0) looks, one panel per head");
  EXPECT_EQ(figure.panel_subject, "head");
  EXPECT_EQ(
      attention_legend(options, "head"), "Attention: brightness from 50% (none) to full (each head's peak)");

  // The image panel and head 1's panel (attention on cell 3: 200 there, 100 elsewhere) carry the
  // 2-pixel white frame inside cell 2 (rows 8..15, columns 0..7).
  const auto grid = render_attention_figure(figure, options);
  const auto panel_at = [&](int64_t column) {
    const int64_t x = kPanelGap + column * (16 + kPanelGap);
    return grid.slice(0, kPanelGap, kPanelGap + 16).slice(1, x, x + 16);
  };
  const auto framed = [](torch::Tensor expected, int value) {
    auto cell = expected.slice(0, 8, 16).slice(1, 0, 8);
    cell.fill_(255);
    cell.slice(0, 2, 6).slice(1, 2, 6).fill_(value);
    return expected;
  };
  EXPECT_TRUE(torch::equal(panel_at(0), framed(solid(16, 16, 200), 200)));
  auto head_one = solid(16, 16, 100);
  head_one.slice(0, 8, 16).slice(1, 8, 16).fill_(200);
  EXPECT_TRUE(torch::equal(panel_at(1), framed(head_one, 100))) << panel_at(1).select(2, 0);

  // A chosen location and layer; and ones outside the grid or the refiner, named.
  options.refiner_location = std::array<int64_t, 2>{0, 1};
  options.refiner_layer = 0;
  figure = make_refiner_figure(crop, maps, {2, 2}, caption, options);
  EXPECT_EQ(figure.framed_cell, 1);
  EXPECT_TRUE(torch::equal(figure.alphas, maps[0].select(1, 1)));
  options.refiner_layer = -3;
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] {
        make_refiner_figure(crop, maps, {2, 2}, caption, options);
      }),
      "viz.refiner_layer=-3 is not a layer of the 2-layer refiner");
  options.refiner_layer = -1;
  options.refiner_location = std::array<int64_t, 2>{2, 0};
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] {
        make_refiner_figure(crop, maps, {2, 2}, caption, options);
      }),
      "viz.refiner_location [2, 0] is outside the 2 x 2 grid");
}

TEST(Figure, MultiheadMeanOrOneBlockPerHead) {
  auto [options, figure] = darkened_dot_figure(0.0);
  // [1, 2, 4]: head 1 on cell (0, 0), head 2 on cell (1, 1); the mean is 0.5 on both, which
  // per-word scaling lifts to 1.
  figure.alphas = torch::stack({one_hot(2, 2, 0, 0), one_hot(2, 2, 1, 1)}).unsqueeze(0);
  const auto mean = render_attention_figure(figure, options);
  ASSERT_EQ(mean.size(1), 2 * 16 + 3 * kPanelGap);
  ASSERT_EQ(mean.size(0), 24 + 2 * kPanelGap);
  const auto word = mean.slice(0, kPanelGap, kPanelGap + 16).slice(1, 16 + 2 * kPanelGap, 32 + 2 * kPanelGap);
  auto expected = solid(16, 16, 0);
  expected.slice(0, 0, 8).slice(1, 0, 8).fill_(200);
  expected.slice(0, 8, 16).slice(1, 8, 16).fill_(200);
  EXPECT_TRUE(torch::equal(word, expected));

  options.heads = HeadView::each;
  const auto each = render_attention_figure(figure, options);
  EXPECT_EQ(each.size(0), 2 * 24 + 3 * kPanelGap);  // one row per head
  const int64_t second_row = kPanelGap + 24 + kPanelGap;
  const auto head2 =
      each.slice(0, second_row, second_row + 16).slice(1, 16 + 2 * kPanelGap, 32 + 2 * kPanelGap);
  expected = solid(16, 16, 0);
  expected.slice(0, 8, 16).slice(1, 8, 16).fill_(200);
  EXPECT_TRUE(torch::equal(head2, expected));
}

TEST(Figure, WordsAndAlphasMustAgree) {
  AttentionFigure figure;
  figure.image = solid(16, 16, 0);
  figure.words = {"a", "b"};
  figure.grid = {2, 2};
  figure.alphas = torch::zeros({3, 4});
  EXPECT_THROW(render_attention_figure(figure, VizOptions{}), std::invalid_argument);
  figure.alphas = torch::zeros({2, 5});
  EXPECT_THROW(render_attention_figure(figure, VizOptions{}), std::invalid_argument);
}

TEST(VizOptions, ConfigDefaultsMatchTheStruct) {
  const Config config(YAML::LoadFile((testing::source_dir() / "configs/config.yaml").string()));
  const VizOptions read = viz_options_from(config);
  const VizOptions defaults;
  EXPECT_EQ(read.panel_size, defaults.panel_size);
  EXPECT_EQ(read.columns, defaults.columns);
  EXPECT_EQ(read.label_height, defaults.label_height);
  EXPECT_EQ(read.upsample, defaults.upsample);
  EXPECT_EQ(read.smooth_sigma, defaults.smooth_sigma);
  EXPECT_EQ(read.mode, defaults.mode);
  EXPECT_EQ(read.contour_levels, defaults.contour_levels);
  EXPECT_EQ(read.peak_marker, defaults.peak_marker);
  EXPECT_EQ(read.heatmap_opacity, defaults.heatmap_opacity);
  EXPECT_EQ(read.darken_floor, defaults.darken_floor);
  EXPECT_EQ(read.normalize, defaults.normalize);
  EXPECT_EQ(read.heads, defaults.heads);
  EXPECT_EQ(read.sample_images, defaults.sample_images);
}

TEST(VizOptions, BadValuesAreErrors) {
  VizOptions options;
  options.columns = 0;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = VizOptions{};
  options.darken_floor = 1.5;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = VizOptions{};
  options.contour_levels = {0.5, 0.25};
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] { validate(options); }),
      "viz.contour_levels must be ascending and in (0, 1], got 0.25 at position 1");
  options.contour_levels = {};
  EXPECT_THROW(validate(options), std::invalid_argument);
  try {
    parse_overlay_mode("glow");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()), "Unknown overlay mode 'glow'; expected contour, heatmap or darken");
  }
  EXPECT_EQ(parse_upsample(to_string(Upsample::bicubic)), Upsample::bicubic);
  EXPECT_EQ(parse_head_view(to_string(HeadView::each)), HeadView::each);
  EXPECT_EQ(parse_attention_scale(to_string(AttentionScale::absolute)), AttentionScale::absolute);
}

}  // namespace
}  // namespace saccade
