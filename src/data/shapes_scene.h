// A shapes-world scene's objects: placed without overlap, then drawn (not part of the public API).
//
// Objects of random shape, colour and size go on a textured noisy gray background. The drawing
// comes back as a uint8 tensor, so OpenCV stays in shapes_scene.cpp, behind data/'s headers.
#pragma once

#include <torch/types.h>

#include <vector>

#include "data/rng.h"

namespace saccade {
struct ShapesWorldOptions;
}  // namespace saccade

namespace saccade::shapes_detail {

// An object's shape and colour are indices into these names, as captions and the truth spell them.
inline constexpr const char* kShapeNames[] = {"circle", "square", "triangle", "diamond", "star"};
inline constexpr const char* kColorNames[] = {"red", "green", "blue", "yellow", "purple", "orange"};

// One object of a scene, in the generated image's pixels.
struct Object {
  int shape = 0;
  int color = 0;
  bool large = false;
  int x0 = 0;  // box [x0, x0 + extent) x [y0, y0 + extent)
  int y0 = 0;
  int extent = 0;
  int cx() const { return x0 + extent / 2; }
  int cy() const { return y0 + extent / 2; }
};

// The scene's objects: min_objects..max_objects of them (fewer when they do not fit), each placed
// where it overlaps no other.
std::vector<Object> place_objects(const ShapesWorldOptions& options, Rng& rng);

// The scene drawn (background, objects, noise) as uint8 [image_size, image_size, 3] RGB.
torch::Tensor draw_scene_image(
    const ShapesWorldOptions& options, const std::vector<Object>& objects, Rng& rng);

}  // namespace saccade::shapes_detail
