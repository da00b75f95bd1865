// `saccade eval` end to end: train the smoke experiment once, evaluate it with beam search, check
// the COCO results file, the scores file (numbers in range, shapes metrics present) and the
// printout; a run folder without a checkpoint fails with one line. Evaluations with overrides
// write beside the run's own results, never over them, and never change the run's model.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "eval/shapes_metrics.h"
#include "io/json.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

class EvalTest : public ::testing::Test {
 protected:
  // One smoke training for the whole suite (it takes seconds, but only once). The smoke
  // experiment turns the BLAS speed warning off; eval's own runs do the same.
  static void SetUpTestSuite() {
    work_ = std::make_unique<TempDir>();
    const auto result = run_saccade({"train", "-cp", configs().string(), "experiment=smoke"}, work_->path());
    ASSERT_EQ(result.exit_code, 0) << result.err;
    for (const auto& entry : std::filesystem::directory_iterator(work_->path() / "experiments/smoke"))
      run_ = entry.path();
  }
  static void TearDownTestSuite() { work_.reset(); }

  CommandResult eval(std::vector<std::string> extra) {
    std::vector<std::string> args = {"eval",  "-cp",         configs().string(),
                                     "--run", run_.string(), "runtime.check_blas=false"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_saccade(args, work_->path());
  }

  // The results file an evaluation says it wrote ("Results: <path>").
  static std::filesystem::path results_written(const CommandResult& result) {
    const std::string label = "Results: ";
    const size_t at = result.out.find(label);
    if (at == std::string::npos) {
      ADD_FAILURE() << "no results named in: " << result.out;
      return {};
    }
    const size_t start = at + label.size();
    return result.out.substr(start, result.out.find('\n', start) - start);
  }

  // The scores file written beside `results`: <name>_scores.json.
  static std::filesystem::path scores_beside(const std::filesystem::path& results) {
    return results.parent_path() / (results.stem().string() + "_scores.json");
  }

  static std::unique_ptr<TempDir> work_;
  static std::filesystem::path run_;
};

std::unique_ptr<TempDir> EvalTest::work_;
std::filesystem::path EvalTest::run_;

TEST_F(EvalTest, BeamSearchWritesResultsAndScores) {
  const auto result = eval({"decode.beam_size=2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("beam 2 search"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("BLEU-4"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("pointing game"), std::string::npos) << result.out;

  // COCO results: one entry per test image (8 in the smoke world), numeric ids, text captions.
  ASSERT_EQ(results_written(result), run_ / "results/test-decode.beam_size=2.json");
  const YAML::Node results = YAML::LoadFile(results_written(result).string());
  ASSERT_TRUE(results.IsSequence());
  EXPECT_EQ(results.size(), 8u);
  for (const auto& entry : results) {
    EXPECT_GE(entry["image_id"].as<int64_t>(), 0);
    EXPECT_NO_THROW(entry["caption"].as<std::string>());
  }

  const YAML::Node scores = YAML::LoadFile((run_ / "results/test-decode.beam_size=2_scores.json").string());
  EXPECT_EQ(scores["split"].as<std::string>(), "test-decode.beam_size=2");
  EXPECT_EQ(scores["search"].as<std::string>(), "beam 2");
  EXPECT_EQ(scores["images"].as<int>(), 8);
  for (const char* metric : {"bleu1", "bleu4", "rouge_l"}) {
    const double value = scores["corpus"][metric].as<double>();
    EXPECT_GE(value, 0.0) << metric;
    EXPECT_LE(value, 1.0) << metric;
  }
  EXPECT_GE(scores["corpus"]["cider_d"].as<double>(), 0.0);
  EXPECT_TRUE(scores["corpus"]["meteor"].IsNull());
  EXPECT_EQ(scores["per_image"].size(), 8u);
  // A ratio is null exactly when its count is 0 (n/a, never 0), else in [0, 1].
  for (const auto& [metric, count] :
       {std::pair{"pointing_accuracy", "pointing_words"}, std::pair{"pointing_baseline", "pointing_words"},
        std::pair{"content_accuracy", "object_mentions"}, std::pair{"object_recall", "objects"},
        std::pair{"relation_accuracy", "relations"},
        std::pair{"relation_choice_accuracy", "relation_choices"},
        std::pair{"pointing_color_accuracy", "pointing_color_words"},
        std::pair{"pointing_shape_accuracy", "pointing_shape_words"},
        std::pair{"pointing_size_accuracy", "pointing_size_words"}}) {
    const YAML::Node value = scores["shapes"][metric];
    ASSERT_EQ(value.IsNull(), scores["shapes"][count].as<int>() == 0) << metric;
    if (value.IsNull()) continue;
    EXPECT_GE(value.as<double>(), 0.0) << metric;
    EXPECT_LE(value.as<double>(), 1.0) << metric;
  }
  // Every pointing word is of one kind.
  EXPECT_EQ(
      scores["shapes"]["pointing_color_words"].as<int>() +
          scores["shapes"]["pointing_shape_words"].as<int>() +
          scores["shapes"]["pointing_size_words"].as<int>(),
      scores["shapes"]["pointing_words"].as<int>());
  // The forced choice asks each true relation between two distinguishable test objects once.
  const YAML::Node truth =
      YAML::LoadFile((work_->path() / "datasets/shapes_smoke/shapes_truth.json").string());
  int64_t probes = 0;
  for (const auto& image : truth["images"]) {
    if (image["split"].as<std::string>() != "test") continue;
    std::vector<ShapesObject> objects;
    for (const auto& object : image["objects"]) {
      const auto box = object["box"];
      objects.push_back(
          {object["shape"].as<std::string>(), object["color"].as<std::string>(),
           object["size"].as<std::string>(), box[0].as<float>(), box[1].as<float>(), box[2].as<float>(),
           box[3].as<float>()});
    }
    probes += static_cast<int64_t>(relation_probes(objects).size());
  }
  EXPECT_GT(probes, 0);
  EXPECT_EQ(scores["shapes"]["relation_choices"].as<int64_t>(), probes);
  EXPECT_EQ(scores["shapes"]["relation_choice_chance"].as<double>(), 0.5);
  EXPECT_NE(result.out.find("relation choice"), std::string::npos) << result.out;
}

TEST_F(EvalTest, ReportShowsEvaluatedSplitsAndRebuildsOnRequest) {
  ASSERT_EQ(eval({"--split", "val", "decode.beam_size=2"}).exit_code, 0);
  EXPECT_NE(
      read_file(run_ / "report.html").find("<td>val-decode.beam_size=2</td><td class=\"number\">"),
      std::string::npos);
  std::filesystem::remove(run_ / "report.html");
  const auto result = run_saccade({"report", "--run", run_.string()}, work_->path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("report.html"), std::string::npos);
  const std::string report = read_file(run_ / "report.html");
  EXPECT_NE(report.find("<td>val-decode.beam_size=2</td>"), std::string::npos);
  EXPECT_NE(report.find("beam 2"), std::string::npos);

  TempDir empty;
  const auto bad = run_saccade({"report", "--run", empty.path().string()}, work_->path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("neither a run folder (config.yaml with run.yaml"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  // A folder of config files is no run: nothing is written into it.
  const auto config_folder = run_saccade({"report", "--run", configs().string()}, work_->path());
  EXPECT_EQ(config_folder.exit_code, 2);
  EXPECT_NE(config_folder.err.find("neither a run folder"), std::string::npos) << config_folder.err;
  EXPECT_FALSE(std::filesystem::exists(configs() / "report.html"));
}

TEST_F(EvalTest, CheckpointsCopiedAloneAreEvaluated) {
  TempDir copy;
  std::filesystem::copy(run_ / "checkpoints", copy / "checkpoints", std::filesystem::copy_options::recursive);
  const auto result = run_saccade(
      {"eval", "-cp", configs().string(), "--run", copy.path().string(), "runtime.check_blas=false",
       "decode.beam_size=1"},
      work_->path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(std::filesystem::exists(copy / "results/test-decode.beam_size=1_scores.json"));
  EXPECT_FALSE(std::filesystem::exists(copy / "report.html"));
}

TEST_F(EvalTest, ValSplitWithGreedy) {
  const auto result = eval({"--split", "val", "decode.beam_size=1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("greedy search"), std::string::npos) << result.out;
  EXPECT_TRUE(std::filesystem::exists(run_ / "results/val-decode.beam_size=1.json"));
  EXPECT_TRUE(std::filesystem::exists(run_ / "results/val-decode.beam_size=1_scores.json"));
}

// --against: an evaluation compared with the results file it replaces reads it first (one caption
// changed there by hand counts as the one caption not identical, where a file read after the
// writing would be all identical); a missing file, one of other images, or in a multirun the file
// a job replaces, is refused before the split is decoded and its results replaced.
TEST_F(EvalTest, AgainstTheResultsItReplaces) {
  const auto first = eval({"decode.beam_size=1"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto results = results_written(first);
  std::string text = read_file(results);
  const size_t caption = text.find("\"caption\": \"");
  ASSERT_NE(caption, std::string::npos) << text;
  text.insert(caption + 12, "edited ");
  write_file(results, text);
  const auto result = eval({"decode.beam_size=1", "--against", results.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("identical captions  7 of 8 (87.5%)\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("CIDEr-D  "), std::string::npos) << result.out;

  const auto missing = eval({"decode.beam_size=2", "--against", (run_ / "results/none.json").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.err.find("--against: no file at"), std::string::npos) << missing.err;
  const auto other_images = work_->path() / "other_images.json";
  write_file(other_images, R"([{"image_id": 123456, "caption": "a red square"}])");
  const auto refused = eval({"decode.beam_size=2", "--against", other_images.string()});
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_NE(refused.err.find("does not caption the same 8 images: 8 (e.g."), std::string::npos)
      << refused.err;
  const auto sweep = eval({"-m", "decode.beam_size=1,2", "--against", results.string()});
  EXPECT_EQ(sweep.exit_code, 2) << sweep.out;
  EXPECT_NE(sweep.err.find("is the file this job of the multirun replaces"), std::string::npos) << sweep.err;
  const YAML::Node scores = YAML::LoadFile(scores_beside(results).string());
  EXPECT_EQ(scores["search"].as<std::string>(), "greedy");  // the refused runs wrote nothing
}

// What training wrote stays: an override that changes how the model is used writes beside it, and
// one that would change the model itself (an architecture key whose weights keep their shapes, a
// group switch the saved config would hide) is refused in one line before anything is written.
// --replace writes over the run's own results on request.
TEST_F(EvalTest, OverridesWriteBesideTheRunsResultsAndNeverChangeTheModel) {
  const std::string own_results = read_file(run_ / "results/test.json");
  const std::string own_scores = read_file(run_ / "results/test_scores.json");
  const auto beam = eval({"decode.beam_size=2"});
  ASSERT_EQ(beam.exit_code, 0) << beam.err;
  EXPECT_EQ(results_written(beam), run_ / "results/test-decode.beam_size=2.json");
  EXPECT_EQ(read_file(run_ / "results/test.json"), own_results);
  EXPECT_EQ(read_file(run_ / "results/test_scores.json"), own_scores);

  const std::string report = read_file(run_ / "report.html");
  const std::string run = run_.string();
  const std::vector<std::pair<std::string, std::string>> refusals = {
      {"encoder.position=sinusoidal", "encoder.position=sinusoidal changes the model of the trained run " +
                                          run + ", which has encoder.position=none"},
      {"encoder.grid=[4,4]",
       "encoder.grid=[4, 4] changes the model of the trained run " + run + ", which has encoder.grid=[8, 8]"},
      {"decoder=hard", "decoder=hard: the trained run " + run + " is composed with decoder=soft"}};
  for (const auto& [override_text, expected] : refusals) {
    const auto refused = eval({override_text});
    EXPECT_EQ(refused.exit_code, 2) << override_text;
    ASSERT_NE(refused.err.find("saccade: error: " + expected), std::string::npos) << refused.err;
    const std::string error = refused.err.substr(refused.err.find("saccade: error:"));
    EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 1) << refused.err;
  }
  EXPECT_EQ(read_file(run_ / "report.html"), report);
  EXPECT_EQ(read_file(run_ / "results/test.json"), own_results);
  EXPECT_FALSE(std::filesystem::exists(run_ / "results/test-encoder.position=sinusoidal.json"));

  const auto replaced = eval({"decode.beam_size=2", "--replace"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(results_written(replaced), run_ / "results/test.json");
  EXPECT_EQ(read_file(run_ / "results/test.json"), read_file(run_ / "results/test-decode.beam_size=2.json"));
}

// The metrics `saccade score` prints ("BLEU-1   0.100000"), by name.
std::map<std::string, double> printed_metrics(const std::string& printout) {
  std::istringstream lines(printout);
  std::map<std::string, double> metrics;
  std::string name;
  double value = 0;
  while (lines >> name) {
    if (name.rfind("BLEU-", 0) == 0 || name == "ROUGE-L" || name == "CIDEr-D") {
      if (lines >> value) metrics[name] = value;
    }
    lines.clear();
  }
  return metrics;
}

// eval scores the candidates against the references' raw text, as coco-caption does and as
// `saccade score` does given the same split file: here the test references' raw text says more
// than their tokens ("It's small." is "it 's small" to coco-caption's tokenizer).
TEST_F(EvalTest, ScoresAgainstTheRawTextAsScoreDoes) {
  const auto shapes = work_->path() / "datasets/shapes_smoke";
  const auto member = [](Json& object, const std::string& key) -> Json& {
    for (auto& [name, value] : object.as_object()) {
      if (name == key) return value;
    }
    throw std::invalid_argument("no member " + key);
  };
  Json split = read_json_file(shapes / "dataset_shapes.json");
  for (Json& image : member(split, "images").as_array()) {
    if (image.at("split").as_string() != "test") continue;
    for (Json& sentence : member(image, "sentences").as_array())
      sentence.set("raw", sentence.at("raw").as_string() + " It's small.");
  }
  const auto edited = work_->path() / "edited_split.json";
  write_json_file(edited, split);
  const auto evaluated = eval(
      {"decode.beam_size=1", "dataset.kind=karpathy", "dataset.split_file=" + edited.string(),
       "dataset.images_dir=" + shapes.string()});
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.err;
  const auto results = results_written(evaluated);
  const auto scored = run_saccade(
      {"score", "--references", edited.string(), "--results", results.string(), "--allow-partial"},
      work_->path());
  ASSERT_EQ(scored.exit_code, 0) << scored.err;
  const std::map<std::string, double> printed = printed_metrics(scored.out);
  ASSERT_EQ(printed.size(), 6u) << scored.out;
  const YAML::Node corpus = YAML::LoadFile(scores_beside(results).string())["corpus"];
  const std::map<std::string, std::string> keys = {{"BLEU-1", "bleu1"},    {"BLEU-2", "bleu2"},
                                                   {"BLEU-3", "bleu3"},    {"BLEU-4", "bleu4"},
                                                   {"ROUGE-L", "rouge_l"}, {"CIDEr-D", "cider_d"}};
  for (const auto& [name, key] : keys)
    EXPECT_NEAR(printed.at(name), corpus[key].as<double>(), 5e-7) << name << "\n" << scored.out;
}

// decode.n_best puts each image's best captions beside the chosen one, best first.
TEST_F(EvalTest, NBestListsAreWrittenBesideTheCaption) {
  const auto result = eval({"decode.beam_size=3", "decode.n_best=3"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const YAML::Node results = YAML::LoadFile(results_written(result).string());
  ASSERT_EQ(results.size(), 8u);
  for (const auto& entry : results) {
    const YAML::Node n_best = entry["n_best"];
    ASSERT_TRUE(n_best.IsSequence());
    ASSERT_EQ(n_best.size(), 3u);  // finished or not, three distinct captions
    EXPECT_EQ(n_best[0]["caption"].as<std::string>(), entry["caption"].as<std::string>());
    EXPECT_LT(n_best[0]["log_prob"].as<double>(), 0.0);
    EXPECT_NE(n_best[1]["caption"].as<std::string>(), n_best[0]["caption"].as<std::string>());
    EXPECT_NE(n_best[2]["caption"].as<std::string>(), n_best[1]["caption"].as<std::string>());
    EXPECT_NE(n_best[2]["caption"].as<std::string>(), n_best[0]["caption"].as<std::string>());
  }
  // Diversity: the vocabulary is the captions' distinct words; mBLEU-4 covers every image's list.
  std::set<std::string> words;
  for (const auto& entry : results) {
    std::istringstream caption(entry["caption"].as<std::string>());
    for (std::string word; caption >> word;) words.insert(word);
  }
  const YAML::Node diversity = YAML::LoadFile(scores_beside(results_written(result)).string())["diversity"];
  EXPECT_EQ(diversity["vocabulary"].as<size_t>(), words.size());
  EXPECT_EQ(diversity["n_best_images"].as<int>(), 8);
  for (const char* ratio : {"novel", "distinct_1", "distinct_2", "mbleu4"}) {
    EXPECT_GE(diversity[ratio].as<double>(), 0.0) << ratio;
    EXPECT_LE(diversity[ratio].as<double>(), 1.0) << ratio;
  }
  EXPECT_NE(result.out.find("mBLEU-4 (n-best)"), std::string::npos) << result.out;
  const auto one_best = eval({"decode.beam_size=3"});
  ASSERT_EQ(one_best.exit_code, 0) << one_best.err;
  const auto one_best_results = results_written(one_best);
  EXPECT_TRUE(YAML::LoadFile(scores_beside(one_best_results).string())["diversity"]["mbleu4"].IsNull());
  EXPECT_FALSE(YAML::LoadFile(one_best_results.string())[0]["n_best"]);
}

// Sampled captions repeat with the seed and change with another one.
TEST_F(EvalTest, SampledCaptionsRepeatWithTheSeed) {
  const auto captions = [&](const std::string& seed) {
    const auto result = eval({"decode.method=sample", "decode.temperature=1.5", "seed=" + seed});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.out.find("sample T=1.5 search"), std::string::npos) << result.out;
    return read_file(results_written(result));
  };
  const std::string first = captions("0");
  EXPECT_EQ(captions("0"), first);
  EXPECT_NE(captions("1"), first);
}

// --checkpoint last evaluates the last finished epoch's weights (the smoke run trains 2); another
// name is refused in one line naming it.
TEST_F(EvalTest, TheLastCheckpointOnRequest) {
  const auto last = eval({"--checkpoint", "last", "decode.beam_size=1"});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_NE(
      last.err.find("Evaluating " + (run_ / "checkpoints/last").string() + " (epoch 2)"), std::string::npos)
      << last.err;
  EXPECT_EQ(results_written(last), run_ / "results/test-decode.beam_size=1,checkpoint=last.json");
  EXPECT_EQ(YAML::LoadFile(scores_beside(results_written(last)).string())["checkpoint_epoch"].as<int>(), 2);
  const auto best = eval({"decode.beam_size=1"});
  ASSERT_EQ(best.exit_code, 0) << best.err;
  EXPECT_NE(best.err.find("Evaluating " + (run_ / "checkpoints/best").string()), std::string::npos)
      << best.err;

  const auto bad = eval({"--checkpoint", "newest"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("checkpoint 'newest' is not one a run keeps"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST_F(EvalTest, RunWithoutCheckpointFailsWithOneLine) {
  TempDir empty;
  const auto result = run_saccade(
      {"eval", "-cp", configs().string(), "--run", empty.path().string(), "runtime.check_blas=false"},
      work_->path());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err.rfind("saccade: error: ", 0), 0u) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
}

TEST_F(EvalTest, MissingRunFlagIsAUsageError) {
  const auto result = run_saccade({"eval", "-cp", configs().string()}, work_->path());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--run DIR"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace saccade::testing
