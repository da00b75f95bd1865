// Caption corpora: every field mapping of the Karpathy and COCO readers, split selection, and
// each malformed-input case named in the data issue.
#include "data/caption_corpus.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "data_fixtures.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

using Words = std::vector<std::string>;

// The message of the std::invalid_argument that reading `json` as a Karpathy file raises.
std::string karpathy_error(const TempDir& dir, const std::string& json) {
  write_file(dir / "split.json", json);
  try {
    read_karpathy_split(dir / "split.json", dir.path());
  } catch (const std::invalid_argument& error) {
    // Entry errors read "<file>: <entry>: ...", JSON syntax errors "<file>:<line>:<column>: ...".
    std::string message = error.what();
    const std::string file = (dir / "split.json").string();
    if (message.rfind(file + ": ", 0) == 0) return message.substr(file.size() + 2);
    if (message.rfind(file + ":", 0) == 0) return message.substr(file.size() + 1);
    return message;
  }
  return "(no error)";
}

TEST(KarpathySplit, MapsEveryFieldCocoStyle) {
  TempDir dir;
  const auto split_file = write_coco_karpathy_fixture(dir.path());
  const CaptionCorpus corpus = read_karpathy_split(split_file, dir.path());
  EXPECT_EQ(corpus.name, "coco");
  EXPECT_EQ(corpus.source, split_file);
  ASSERT_EQ(corpus.images.size(), 4u);

  const ImageRecord& first = corpus.images[0];
  EXPECT_EQ(first.image_id, "9");  // cocoid, not imgid
  EXPECT_EQ(first.path, dir / "train2014" / "COCO_train2014_000000000009.jpg");
  EXPECT_EQ(first.split, "train");
  ASSERT_EQ(first.captions.size(), 2u);
  EXPECT_EQ(first.captions[0].raw, "A dog on grass.");
  EXPECT_EQ(first.captions[0].words, (Words{"a", "dog", "on", "grass"}));
  EXPECT_EQ(first.captions[1].words, (Words{"dog", "running"}));

  const ImageRecord& restval = corpus.images[1];
  EXPECT_EQ(restval.image_id, "42");
  EXPECT_EQ(restval.split, "restval");
  ASSERT_EQ(restval.captions.size(), 6u);  // more than 5 references are all kept
  EXPECT_EQ(restval.captions[5].words, (Words{"six", "captions"}));

  // Only raw text: tokenized like the Karpathy tokens.
  EXPECT_EQ(corpus.images[2].captions[0].words, (Words{"a", "mans", "tshirt", "red"}));
  EXPECT_EQ(corpus.images[3].split, "test");
}

TEST(KarpathySplit, FlickrStyleUsesImgidAndNoFilepath) {
  TempDir dir;
  write_file(dir / "dataset_flickr8k.json", R"({"images": [
    {"sentids": [0], "imgid": 7, "sentences": [{"tokens": ["a", "dog"], "raw": "A dog.", "imgid": 7, "sentid": 0}],
     "split": "val", "filename": "1000268201_693b08cb0e.jpg"},
    {"sentences": [{"tokens": ["a", "cat"]}], "split": "train", "filename": "no_id.jpg"}],
    "dataset": "flickr8k"})");
  const CaptionCorpus corpus = read_karpathy_split(dir / "dataset_flickr8k.json", dir / "Flicker8k_Dataset");
  EXPECT_EQ(corpus.name, "flickr8k");
  ASSERT_EQ(corpus.images.size(), 2u);
  EXPECT_EQ(corpus.images[0].image_id, "7");
  EXPECT_EQ(corpus.images[0].path, dir / "Flicker8k_Dataset" / "1000268201_693b08cb0e.jpg");
  EXPECT_EQ(corpus.images[1].image_id, "no_id.jpg");  // neither cocoid nor imgid: the file name
  EXPECT_EQ(corpus.images[1].captions[0].raw, "");
}

