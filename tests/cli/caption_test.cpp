// `saccade caption` and `saccade visualize` end to end on a smoke run trained once for the suite:
// captions on stdout, bad files and folder entries reported per file, overlay PNGs of the
// expected size and never over an input, --json, overrides, and the one-line errors for a
// missing or mismatched checkpoint.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>

#include "io/temporaries.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

// --- A minimal PNG writer (stored deflate blocks) and reader of the IHDR size, so this test
// needs no image library.

uint32_t crc32(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;
  for (const unsigned char byte : bytes) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string big_endian(uint32_t value) {
  return {
      static_cast<char>(value >> 24), static_cast<char>(value >> 16), static_cast<char>(value >> 8),
      static_cast<char>(value)};
}

std::string png_chunk(const std::string& type, const std::string& data) {
  return big_endian(static_cast<uint32_t>(data.size())) + type + data + big_endian(crc32(type + data));
}

// An RGB PNG of width x height whose pixel (x, y) is (x * 7, y * 5, (x + y) * 3) mod 256.
void write_png(const std::filesystem::path& path, uint32_t width, uint32_t height) {
  std::string raw;
  for (uint32_t y = 0; y < height; ++y) {
    raw += '\0';  // filter: none
    for (uint32_t x = 0; x < width; ++x) {
      raw += static_cast<char>(x * 7 % 256);
      raw += static_cast<char>(y * 5 % 256);
      raw += static_cast<char>((x + y) * 3 % 256);
    }
  }
  std::string zlib = "\x78\x01";
  for (size_t start = 0; start < raw.size(); start += 65535) {
    const size_t length = std::min<size_t>(65535, raw.size() - start);
    zlib += static_cast<char>(start + length == raw.size() ? 1 : 0);
    zlib += static_cast<char>(length & 0xff);
    zlib += static_cast<char>(length >> 8);
    zlib += static_cast<char>(~length & 0xff);
    zlib += static_cast<char>((~length >> 8) & 0xff);
    zlib += raw.substr(start, length);
  }
  uint32_t a = 1, b = 0;
  for (const unsigned char byte : raw) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  zlib += big_endian((b << 16) | a);
  const std::string header = big_endian(width) + big_endian(height) + std::string("\x08\x02\x00\x00\x00", 5);
  write_file(
      path, std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", header) + png_chunk("IDAT", zlib) +
                png_chunk("IEND", ""));
}

// {width, height} from a PNG's IHDR.
std::array<uint32_t, 2> png_size(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  if (bytes.size() < 24 || bytes.compare(1, 3, "PNG") != 0)
    throw std::runtime_error("not a PNG: " + path.string());
  auto read = [&](size_t at) {
    uint32_t value = 0;
    for (size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
    return value;
  };
  return {read(16), read(20)};
}

int word_count(const std::string& caption) {
  std::istringstream words(caption);
  int count = 0;
  for (std::string word; words >> word;) ++count;
  return count;
}

// The overlay grid size for a caption of `words` words with the default viz options (panel 224,
// label 28, 6 columns, gap 4) and the caption as one note line.
// The size of a caption figure for `words` words whose notes take `note_lines` lines.
std::array<uint32_t, 2> expected_grid(int words, uint32_t note_lines) {
  const uint32_t panels = static_cast<uint32_t>(words) + 1;
  const uint32_t columns = std::min<uint32_t>(6, panels);
  const uint32_t rows = (panels + columns - 1) / columns;
  return {columns * 224 + (columns + 1) * 4, rows * (224 + 28) + (rows + 1) * 4 + note_lines * 28 + 4};
}

// A caption figure for `words` words: the panels laid out exactly, and below them the caption
// and the attention legend, which wraps at the figure's width into one to three lines.
void expect_caption_figure(const std::filesystem::path& png, int words) {
  const auto size = png_size(png);
  const auto caption_only = expected_grid(words, 1);
  EXPECT_EQ(size[0], caption_only[0]) << png;
  EXPECT_GE(size[1], expected_grid(words, 2)[1]) << png << ": no legend under the caption";
  EXPECT_LE(size[1], expected_grid(words, 4)[1]) << png;
  EXPECT_EQ((size[1] - caption_only[1]) % 28, 0u) << png << ": notes are whole lines";
}

// "file<TAB>caption" lines of stdout.
std::vector<std::pair<std::string, std::string>> caption_lines(const std::string& out) {
  std::vector<std::pair<std::string, std::string>> lines;
  std::istringstream text(out);
  for (std::string line; std::getline(text, line);) {
    const auto tab = line.find('\t');
    if (tab != std::string::npos) lines.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return lines;
}

// Whether `text` ends with one line that starts with `prefix` (an error in one line, after any log).
bool is_last_line(const std::string& text, const std::string& prefix) {
  const auto at = text.rfind(prefix);
  return at != std::string::npos && (at == 0 || text[at - 1] == '\n') &&
         text.find('\n', at) == text.size() - 1;
}

class CaptionTest : public ::testing::Test {
 protected:
  // One smoke run for the whole suite (training is the slow part).
  static void SetUpTestSuite() {
    work_ = std::make_unique<TempDir>();
    const auto result =
        run_saccade({"train", "-cp", (source_dir() / "configs").string(), "experiment=smoke"}, work_->path());
    ASSERT_EQ(result.exit_code, 0) << result.err;
    for (const auto& entry : std::filesystem::directory_iterator(work_->path() / "experiments/smoke"))
      run_ = entry.path();
  }
  static void TearDownTestSuite() { work_.reset(); }

  static std::unique_ptr<TempDir> work_;
  static std::filesystem::path run_;
};

std::unique_ptr<TempDir> CaptionTest::work_;
std::filesystem::path CaptionTest::run_;

TEST_F(CaptionTest, CaptionsImagesReportsBadFilesAndWritesOverlays) {
  TempDir inputs;
  write_png(inputs / "wide.png", 70, 40);
  write_png(inputs / "square.png", 64, 64);
  write_file(inputs / "notes.txt", "not an image\n");
  const auto out = inputs / "overlays";
  const auto result = run_saccade(
      {"caption", (inputs / "wide.png").string(), (inputs / "notes.txt").string(),
       (inputs / "square.png").string(), "--run", run_.string(), "--out", out.string()},
      work_->path());
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("notes.txt"), std::string::npos) << result.err;
  const auto lines = caption_lines(result.out);
  ASSERT_EQ(lines.size(), 2u) << result.out;
  EXPECT_EQ(lines[0].first, (inputs / "wide.png").string());
  EXPECT_EQ(lines[1].first, (inputs / "square.png").string());
  const std::pair<std::string, std::string> overlays[2] = {
      {"wide.png", lines[0].second}, {"square.png", lines[1].second}};
  for (const auto& [file, caption] : overlays) {
    EXPECT_FALSE(caption.empty()) << file;
    ASSERT_TRUE(std::filesystem::exists(out / file)) << file;
    expect_caption_figure(out / file, word_count(caption));
  }
  EXPECT_FALSE(std::filesystem::exists(out / "notes.png"));

  // A header claiming more pixels than any image may have is one line of saccade's, without
  // OpenCV's own log lines about it.
  write_file(inputs / "huge.pgm", "P5\n30000 30000\n255\n" + std::string(64, '\x7f'));
  const auto huge = run_saccade(
      {"caption", (inputs / "huge.pgm").string(), "--run", run_.string(), "--out", out.string()},
      work_->path());
  EXPECT_EQ(huge.exit_code, 1) << huge.err;
  EXPECT_EQ(huge.err.find("OpenCV"), std::string::npos) << huge.err;
  EXPECT_NE(
      huge.err.find("huge.pgm: the image is 30000 x 30000 pixels, more than data.max_pixels=100000000\n"),
      std::string::npos)
      << huge.err;
}

TEST_F(CaptionTest, FolderIsExpandedSortedIntoTheRunsCaptionsFolder) {
  TempDir inputs;
  write_png(inputs / "b.png", 48, 48);
  write_png(inputs / "a.png", 32, 80);
  write_file(inputs / "README", "ignored: not an image name\n");
  const auto result = run_saccade({"caption", inputs.path().string(), "--run", run_.string()}, work_->path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = caption_lines(result.out);
  ASSERT_EQ(lines.size(), 2u) << result.out;
  EXPECT_EQ(lines[0].first, (inputs / "a.png").string());
  EXPECT_EQ(lines[1].first, (inputs / "b.png").string());
  EXPECT_TRUE(std::filesystem::exists(run_ / "captions/a.png"));
  EXPECT_TRUE(std::filesystem::exists(run_ / "captions/b.png"));
}

// A second caption into the same folder keeps the first one's overlays unless told to replace
// them: refused in one line before anything is decoded, even when only one name is taken.
TEST_F(CaptionTest, EarlierOverlaysAreReplacedOnlyWhenTold) {
  TempDir inputs;
  write_png(inputs / "a.png", 48, 48);
  const auto out = inputs / "o";
  const auto caption = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"caption",   inputs.path().string(), "--run", run_.string(), "--out",
                                  out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_saccade(args, work_->path());
  };
  ASSERT_EQ(caption({}).exit_code, 0);
  const std::string first = read_file(out / "a.png");
  write_png(inputs / "b.png", 32, 32);
  const auto again = caption({"--beam", "3"});
  EXPECT_EQ(again.exit_code, 2) << again.err;
  EXPECT_TRUE(is_last_line(
      again.err, "saccade: error: --out " + out.string() + " already holds the overlay " +
                     (out / "a.png").string() + "; --replace writes over it, --out DIR writes elsewhere\n"))
      << again.err;
  EXPECT_EQ(again.out, "");
  EXPECT_EQ(read_file(out / "a.png"), first);
  EXPECT_FALSE(std::filesystem::exists(out / "b.png"));

  const auto replaced = caption({"--replace"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(caption_lines(replaced.out).size(), 2u) << replaced.out;
  EXPECT_TRUE(std::filesystem::exists(out / "b.png"));
}

// An --out whose overlays would replace an input, by its own name or through a linked folder,
// is refused in one line before anything is written; the input's folder itself is a fine --out
// when no overlay takes an input's name.
TEST_F(CaptionTest, AnOutThatWouldReplaceAnInputIsRefusedWithNothingWritten) {
  TempDir inputs;
  write_png(inputs / "a.png", 32, 32);
  write_png(inputs / "b.png", 48, 48);
  const std::string a_before = read_file(inputs / "a.png"), b_before = read_file(inputs / "b.png");
  TempDir elsewhere;
  const auto alias = elsewhere / "alias";
  std::filesystem::create_directory_symlink(inputs.path(), alias);
  for (const auto& out : {inputs.path(), alias}) {
    const auto result = run_saccade(
        {"caption", inputs.path().string(), "--run", run_.string(), "--out", out.string()}, work_->path());
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_TRUE(is_last_line(
        result.err, "saccade: error: --out " + out.string() + " would write the overlay " +
                        (out / "a.png").string() + " over the input " + (inputs / "a.png").string() +
                        "; choose another folder\n"))
        << result.err;
    EXPECT_EQ(result.out, "");
  }
  EXPECT_EQ(read_file(inputs / "a.png"), a_before);
  EXPECT_EQ(read_file(inputs / "b.png"), b_before);
  EXPECT_EQ(
      std::distance(
          std::filesystem::directory_iterator(inputs.path()), std::filesystem::directory_iterator()),
      2);

  // c.jpg's overlay is c.png beside it: no input is replaced.
  write_png(inputs / "c.jpg", 40, 40);
  const std::string c_before = read_file(inputs / "c.jpg");
  const auto beside = run_saccade(
      {"caption", (inputs / "c.jpg").string(), "--run", run_.string(), "--out", inputs.path().string()},
      work_->path());
  ASSERT_EQ(beside.exit_code, 0) << beside.err;
  EXPECT_TRUE(std::filesystem::exists(inputs / "c.png"));
  EXPECT_EQ(read_file(inputs / "c.jpg"), c_before);
}

// A folder entry that cannot be looked at (a link to itself) and a folder that cannot be listed
// are named and skipped as an unreadable image is; the other images are captioned. A folder
// with no image at all is one line, and nothing is written.
TEST_F(CaptionTest, BadFolderEntriesAreNamedAndSkippedAndAnEmptyFolderIsOneLine) {
  TempDir inputs;
  write_png(inputs / "a.png", 32, 32);
  std::filesystem::create_symlink("loop", inputs / "loop");
  TempDir elsewhere;
  const auto locked = elsewhere / "locked";
  write_png(locked / "c.png", 16, 16);
  std::filesystem::permissions(locked, std::filesystem::perms::none);
  std::error_code listing;
  std::filesystem::directory_iterator probe(locked, listing);  // root lists it all the same
  const auto out = elsewhere / "o";
  const auto result = run_saccade(
      {"caption", inputs.path().string(), locked.string(), "--run", run_.string(), "--out", out.string()},
      work_->path());
  std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(
      result.err.find(
          "saccade: " + (inputs / "loop").string() +
          ": cannot tell what it is: Too many levels of symbolic links\n"),
      std::string::npos)
      << result.err;
  const auto lines = caption_lines(result.out);
  ASSERT_EQ(lines.size(), listing ? 1u : 2u) << result.out;
  EXPECT_EQ(lines[0].first, (inputs / "a.png").string());
  EXPECT_TRUE(std::filesystem::exists(out / "a.png"));
  if (listing) {
    EXPECT_NE(
        result.err.find("saccade: " + locked.string() + ": cannot list the folder: Permission denied\n"),
        std::string::npos)
        << result.err;
  }

  TempDir empty;
  const auto nothing = run_saccade(
      {"caption", empty.path().string(), "--run", run_.string(), "--out", (empty / "o").string()},
      work_->path());
  EXPECT_EQ(nothing.exit_code, 2) << nothing.err;
  EXPECT_TRUE(is_last_line(
      nothing.err, "saccade: error: Nothing to caption: " + empty.path().string() +
                       ": the folder holds no image files (by extension)\n"))
      << nothing.err;
  EXPECT_FALSE(std::filesystem::exists(empty / "o"));
}

// key=value arguments are overrides, as eval and visualize take them, not images; with -m each
// job's overlays go into their own numbered folder.
TEST_F(CaptionTest, OverridesApplyAsForEvalAndAreNotTakenForImages) {
  TempDir inputs;
  write_png(inputs / "x.png", 64, 64);
  const auto out = inputs / "o";
  const auto result = run_saccade(
      {"caption", (inputs / "x.png").string(), "--run", run_.string(), "--out", out.string(), "--json",
       "decode.max_length=1", "runtime.threads=1"},
      work_->path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const YAML::Node doc = YAML::Load(result.out);
  ASSERT_TRUE(doc.IsSequence()) << result.out;
  ASSERT_EQ(doc.size(), 1u) << result.out;
  EXPECT_LE(doc[0]["words"].size(), 1u) << result.out;

  const auto typo = run_saccade(
      {"caption", (inputs / "x.png").string(), "--run", run_.string(), "decode.max_lenght=1"}, work_->path());
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  EXPECT_NE(typo.err.find("saccade: error: Could not override 'decode.max_lenght'"), std::string::npos)
      << typo.err;

  const auto sweep = run_saccade(
      {"caption", "-m", (inputs / "x.png").string(), "--run", run_.string(), "--out", out.string(),
       "decode.max_length=1,2"},
      work_->path());
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_EQ(caption_lines(sweep.out).size(), 2u) << sweep.out;
  EXPECT_TRUE(std::filesystem::exists(out / "0/x.png"));
  EXPECT_TRUE(std::filesystem::exists(out / "1/x.png"));
}

TEST_F(CaptionTest, JsonHasCaptionLogProbAndOneAttentionGridPerWord) {
  TempDir inputs;
  write_png(inputs / "x.png", 64, 64);
  const auto result = run_saccade(
      {"caption", (inputs / "x.png").string(), "--run", run_.string(), "--out", (inputs / "o").string(),
       "--json"},
      work_->path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const YAML::Node doc = YAML::Load(result.out);  // JSON is YAML
  ASSERT_TRUE(doc.IsSequence()) << result.out;
  ASSERT_EQ(doc.size(), 1u);
  const YAML::Node item = doc[0];
  EXPECT_EQ(item["file"].as<std::string>(), (inputs / "x.png").string());
  const std::string caption = item["caption"].as<std::string>();
  EXPECT_EQ(static_cast<int>(item["words"].size()), word_count(caption));
  EXPECT_LE(item["log_prob"].as<double>(), 0.0);
  const int64_t locations = item["grid"][0].as<int64_t>() * item["grid"][1].as<int64_t>();
  ASSERT_EQ(item["attention"].size(), item["words"].size());
  for (const auto& row : item["attention"]) {
    ASSERT_EQ(static_cast<int64_t>(row.size()), locations);
    double sum = 0;
    for (const auto& weight : row) sum += weight.as<double>();
    EXPECT_NEAR(sum, 1.0, 1e-4);
  }
  EXPECT_TRUE(std::filesystem::exists(item["overlay"].as<std::string>()));
  EXPECT_FALSE(item["n_best"]);
}

TEST_F(CaptionTest, JsonListsTheNBestCaptionsLedByTheCaption) {
  TempDir inputs;
  write_png(inputs / "x.png", 64, 64);
  const auto result = run_saccade(
      {"caption", (inputs / "x.png").string(), "--run", run_.string(), "--out", (inputs / "o").string(),
       "--json", "--beam", "3", "--n-best", "2"},
      work_->path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const YAML::Node item = YAML::Load(result.out)[0];
  const YAML::Node n_best = item["n_best"];
  ASSERT_TRUE(n_best.IsSequence()) << result.out;
  ASSERT_EQ(n_best.size(), 2u);
  EXPECT_EQ(n_best[0]["caption"].as<std::string>(), item["caption"].as<std::string>());
  EXPECT_EQ(n_best[0]["log_prob"].as<double>(), item["log_prob"].as<double>());
  EXPECT_NE(n_best[1]["caption"].as<std::string>(), n_best[0]["caption"].as<std::string>());
}

// Visualize writes beside the overlays training drew (which the run's report shows), never over
// them, and over its own earlier ones only when told to.
TEST_F(CaptionTest, VisualizeWritesItsOwnFolderAndReplacesOnlyWhenTold) {
  std::map<std::string, std::string> training_samples;
  for (const auto& entry : std::filesystem::directory_iterator(run_ / "samples")) {
    training_samples[entry.path().filename().string()] = read_file(entry.path());
  }
  ASSERT_FALSE(training_samples.empty());
  remove_tree(run_ / "visualize");
  const std::string configs = (source_dir() / "configs").string();
  const auto visualize = [&](const std::string& count, std::vector<std::string> extra) {
    std::vector<std::string> args{"visualize", "-cp", configs, "--run", run_.string(),
                                  "--split",   "val", "--n",   count};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_saccade(args, work_->path());
  };
  const auto result = visualize("3", {});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  int pngs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(run_ / "visualize" / "val")) {
    if (entry.path().extension() == ".png") ++pngs;
  }
  EXPECT_EQ(pngs, 3);
  EXPECT_EQ(caption_lines(result.out).size(), 3u) << result.out;
  for (const auto& [name, bytes] : training_samples)
    EXPECT_EQ(read_file(run_ / "samples" / name), bytes) << name;

  const std::string index = (run_ / "visualize" / "val" / "samples.json").string();
  const std::string written = read_file(index);
  const auto again = visualize("2", {});
  EXPECT_EQ(again.exit_code, 2) << again.out;
  EXPECT_TRUE(is_last_line(
      again.err, "saccade: error: " + index +
                     " already indexes overlays; --replace writes over them, --out DIR writes elsewhere"))
      << again.err;
  EXPECT_EQ(read_file(index), written);
  const auto into_samples = visualize("3", {"--out", (run_ / "samples").string()});
  EXPECT_EQ(into_samples.exit_code, 2) << into_samples.out;
  for (const auto& [name, bytes] : training_samples)
    EXPECT_EQ(read_file(run_ / "samples" / name), bytes) << name;

  const auto replaced = visualize("2", {"--replace"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(YAML::LoadFile(index).size(), 2u);
}

// Under data.on_bad_image=skip an unreadable image gives its place to the next one; under fail
// it ends the command in one line naming it.
TEST_F(CaptionTest, VisualizeSkipsABadImageWhenToldTo) {
  const auto world = work_->path() / "damaged_world";
  std::filesystem::copy(
      work_->path() / "datasets/shapes_smoke", world, std::filesystem::copy_options::recursive);
  std::filesystem::path first_val;
  for (const auto& image : YAML::LoadFile((world / "dataset_shapes.json").string())["images"]) {
    if (image["split"].as<std::string>() != "val") continue;
    first_val = world / image["filepath"].as<std::string>() / image["filename"].as<std::string>();
    break;
  }
  ASSERT_FALSE(first_val.empty());
  write_file(first_val, "\x89PNG\r\n\x1A\n cut off");
  const auto visualize = [&](const std::string& policy) {
    remove_tree(run_ / "visualize");
    return run_saccade(
        {"visualize", "-cp", (source_dir() / "configs").string(), "--run", run_.string(), "--split", "val",
         "--n", "3", "dataset.root=" + world.string(),
         "dataset.split_file=" + (world / "dataset_shapes.json").string(),
         "dataset.images_dir=" + world.string(), "data.cache=false", "data.on_bad_image=" + policy},
        work_->path());
  };
  const auto skipped = visualize("skip");
  ASSERT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_EQ(caption_lines(skipped.out).size(), 3u) << skipped.out;
  EXPECT_NE(skipped.err.find(first_val.string()), std::string::npos) << skipped.err;
  EXPECT_NE(skipped.err.find("skipped (data.on_bad_image=skip)"), std::string::npos) << skipped.err;
  const auto failed = visualize("fail");
  EXPECT_EQ(failed.exit_code, 1) << failed.out;
  EXPECT_TRUE(is_last_line(failed.err, "saccade: error: Could not decode image " + first_val.string()))
      << failed.err;
}

TEST_F(CaptionTest, MissingCheckpointIsOneLine) {
  TempDir inputs;
  write_png(inputs / "x.png", 16, 16);
  const auto result = run_saccade(
      {"caption", (inputs / "x.png").string(), "--run", (inputs / "no_run").string()}, work_->path());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(is_last_line(result.err, "saccade: error: No checkpoint at")) << result.err;
}

TEST_F(CaptionTest, ConfigThatDoesNotFitTheWeightsIsOneLine) {
  TempDir copy;
  std::filesystem::copy(run_ / "checkpoints", copy / "checkpoints", std::filesystem::copy_options::recursive);
  const auto config_file = copy / "checkpoints/best/config.yaml";
  std::string config = read_file(config_file);
  const auto at = config.find("hidden_dim: 32");
  ASSERT_NE(at, std::string::npos) << config;
  config.replace(at, 14, "hidden_dim: 48");
  write_file(config_file, config);
  TempDir inputs;
  write_png(inputs / "x.png", 16, 16);
  const auto result =
      run_saccade({"caption", (inputs / "x.png").string(), "--run", copy.path().string()}, work_->path());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(is_last_line(result.err, "saccade: error: The checkpoint ")) << result.err;
  EXPECT_NE(result.err.find("does not match its config.yaml and vocab.json"), std::string::npos)
      << result.err;
  // Truncated weights are a file that cannot be read, not a mismatch.
  std::filesystem::copy(
      run_ / "checkpoints/best/config.yaml", config_file, std::filesystem::copy_options::overwrite_existing);
  const auto weights = copy / "checkpoints/best/model.safetensors";
  const std::string bytes = read_file(weights);
  write_file(weights, bytes.substr(0, bytes.size() / 2));
  const auto truncated =
      run_saccade({"caption", (inputs / "x.png").string(), "--run", copy.path().string()}, work_->path());
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_NE(truncated.err.find(" cannot be read: "), std::string::npos) << truncated.err;
  EXPECT_EQ(truncated.err.find("does not match"), std::string::npos) << truncated.err;
}

TEST_F(CaptionTest, BeamSearchCaptionsWithAttentionAndRejectsZeroBeams) {
  TempDir inputs;
  write_png(inputs / "x.png", 64, 64);
  const auto out = inputs / "o";
  const auto result = run_saccade(
      {"caption", (inputs / "x.png").string(), "--run", run_.string(), "--out", out.string(), "--beam", "3"},
      work_->path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = caption_lines(result.out);
  ASSERT_EQ(lines.size(), 1u) << result.out;
  expect_caption_figure(out / "x.png", word_count(lines[0].second));

  const auto zero = run_saccade({"caption", "x.png", "--run", run_.string(), "--beam", "0"}, work_->path());
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--beam must be a positive integer, got '0'"), std::string::npos) << zero.err;
}

// image id -> (caption, log-probability) from a samples folder's index.
std::map<std::string, std::pair<std::string, double>> sample_index(const std::filesystem::path& samples) {
  std::map<std::string, std::pair<std::string, double>> index;
  for (const auto& sample : YAML::LoadFile((samples / "samples.json").string())) {
    index[sample["image_id"].as<std::string>()] = {
        sample["caption"].as<std::string>(), sample["log_prob"].as<double>()};
  }
  return index;
}

// A hard-attention smoke run (decoder=hard) visualized with either read of the context.
TEST(HardRun, VisualizeReadsTheContextThatDecodeHardReadNames) {
  TempDir work;
  const auto run = work / "hard";
  const auto trained = run_saccade(
      {"train", "-cp", (source_dir() / "configs").string(), "experiment=smoke", "decoder=hard",
       "run.dir=" + run.string()},
      work.path());
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  EXPECT_EQ(
      YAML::LoadFile((run / "config.yaml").string())["decoder"]["attention"]["mode"].as<std::string>(),
      "hard");

  const auto visualize = [&](const std::string& read) {
    const auto result = run_saccade(
        {"visualize", "--run", run.string(), "--n", "8", "--out", (work / read).string(),
         "decode.hard_read=" + read},
        work.path());
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return sample_index(work / read);
  };
  const auto chosen_cell = visualize("argmax");
  const auto expected_context = visualize("expectation");
  ASSERT_EQ(expected_context.size(), 8u);
  // The two reads give other contexts, so other probabilities for the same images.
  int differing = 0;
  for (const auto& [id, sample] : expected_context) differing += sample.second != chosen_cell.at(id).second;
  EXPECT_GT(differing, 0);

  // And `saccade eval` with the same read (greedy) writes the same captions.
  const auto evaluated = run_saccade(
      {"eval", "--run", run.string(), "decode.beam_size=1", "decode.hard_read=expectation"}, work.path());
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.err;
  // Beside the run's own results, named by the overrides.
  const YAML::Node results =
      YAML::LoadFile((run / "results/test-decode.beam_size=1,decode.hard_read=expectation.json").string());
  ASSERT_EQ(results.size(), 8u);
  for (const auto& result : results) {
    const std::string id = result["image_id"].as<std::string>();
    ASSERT_EQ(expected_context.count(id), 1u) << id;
    EXPECT_EQ(expected_context.at(id).first, result["caption"].as<std::string>()) << id;
  }
}

}  // namespace
}  // namespace saccade::testing
