// Reference and result caption files: both reference layouts, and every malformed file ending
// in an error that names the file and the entry.
#include <gtest/gtest.h>

#include "eval/caption_files.h"
#include "test_util.h"

namespace saccade {
namespace {

using References = std::map<std::string, std::vector<std::string>>;

class CaptionFiles : public ::testing::Test {
 protected:
  std::filesystem::path file(const std::string& text) {
    const auto path = dir_ / "captions.json";
    testing::write_file(path, text);
    return path;
  }

  // Expects std::invalid_argument whose message starts with the file's path followed by `rest`.
  template <typename Read>
  void expect_invalid(Read read, const std::string& text, const std::string& rest) {
    const auto path = file(text);
    try {
      read(path);
      FAIL() << "expected std::invalid_argument for " << text;
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()).rfind(path.string() + rest, 0), 0u) << error.what();
    }
  }

  testing::TempDir dir_;
};

TEST_F(CaptionFiles, ReadsCocoAndKarpathyReferencesAlike) {
  const References expected = {{"1", {"A dog.", "A brown dog."}}, {"2", {"A cat."}}};
  EXPECT_EQ(
      read_reference_captions(file(R"({"images": [{"id": 1}], "annotations": [
      {"image_id": 1, "id": 7, "caption": "A dog."}, {"image_id": 2, "id": 8, "caption": "A cat."},
      {"image_id": 1, "id": 9, "caption": "A brown dog."}]})"))
          .captions,
      expected);
  EXPECT_EQ(
      read_reference_captions(file(R"({"images": [
      {"cocoid": 1, "imgid": 0, "split": "test", "sentences": [{"raw": "A dog."}, {"raw": "A brown dog."}]},
      {"cocoid": 2, "imgid": 1, "split": "val", "sentences": [{"raw": "A cat."}]}]})"))
          .captions,
      expected);
  // Flickr8k/30k splits have no cocoid: the imgid keys the image; string ids are kept as they are.
  EXPECT_EQ(
      read_reference_captions(file(R"({"images": [{"imgid": 5, "sentences": [{"raw": "x"}]}]})")).captions,
      (References{{"5", {"x"}}}));
  EXPECT_EQ(
      read_reference_captions(file(R"({"annotations": [{"image_id": "a.jpg", "caption": "x"}]})")).captions,
      (References{{"a.jpg", {"x"}}}));
}

// The order coco-caption scores in: a COCO file's "images", then images only annotations name;
// a split's entries.
TEST_F(CaptionFiles, KeepsTheFilesImageOrder) {
  EXPECT_EQ(
      read_reference_captions(file(R"({"images": [{"id": 10}, {"id": 2}, {"id": 99}], "annotations": [
      {"image_id": 2, "caption": "a"}, {"image_id": 7, "caption": "b"}, {"image_id": 10, "caption": "c"}]})"))
          .image_order,
      (std::vector<std::string>{"10", "2", "7"}));
  EXPECT_EQ(
      read_reference_captions(file(R"({"images": [{"cocoid": 30, "sentences": [{"raw": "x"}]},
      {"cocoid": 4, "sentences": [{"raw": "y"}]}]})"))
          .image_order,
      (std::vector<std::string>{"30", "4"}));
}

TEST_F(CaptionFiles, ReadsResults) {
  EXPECT_EQ(
      read_result_captions(file(R"([{"image_id": 42, "caption": "a dog"}, {"image_id": 7, "caption": ""}])")),
      (std::map<std::string, std::string>{{"42", "a dog"}, {"7", ""}}));
}

TEST_F(CaptionFiles, MalformedJsonNamesTheLine) {
  expect_invalid(read_result_captions, "[{\"image_id\": 1, \"caption\": \"a\"},\n oops]", ":2:2: ");
  // Bytes that are not UTF-8 (a Latin-1 e-acute) are malformed JSON too.
  expect_invalid(read_result_captions, "[{\"image_id\": 1, \"caption\": \"caf\xe9\"}]", ":1:");
}

TEST_F(CaptionFiles, WrongShapesNameTheEntry) {
  expect_invalid(
      read_result_captions, R"([{"image_id": 1, "caption": "a"}, {"image_id": 2, "caption": null}])",
      ": [1].caption: expected a string, got null");
  expect_invalid(
      read_result_captions, R"([{"caption": "a"}])", ": [0]: expected an object with key 'image_id'");
  expect_invalid(
      read_result_captions, R"([{"image_id": 1.5, "caption": "a"}])",
      ": [0].image_id: expected an integer or string");
  expect_invalid(
      read_result_captions, R"([{"image_id": 1, "caption": "a"}, {"image_id": 1, "caption": "b"}])",
      ": [1].image_id: image 1 already has a caption");
  expect_invalid(read_result_captions, R"({"image_id": 1})", ": expected COCO results");
  expect_invalid(read_reference_captions, R"({"categories": []})", ": expected COCO captions");
  expect_invalid(
      read_reference_captions, R"({"annotations": [{"image_id": 1, "caption": ["a"]}]})",
      ": annotations[0].caption: expected a string, got an array");
  expect_invalid(
      read_reference_captions, R"({"images": [{"cocoid": 1, "sentences": [{"tokens": ["a"]}]}]})",
      ": images[0].sentences[0]: expected an object with key 'raw'");
  expect_invalid(read_reference_captions, R"({"annotations": []})", ": holds no reference caption");
}

TEST_F(CaptionFiles, MissingFileIsAnIoError) {
  EXPECT_THROW(read_result_captions(dir_ / "missing.json"), std::runtime_error);
}

}  // namespace
}  // namespace saccade
