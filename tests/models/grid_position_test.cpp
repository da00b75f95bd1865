// Position in the annotation grid: coordinate channels and 2D sinusoidal encodings against
// their formulas at worked cells, and the encoder appending or adding them.
#include "models/grid_position.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "models/encoder.h"
#include "test_util.h"

namespace saccade {
namespace {

TEST(GridPosition, CoordinatesAreCellCentresFromMinusOneToOne) {
  // 2 rows x 4 columns: x = (2c + 1) / 4 - 1 = -0.75, -0.25, 0.25, 0.75; y = -0.5, 0.5.
  const auto xy = coordinate_channels(2, 4, torch::kFloat);
  ASSERT_EQ(xy.sizes(), torch::IntArrayRef({2, 2, 4}));
  const float x[] = {-0.75f, -0.25f, 0.25f, 0.75f};
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      EXPECT_FLOAT_EQ(xy[0][r][c].item<float>(), x[c]);
      EXPECT_FLOAT_EQ(xy[1][r][c].item<float>(), r == 0 ? -0.5f : 0.5f);
    }
  }
}

TEST(GridPosition, SinusoidalFollowsTheFormulaPerAxis) {
  // dim 8: d = 4 channels per axis; 10000^(2/4) = 100, so at row r and column c the channels are
  // sin r, cos r, sin(r/100), cos(r/100), sin c, cos c, sin(c/100), cos(c/100).
  const auto pe = sinusoidal_encoding_2d(8, 3, 5, torch::kDouble);
  ASSERT_EQ(pe.sizes(), torch::IntArrayRef({8, 3, 5}));
  for (const auto& [r, c] : {std::pair{0, 0}, std::pair{2, 3}, std::pair{1, 4}}) {
    const double expected[] = {std::sin(r), std::cos(r), std::sin(r / 100.0), std::cos(r / 100.0),
                               std::sin(c), std::cos(c), std::sin(c / 100.0), std::cos(c / 100.0)};
    for (int64_t channel = 0; channel < 8; ++channel)
      EXPECT_NEAR(pe[channel][r][c].item<double>(), expected[channel], 1e-12)
          << channel << " at " << r << ", " << c;
  }
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([] { sinusoidal_encoding_2d(6, 2, 2, torch::kFloat); }),
      "A 2D sinusoidal encoding needs a dimension that is a positive multiple of 4, got 6");
}

TEST(GridPosition, OneDimensionalEncodingStartsAtAnyPosition) {
  // 4 channels: 10000^(2/4) = 100, so position p has sin p, cos p, sin(p / 100), cos(p / 100).
  const auto pe = sinusoidal_encoding(5, 2, 4, torch::kDouble);
  ASSERT_EQ(pe.sizes(), torch::IntArrayRef({2, 4}));
  for (const int p : {5, 6}) {
    const double expected[] = {std::sin(p), std::cos(p), std::sin(p / 100.0), std::cos(p / 100.0)};
    for (int64_t channel = 0; channel < 4; ++channel)
      EXPECT_NEAR(pe[p - 5][channel].item<double>(), expected[channel], 1e-12) << p << ", " << channel;
  }
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([] { sinusoidal_encoding(0, 2, 3, torch::kFloat); }),
      "A sinusoidal encoding needs a positive even dimension, got 3");
}

TEST(GridPosition, TheEncoderAppendsCoordinatesOrAddsTheEncoding) {
  EncoderOptions options;
  options.channels = {8, 12};
  options.grid = std::array<int64_t, 2>{3, 2};
  const auto images = torch::randn({2, 3, 32, 32});
  const auto features_of = [&](GridPosition position) {
    torch::manual_seed(7);  // the same weights for every position
    options.position = position;
    Encoder encoder = build_encoder(options);
    encoder->eval();
    return std::pair{encoder->annotation_dim(), encoder->forward_grid(images)};
  };
  const auto [plain_dim, plain] = features_of(GridPosition::none);
  const auto [coords_dim, coords] = features_of(GridPosition::coords);
  const auto [sinusoidal_dim, sinusoidal] = features_of(GridPosition::sinusoidal);
  EXPECT_EQ(plain_dim, 12);
  EXPECT_EQ(coords_dim, 14);
  EXPECT_EQ(sinusoidal_dim, 12);
  ASSERT_EQ(coords.sizes(), torch::IntArrayRef({2, 14, 3, 2}));
  EXPECT_TRUE(torch::equal(coords.slice(1, 0, 12), plain));
  EXPECT_TRUE(torch::equal(coords[1].slice(0, 12), coordinate_channels(3, 2, torch::kFloat)));
  EXPECT_TRUE(
      torch::allclose(sinusoidal - plain, sinusoidal_encoding_2d(12, 3, 2, torch::kFloat).unsqueeze(0)));

  options.channels = {8, 10};
  options.position = GridPosition::sinusoidal;
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] { build_encoder(options); }),
      "encoder.position sinusoidal needs annotations whose dimension is a multiple of 4; small_cnn gives 10");
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([] { parse_grid_position("polar"); }),
      "Unknown grid position 'polar'; expected none, coords or sinusoidal");
}

}  // namespace
}  // namespace saccade