TEST(KarpathySplit, SelectSplitsJoinsRestvalAndRejectsEmptySplits) {
  TempDir dir;
  const CaptionCorpus corpus = read_karpathy_split(write_coco_karpathy_fixture(dir.path()), dir.path());
  const auto train = select_splits(corpus, {"train", "restval"});
  ASSERT_EQ(train.size(), 2u);
  EXPECT_EQ(train[0].image_id, "9");
  EXPECT_EQ(train[1].image_id, "42");
  EXPECT_EQ(select_splits(corpus, {"train"}).size(), 1u);
  try {
    select_splits(corpus, {"dev"});
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(
        std::string(error.what()), (dir / "dataset_coco.json").string() +
                                       " has no images in split dev; splits present: restval (1), test (1), "
                                       "train (1), val (1)");
  }
}

TEST(KarpathySplit, MalformedJsonNamesFileAndPosition) {
  TempDir dir;
  EXPECT_EQ(
      karpathy_error(dir, "{\"images\": [\n  {\"filename\": \"a.jpg\",}\n]}"),
      "2:24: expected a string key, got '}'");
  EXPECT_EQ(karpathy_error(dir, ""), "1:1: expected a JSON value, got the end of the input");
  EXPECT_THROW(read_karpathy_split(dir / "missing.json", dir.path()), std::runtime_error);
}

TEST(KarpathySplit, MissingOrMistypedFieldsNameTheEntry) {
  TempDir dir;
  EXPECT_EQ(karpathy_error(dir, R"({"dataset": "x"})"), "top level: missing key \"images\"");
  EXPECT_EQ(karpathy_error(dir, R"([])"), "top level: expected an object, got an array");
  EXPECT_EQ(
      karpathy_error(dir, R"({"images": [{"split": "train", "sentences": []}]})"),
      "images[0]: missing key \"filename\"");
  EXPECT_EQ(
      karpathy_error(dir, R"({"images": [{"filename": "a.jpg", "sentences": []}]})"),
      "images[0]: missing key \"split\"");
  EXPECT_EQ(
      karpathy_error(dir, R"({"images": [{"filename": "a.jpg", "split": "train"}]})"),
      "images[0]: missing key \"sentences\"");
  EXPECT_EQ(
      karpathy_error(
          dir, R"({"images": [{"filename": "a.jpg", "split": "train", "sentences": [{"sentid": 1}]}]})"),
      "images[0]: sentences[0]: missing key \"tokens\" (or \"raw\")");
  EXPECT_EQ(
      karpathy_error(
          dir,
          R"({"images": [{"filename": "a.jpg", "split": "train", "sentences": [{"tokens": "a dog"}]}]})"),
      "images[0]: sentences[0]: expected an array, got a string");
  // A token is one word: empty tokens and tokens with spaces would corrupt vocab.json and scoring.
  EXPECT_EQ(
      karpathy_error(
          dir,
          R"({"images": [{"filename": "a.jpg", "split": "train", "sentences": [{"tokens": ["a", "big dog"]}]}]})"),
      "images[0]: sentences[0]: tokens[1] 'big dog' holds whitespace: a token is one word");
  EXPECT_EQ(
      karpathy_error(
          dir,
          R"({"images": [{"filename": "a.jpg", "split": "train", "sentences": [{"tokens": ["a", "", "dog"]}]}]})"),
      "images[0]: sentences[0]: tokens[1] is empty: a token is one word");
  EXPECT_EQ(
      karpathy_error(
          dir,
          R"({"images": [{"filename": "a.jpg", "split": "train", "sentences": [{"tokens": ["a", "<unk>"]}]}]})"),
      "images[0]: sentences[0]: tokens[1] '<unk>' is spelled like one of the vocabulary's own tokens (<pad> "
      "<start> <end> <unk>), which no caption may hold");
  EXPECT_EQ(
      karpathy_error(dir, R"({"images": [{"filename": 5, "split": "train", "sentences": []}]})"),
      "images[0]: expected a string, got an integer");
  EXPECT_EQ(
      karpathy_error(dir, R"({"images": [{"filename": "", "split": "train", "sentences": []}]})"),
      "images[0]: empty \"filename\"");
}

