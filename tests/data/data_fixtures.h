// Fixtures for the data tests: small images written with OpenCV (independently of the code
// under test), and Karpathy/COCO-format files with every field the readers map.
#pragma once

#include <torch/types.h>

#include <filesystem>
#include <string>

namespace saccade::testing {

// A deterministic uint8 [height, width, 3] RGB image whose pixel (y, x) is
// (10 * y + x, 100 + x, 200 - y) (mod 256), so every pixel is distinct in small images.
torch::Tensor pattern_image(int height, int width);

// Writes `rgb` (uint8 [H, W, 3]) as PNG or JPEG (by the extension), creating parent folders.
void write_image(const std::filesystem::path& path, const torch::Tensor& rgb);

// A Karpathy split file in COCO style (filepath, cocoid, restval, one image with 6 captions, one
// with only raw text) at `root/dataset_coco.json`, with its 4 images under root/train2014 and
// root/val2014. Returns the split file's path.
std::filesystem::path write_coco_karpathy_fixture(const std::filesystem::path& root);

}  // namespace saccade::testing
