// The shapes world's scenes: placing objects without overlap, and drawing them (OpenCV).
#include "data/shapes_scene.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "data/shapes_world.h"

namespace saccade::shapes_detail {
namespace {

const uint8_t kColorValues[][3] = {{220, 40, 40},  {50, 180, 70},  {40, 90, 230},
                                   {235, 205, 40}, {150, 60, 200}, {245, 130, 30}};
constexpr int kShapeCount = 5;
constexpr int kColorCount = 6;
constexpr int kMargin = 2;  // pixels kept free between two objects

// A star's 10 vertices on the unit circle (outer radius 1, inner 0.45), clockwise from the top.
const float kStar[10][2] = {
    {0.0f, -1.0f}, {0.2645f, -0.3641f}, {0.9511f, -0.3090f}, {0.4280f, 0.1391f},   {0.5878f, 0.8090f},
    {0.0f, 0.45f}, {-0.5878f, 0.8090f}, {-0.4280f, 0.1391f}, {-0.9511f, -0.3090f}, {-0.2645f, -0.3641f}};

// Gray textured background (a bilinear blend of a coarse random grid), the objects, then
// per-pixel noise over everything. Integer arithmetic only, so every platform draws the same.
cv::Mat draw_scene(const ShapesWorldOptions& options, const std::vector<Object>& objects, Rng& rng) {
  const int size = options.image_size;
  constexpr int kGrid = 4;
  int grid[kGrid + 1][kGrid + 1];
  for (auto& row : grid) {
    for (int& value : row) value = static_cast<int>(rng.uniform_int(-20, 20));
  }
  const int base = static_cast<int>(rng.uniform_int(80, 140));
  int tint[3];
  for (int& value : tint) value = static_cast<int>(rng.uniform_int(-8, 8));
  cv::Mat image(size, size, CV_8UC3);
  for (int y = 0; y < size; ++y) {
    const int gy = y * kGrid / size;
    const int fy = y * kGrid % size;
    for (int x = 0; x < size; ++x) {
      const int gx = x * kGrid / size;
      const int fx = x * kGrid % size;
      const int texture = (grid[gy][gx] * (size - fx) * (size - fy) + grid[gy][gx + 1] * fx * (size - fy) +
                           grid[gy + 1][gx] * (size - fx) * fy + grid[gy + 1][gx + 1] * fx * fy) /
                          (size * size);
      auto* pixel = image.ptr<uint8_t>(y) + 3 * x;
      for (int c = 0; c < 3; ++c)
        pixel[c] = static_cast<uint8_t>(std::clamp(base + tint[c] + texture, 0, 255));
    }
  }
  for (const Object& object : objects) {
    const uint8_t* rgb = kColorValues[object.color];
    const cv::Scalar color(rgb[0], rgb[1], rgb[2]);
    const int e = object.extent;
    const int x0 = object.x0;
    const int y0 = object.y0;
    const int x1 = x0 + e - 1;
    const int y1 = y0 + e - 1;
    std::vector<cv::Point> points;
    switch (object.shape) {
      case 0:
        cv::circle(image, {object.cx(), object.cy()}, (e - 1) / 2, color, cv::FILLED, cv::LINE_8);
        break;
      case 1:
        cv::rectangle(image, cv::Point(x0, y0), cv::Point(x1, y1), color, cv::FILLED, cv::LINE_8);
        break;
      case 2:
        points = {{object.cx(), y0}, {x1, y1}, {x0, y1}};
        break;
      case 3:
        points = {{object.cx(), y0}, {x1, object.cy()}, {object.cx(), y1}, {x0, object.cy()}};
        break;
      default: {
        const float radius = static_cast<float>(e - 1) / 2.0f;
        for (const auto& vertex : kStar) {
          points.emplace_back(
              object.cx() + static_cast<int>(std::lround(vertex[0] * radius)),
              object.cy() + static_cast<int>(std::lround(vertex[1] * radius)));
        }
      }
    }
    if (!points.empty()) cv::fillPoly(image, std::vector<std::vector<cv::Point>>{points}, color, cv::LINE_8);
  }
  if (options.noise > 0) {
    for (int y = 0; y < size; ++y) {
      auto* row = image.ptr<uint8_t>(y);
      for (int i = 0; i < 3 * size; ++i) {
        row[i] = static_cast<uint8_t>(
            std::clamp(row[i] + static_cast<int>(rng.uniform_int(-options.noise, options.noise)), 0, 255));
      }
    }
  }
  return image;
}

}  // namespace

std::vector<Object> place_objects(const ShapesWorldOptions& options, Rng& rng) {
  const int size = options.image_size;
  const int count = static_cast<int>(rng.uniform_int(options.min_objects, options.max_objects));
  std::vector<Object> objects;
  for (int k = 0; k < count; ++k) {
    Object object;
    object.shape = static_cast<int>(rng.uniform_int(0, kShapeCount - 1));
    object.color = static_cast<int>(rng.uniform_int(0, kColorCount - 1));
    object.large = rng.bernoulli(0.5);
    // Now and then a twin of the first object, so counting captions ("two red circles") occur.
    if (k > 0 && rng.bernoulli(0.2)) {
      object.shape = objects.front().shape;
      object.color = objects.front().color;
    }
    object.extent = object.large ? size * 5 / 16 : size * 3 / 16;
    bool placed = false;
    for (int attempt = 0; attempt < 100 && !placed; ++attempt) {
      object.x0 = static_cast<int>(rng.uniform_int(1, size - 1 - object.extent));
      object.y0 = static_cast<int>(rng.uniform_int(1, size - 1 - object.extent));
      placed = std::none_of(objects.begin(), objects.end(), [&](const Object& other) {
        return object.x0 < other.x0 + other.extent + kMargin &&
               other.x0 < object.x0 + object.extent + kMargin &&
               object.y0 < other.y0 + other.extent + kMargin &&
               other.y0 < object.y0 + object.extent + kMargin;
      });
    }
    if (!placed) break;  // the image is full: fewer objects than drawn
    objects.push_back(object);
  }
  return objects;
}

torch::Tensor draw_scene_image(
    const ShapesWorldOptions& options, const std::vector<Object>& objects, Rng& rng) {
  const cv::Mat image = draw_scene(options, objects, rng);
  torch::Tensor rgb = torch::empty({options.image_size, options.image_size, 3}, torch::kUInt8);
  std::memcpy(rgb.data_ptr<uint8_t>(), image.data, image.total() * 3);
  return rgb;
}

}  // namespace saccade::shapes_detail