TEST(KarpathySplit, ImageListedTwiceIsAnError) {
  TempDir dir;
  const std::string sentence = R"("sentences": [{"tokens": ["x"]}])";
  EXPECT_EQ(
      karpathy_error(
          dir, R"({"images": [{"filename": "a.jpg", "split": "train", "imgid": 1, )" + sentence +
                   R"(}, {"filename": "b.jpg", "split": "val", "imgid": 1, )" + sentence + "}]}"),
      "images[1]: image id 1 is listed twice (also images[0])");
  EXPECT_EQ(
      karpathy_error(
          dir, R"({"images": [{"filename": "a.jpg", "split": "train", "imgid": 1, )" + sentence +
                   R"(}, {"filename": "a.jpg", "split": "val", "imgid": 2, )" + sentence + "}]}"),
      "images[1]: image " + (dir / "a.jpg").string() + " is listed twice (also images[0])");
}

TEST(KarpathySplit, EmptyCaptionsAndCaptionlessImagesAreLeftOutNotFatal) {
  TempDir dir;
  write_file(dir / "split.json", R"({"images": [
    {"filename": "a.jpg", "split": "train", "imgid": 0, "sentences": [{"tokens": []}, {"tokens": ["ok"]}, {"raw": " .. "}]},
    {"filename": "b.jpg", "split": "train", "imgid": 1, "sentences": [{"raw": "?!"}]},
    {"filename": "c.jpg", "split": "train", "imgid": 2, "sentences": []}]})");
  const CaptionCorpus corpus = read_karpathy_split(dir / "split.json", dir.path());
  ASSERT_EQ(corpus.images.size(), 1u);  // b and c have no usable caption left
  ASSERT_EQ(corpus.images[0].captions.size(), 1u);
  EXPECT_EQ(corpus.images[0].captions[0].words, Words{"ok"});
  // coco-caption scores against every reference: the wordless ones stay references.
  EXPECT_EQ(scored_references(corpus.images[0]), (Words{"ok", "", " .. "}));
}

// A caption is scored by its raw text (coco-caption's tokenizer makes "man 's" of "man's"),
// by its tokens joined where the file has no raw text.
TEST(KarpathySplit, ReferencesAreScoredByTheirRawText) {
  TempDir dir;
  write_file(dir / "split.json", R"({"images": [
    {"filename": "a.jpg", "split": "test", "imgid": 0, "sentences": [
      {"tokens": ["a", "mans", "tshirt"], "raw": "A man's T-shirt."}, {"tokens": ["a", "shirt"]}]}]})");
  const CaptionCorpus corpus = read_karpathy_split(dir / "split.json", dir.path());
  ASSERT_EQ(corpus.images.size(), 1u);
  EXPECT_EQ(scored_references(corpus.images[0]), (Words{"A man's T-shirt.", "a shirt"}));
}

TEST(CocoCaptions, MapsImagesAnnotationsAndTheSplitList) {
  TempDir dir;
  write_file(dir / "annotations" / "captions_train2014.json", R"({"info": {}, "images": [
      {"id": 9, "file_name": "COCO_train2014_000000000009.jpg", "width": 640, "height": 480},
      {"id": 25, "file_name": "COCO_train2014_000000000025.jpg"},
      {"id": 30, "file_name": "COCO_train2014_000000000030.jpg"}],
    "annotations": [
      {"image_id": 9, "id": 1, "caption": "A dog on grass."},
      {"image_id": 25, "id": 2, "caption": "A giraffe"},
      {"image_id": 9, "id": 3, "caption": "Dog running!"},
      {"image_id": 30, "id": 4, "caption": "unlisted"}]})");
  write_file(dir / "annotations" / "captions_val2014.json", R"({"images": [
      {"id": 42, "file_name": "COCO_val2014_000000000042.jpg"}],
    "annotations": [{"image_id": 42, "id": 5, "caption": "A  RED  bus."}]})");
  write_file(
      dir / "splits.txt",
      "# Karpathy split\n9 train\nCOCO_val2014_000000000042.jpg test\n  25   restval  \n\n");
  const CaptionCorpus corpus = read_coco_captions(
      {dir / "annotations" / "captions_train2014.json", dir / "annotations" / "captions_val2014.json"},
      {dir / "train2014", dir / "val2014"}, dir / "splits.txt");
  ASSERT_EQ(corpus.images.size(), 3u);  // image 30 is in no split
  EXPECT_EQ(corpus.images[0].image_id, "9");
  EXPECT_EQ(corpus.images[0].path, dir / "train2014" / "COCO_train2014_000000000009.jpg");
  EXPECT_EQ(corpus.images[0].split, "train");
  ASSERT_EQ(corpus.images[0].captions.size(), 2u);
  EXPECT_EQ(corpus.images[0].captions[1].raw, "Dog running!");
  EXPECT_EQ(corpus.images[0].captions[1].words, (Words{"dog", "running"}));
  EXPECT_EQ(corpus.images[1].image_id, "25");
  EXPECT_EQ(corpus.images[1].split, "restval");
  EXPECT_EQ(corpus.images[2].image_id, "42");
  EXPECT_EQ(corpus.images[2].path, dir / "val2014" / "COCO_val2014_000000000042.jpg");
  EXPECT_EQ(corpus.images[2].split, "test");
  EXPECT_EQ(corpus.images[2].captions[0].words, (Words{"a", "red", "bus"}));
  EXPECT_EQ(scored_references(corpus.images[2]), Words{"A  RED  bus."});
}

TEST(CocoCaptions, BadInputNamesFileAndEntry) {
  TempDir dir;
  write_file(dir / "splits.txt", "9 train\n");
  auto error_of = [&](const std::string& json, const std::string& splits = "9 train\n") {
    write_file(dir / "c.json", json);
    write_file(dir / "splits.txt", splits);
    try {
      read_coco_captions({dir / "c.json"}, {dir.path()}, dir / "splits.txt");
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  const std::string file = (dir / "c.json").string();
  EXPECT_EQ(
      error_of(
          R"({"images": [{"id": 9, "file_name": "a.jpg"}], "annotations": [{"image_id": 8, "caption": "x"}]})"),
      file + ": annotations[0]: image_id 8 is not in \"images\"");
  EXPECT_EQ(
      error_of(R"({"images": [{"id": 9, "file_name": "a.jpg"}], "annotations": [{"image_id": 9}]})"),
      file + ": annotations[0]: missing key \"caption\"");
  EXPECT_EQ(
      error_of(R"({"images": [{"id": 9}], "annotations": []})"),
      file + ": images[0]: missing key \"file_name\"");
  EXPECT_EQ(
      error_of(
          R"({"images": [{"id": 9, "file_name": "a.jpg"}, {"id": 9, "file_name": "b.jpg"}], "annotations": []})"),
      file + ": images[1]: image id 9 is listed twice (also images[0])");
  EXPECT_EQ(error_of(R"({"images": []})"), file + ": top level: missing key \"annotations\"");
  const std::string valid =
      R"({"images": [{"id": 9, "file_name": "a.jpg"}], "annotations": [{"image_id": 9, "caption": "x"}]})";
  EXPECT_EQ(
      error_of(valid, "9 train extra\n"),
      (dir / "splits.txt").string() + ":1: expected '<image id or file name> <split>', got '9 train extra'");
  EXPECT_EQ(
      error_of(valid, "9 train\n9 val\n"), (dir / "splits.txt").string() + ":2: image 9 is listed twice");
  // An image in two captions files (2014 val and 2017 train overlap) would be trained and scored
  // twice.
  write_file(dir / "c.json", valid);
  write_file(dir / "c2.json", valid);
  write_file(dir / "splits.txt", "9 train\n");
  try {
    read_coco_captions({dir / "c.json", dir / "c2.json"}, {dir.path(), dir / "other"}, dir / "splits.txt");
    ADD_FAILURE() << "an image in two captions files was read";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(
        std::string(error.what()), (dir / "c2.json").string() +
                                       ": images[0]: image id 9 is listed twice (also " + file +
                                       ": images[0])");
  }
  EXPECT_THROW(read_coco_captions({dir / "c.json"}, {dir.path()}, dir / "nope.txt"), std::runtime_error);
  EXPECT_THROW(read_coco_captions({dir / "c.json"}, {}, dir / "splits.txt"), std::invalid_argument);
}

}  // namespace
}  // namespace saccade::testing
