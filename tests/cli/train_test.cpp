// `saccade train` end to end on the smoke experiment: outputs, determinism, exact resume, NaN stop.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "io/metrics_csv.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

// The run folders under `work/experiments/smoke/` (none when it is not there).
std::vector<std::filesystem::path> smoke_runs(const std::filesystem::path& work) {
  std::vector<std::filesystem::path> runs;
  if (!std::filesystem::exists(work / "experiments/smoke")) return runs;
  for (const auto& entry : std::filesystem::directory_iterator(work / "experiments/smoke"))
    runs.push_back(entry.path());
  return runs;
}

// The single run folder under `work/experiments/smoke/`.
std::filesystem::path only_run(const std::filesystem::path& work) {
  const std::vector<std::filesystem::path> runs = smoke_runs(work);
  if (runs.size() != 1)
    throw std::runtime_error("expected one run folder, found " + std::to_string(runs.size()));
  return runs.front();
}

std::vector<std::map<std::string, std::string>> read_metrics(const std::filesystem::path& run) {
  return read_metrics_csv(run / "metrics.csv").rows;
}

// "epoch:step:loss" of every training row of `epoch` (all epochs when 0).
std::vector<std::string> train_losses(const std::filesystem::path& run, int epoch = 0) {
  std::vector<std::string> losses;
  for (const auto& row : read_metrics(run)) {
    if (row.at("kind") != "train") continue;
    if (epoch != 0 && row.at("epoch") != std::to_string(epoch)) continue;
    losses.push_back(row.at("epoch") + ":" + row.at("step") + ":" + row.at("loss"));
  }
  return losses;
}

CommandResult train_smoke(const std::filesystem::path& work, std::vector<std::string> overrides = {}) {
  std::vector<std::string> args = {"train", "-cp", configs().string(), "experiment=smoke"};
  args.insert(args.end(), overrides.begin(), overrides.end());
  return run_saccade(args, work);
}

TEST(Train, SmokeRunWritesMetricsCheckpointsAndSummary) {
  TempDir work;
  const auto result = train_smoke(work.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("Validation (last epoch): BLEU-1"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("Test captions (best checkpoint):"), std::string::npos) << result.out;

  const auto run = only_run(work.path());
  // The columns and their order are the file's format: runs resumed by a later version append to it.
  const std::string metrics = read_file(run / "metrics.csv");
  EXPECT_EQ(
      metrics.substr(0, metrics.find('\n')),
      "kind,epoch,step,loss,xent,alpha_reg,reinforce,attention_entropy,scst_reward,scst_baseline,sample_"
      "words,"
      "function_word_endings,lr,images_per_s,bleu1,bleu2,bleu3,bleu4,rouge_l,cider_d,meteor,pointing_"
      "accuracy,"
      "content_accuracy,object_recall,relation_accuracy,relation_choice_accuracy");
  const auto rows = read_metrics(run);
  int validations = 0;
  for (const auto& row : rows) {
    if (row.at("kind") != "val") continue;
    ++validations;
    const double bleu4 = std::stod(row.at("bleu4"));
    EXPECT_GE(bleu4, 0.0);
    EXPECT_LE(bleu4, 1.0);
  }
  EXPECT_EQ(validations, 2);
  int tests = 0;
  for (const auto& row : rows) tests += row.at("kind") == "test" ? 1 : 0;
  EXPECT_EQ(tests, 1);
  EXPECT_NE(result.out.find("Test (best checkpoint):  BLEU-1"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("pointing game"), std::string::npos) << result.out;
  EXPECT_FALSE(train_losses(run).empty());
  for (const char* which : {"best", "last"}) {
    for (const char* file :
         {"model.safetensors", "optimizer.pt", "state.json", "vocab.json", "config.yaml"}) {
      EXPECT_TRUE(std::filesystem::exists(run / "checkpoints" / which / file)) << which << "/" << file;
    }
  }
  EXPECT_NE(read_file(run / "checkpoints/last/state.json").find("\"epoch\": 2"), std::string::npos);
  int overlays = 0;
  for (const auto& entry : std::filesystem::directory_iterator(run / "samples")) {
    overlays += entry.path().extension() == ".png" ? 1 : 0;
  }
  EXPECT_GT(overlays, 0);

  // The report page holds the metrics, the test scores, the curves and the overlays inline.
  const std::string report = read_file(run / "report.html");
  for (const char* section : {"id=\"metrics\"", "id=\"shapes\"", "id=\"curves\"", "id=\"samples\""})
    EXPECT_NE(report.find(section), std::string::npos) << section;
  EXPECT_NE(report.find("<td>test</td>"), std::string::npos);
  EXPECT_NE(report.find("src=\"data:image/png;base64,"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(run / "results/test_scores.json"));

  // TensorBoard events: one file, holding (protobuf strings are stored as they are) every
  // kind of record the trainer logs.
  std::vector<std::filesystem::path> event_files;
  for (const auto& entry : std::filesystem::directory_iterator(run)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      event_files.push_back(entry.path());
  }
  ASSERT_EQ(event_files.size(), 1u);
  const std::string events = read_file(event_files.front());
  for (const char* tag :
       {"brain.Event:2", "config", "train/loss", "train/xent", "val/bleu4", "val/cider_d", "test/cider_d",
        "samples/captions", "\x89PNG"})
    EXPECT_NE(events.find(tag), std::string::npos) << tag;
}

// On the shapes world every validation scores what the captions say and where their words look;
// one of those metrics can pick the best checkpoint (the first epoch of its highest value), on
// the shapes world only.
TEST(Train, AShapesMetricPicksTheBestCheckpoint) {
  TempDir work;
  const auto result = train_smoke(
      work.path(), {"train.epochs=3", "train.val_metric=relation_choice_accuracy", "viz.sample_images=0"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto run = only_run(work.path());
  int validations = 0, best_epoch = 0;
  double best = -1.0;
  for (const auto& row : read_metrics(run)) {
    if (row.at("kind") == "train") continue;
    for (const char* column :
         {"pointing_accuracy", "content_accuracy", "object_recall", "relation_accuracy",
          "relation_choice_accuracy"}) {
      if (row.count(column) == 0) continue;  // n/a: nothing to count (no relation stated)
      EXPECT_GE(std::stod(row.at(column)), 0.0) << column;
      EXPECT_LE(std::stod(row.at(column)), 1.0) << column;
    }
    ASSERT_EQ(row.count("relation_choice_accuracy"), 1u) << row.at("kind");
    if (row.at("kind") != "val") continue;
    ++validations;
    const double choice = std::stod(row.at("relation_choice_accuracy"));
    if (choice > best) {
      best = choice;
      best_epoch = std::stoi(row.at("epoch"));
    }
  }
  EXPECT_EQ(validations, 3);
  EXPECT_NE(
      read_file(run / "checkpoints/best/state.json").find("\"epoch\": " + std::to_string(best_epoch)),
      std::string::npos);
  char printed[64];
  std::snprintf(printed, sizeof(printed), "Best relation_choice_accuracy %.4f at epoch %d", best, best_epoch);
  EXPECT_NE(result.out.find(printed), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("relation choice"), std::string::npos) << result.err;  // each validation's line
  EXPECT_NE(read_file(run / "report.html").find("Validation: shapes world"), std::string::npos);

  const auto elsewhere = train_smoke(
      work.path(),
      {"dataset=flickr8k", "train.val_metric=pointing_accuracy", "run.dir=" + (work / "other").string()});
  EXPECT_EQ(elsewhere.exit_code, 2) << elsewhere.err;
  EXPECT_NE(
      elsewhere.err.find("train.val_metric=pointing_accuracy is a shapes-world metric; this run has "
                         "dataset.kind=karpathy"),
      std::string::npos)
      << elsewhere.err;
  EXPECT_FALSE(std::filesystem::exists(work / "other"));
}

TEST(Train, TensorboardCanBeSwitchedOff) {
  TempDir work;
  ASSERT_EQ(train_smoke(work.path(), {"train.epochs=1", "run.tensorboard=false"}).exit_code, 0);
  for (const auto& entry : std::filesystem::directory_iterator(only_run(work.path())))
    EXPECT_NE(entry.path().filename().string().rfind("events.out.tfevents.", 0), 0u) << entry.path();
}

TEST(Train, SameSeedGivesIdenticalLosses) {
  TempDir first, second;
  ASSERT_EQ(train_smoke(first.path(), {"train.epochs=1"}).exit_code, 0);
  ASSERT_EQ(train_smoke(second.path(), {"train.epochs=1"}).exit_code, 0);
  const auto losses = train_losses(only_run(first.path()));
  ASSERT_GE(losses.size(), 3u);
  EXPECT_EQ(losses, train_losses(only_run(second.path())));

  TempDir other_seed;
  ASSERT_EQ(train_smoke(other_seed.path(), {"train.epochs=1", "seed=1"}).exit_code, 0);
  EXPECT_NE(losses, train_losses(only_run(other_seed.path())));
}

// Two epochs in one run, and one epoch then a resumed one, give the same epoch-2 losses. The
// resume removes what a killed process of the first run left half-written.
void expect_exact_resume(const std::vector<std::string>& overrides) {
  TempDir whole, half;
  ASSERT_EQ(train_smoke(whole.path(), overrides).exit_code, 0);
  auto one_epoch = overrides;
  one_epoch.push_back("train.epochs=1");
  ASSERT_EQ(train_smoke(half.path(), one_epoch).exit_code, 0);
  const auto first_half = only_run(half.path());
  const auto torn_report = first_half / "report.html.tmp-999999999";  // above any pid_max
  std::ofstream(torn_report) << "<html";
  TempDir resumed;
  auto resume = overrides;
  resume.push_back("train.resume=" + first_half.string());
  const auto result = train_smoke(resumed.path(), resume);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(std::filesystem::exists(torn_report));
  EXPECT_TRUE(std::filesystem::exists(first_half / "report.html"));
  const auto expected = train_losses(only_run(whole.path()), 2);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(train_losses(only_run(resumed.path()), 2), expected);
  EXPECT_TRUE(train_losses(only_run(resumed.path()), 1).empty());
}

// `run` evaluates with beam search (the shapes metrics included) and draws its overlays.
void expect_beam_eval_and_overlays(const std::filesystem::path& work, const std::filesystem::path& run) {
  const auto eval = run_saccade(
      {"eval", "-cp", configs().string(), "--run", run.string(), "decode.beam_size=3",
       "runtime.check_blas=false"},
      work);
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_NE(eval.out.find("pointing game"), std::string::npos) << eval.out;
  const auto visualize =
      run_saccade({"visualize", "--run", run.string(), "--split", "test", "--n", "2"}, work);
  ASSERT_EQ(visualize.exit_code, 0) << visualize.err;
  EXPECT_FALSE(std::filesystem::is_empty(run / "visualize/test"));
}

TEST(Train, ResumeContinuesExactlyAsAnUninterruptedRun) {
  expect_exact_resume({});
}

TEST(Train, HardAttentionTrainsWithReinforceAndResumesExactly) {
  TempDir work;
  const auto result = train_smoke(work.path(), {"decoder.attention.mode=hard"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto run = only_run(work.path());
  for (const auto& row : read_metrics(run)) {
    if (row.at("kind") != "train") continue;
    EXPECT_FALSE(row.at("reinforce").empty());
    EXPECT_GT(std::stod(row.at("attention_entropy")), 0.0);
  }
  // The REINFORCE baseline is part of the saved state, so resuming continues it.
  EXPECT_EQ(
      read_file(run / "checkpoints/last/state.json").find("\"reinforce_baseline\": null"), std::string::npos);
  expect_exact_resume({"decoder.attention.mode=hard"});
}

// Every caption decoded twice, its sampled reading measured against its expectation reading.
TEST(Train, HardAttentionAgainstTheExpectationBaselineResumesExactly) {
  const std::vector<std::string> paired = {
      "decoder.attention.mode=hard", "train.hard.baseline=expectation", "train.hard.reward=to_go"};
  expect_exact_resume(paired);
  TempDir work;
  auto mixed = paired;
  mixed.push_back("decoder.attention.hard_expectation=0.25");
  mixed.push_back("run.dir=" + (work / "run").string());
  const auto refused = train_smoke(work.path(), mixed);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(
      refused.err.find(
          "train.hard.baseline=expectation decodes every caption once sampled and once reading the "
          "expected context, so it cannot go with decoder.attention.hard_expectation=0.25"),
      std::string::npos)
      << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(work / "run"));
}

// Every caption decoded with two location samples, each measured against the other.
TEST(Train, HardAttentionWithSeveralSamplesPerCaptionResumesExactly) {
  const std::vector<std::string> two_samples = {
      "decoder.attention.mode=hard", "train.hard.samples=2", "train.hard.baseline=mean"};
  expect_exact_resume(two_samples);
  TempDir work;
  const auto refused = [&](const std::string& samples, const std::string& baseline) {
    const auto result = train_smoke(
        work.path(),
        {"decoder.attention.mode=hard", samples, baseline, "run.dir=" + (work / "run").string()});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_FALSE(std::filesystem::exists(work / "run"));
    return result.err;
  };
  EXPECT_NE(
      refused("train.hard.samples=1", "train.hard.baseline=mean")
          .find("train.hard.baseline=mean needs train.hard.samples >= 2"),
      std::string::npos);
  EXPECT_NE(
      refused("train.hard.samples=3", "train.hard.baseline=expectation")
          .find("train.hard.baseline=expectation decodes every caption once sampled and once reading the "
                "expected context, so it cannot go with train.hard.samples=3"),
      std::string::npos);
}

// Soft epochs first: nothing is sampled (REINFORCE's term is 0) until they end.
TEST(Train, HardAttentionAfterSoftEpochsSamplesOnlyAfterThemAndResumesExactly) {
  const std::vector<std::string> soft_first = {"decoder.attention.mode=hard", "train.hard.soft_epochs=1"};
  TempDir work;
  ASSERT_EQ(train_smoke(work.path(), soft_first).exit_code, 0);
  std::map<int, int> rows, reinforced;
  for (const auto& row : read_metrics(only_run(work.path()))) {
    if (row.at("kind") != "train") continue;
    const int epoch = std::stoi(row.at("epoch"));
    ++rows[epoch];
    reinforced[epoch] += std::stod(row.at("reinforce")) != 0.0;
  }
  ASSERT_GT(rows[1], 0);
  ASSERT_GT(rows[2], 0);
  EXPECT_EQ(reinforced[1], 0);
  EXPECT_GT(reinforced[2], 0);
  // A run of its soft epochs alone, resumed into the hard ones, continues exactly.
  expect_exact_resume(soft_first);
}

TEST(Train, LocalAttentionTrainsResumesExactlyAndDecodesWithBeamsAndOverlays) {
  const std::vector<std::string> local = {"decoder.attention.kind=local", "decoder.attention.window=1"};
  expect_exact_resume(local);
  // The monotonic centre through training, beam search (which reorders each beam's previous
  // alpha) and the overlays.
  auto monotonic = local;
  monotonic.push_back("decoder.attention.centre=monotonic");
  TempDir work;
  ASSERT_EQ(train_smoke(work.path(), monotonic).exit_code, 0);
  const auto run = only_run(work.path());
  expect_beam_eval_and_overlays(work.path(), run);

  // A window wider than the smoke encoder's 8 x 8 grid: one line naming the key and value.
  const auto wide = train_smoke(work.path(), {"decoder.attention.kind=local", "decoder.attention.window=4"});
  EXPECT_EQ(wide.exit_code, 2);
  EXPECT_NE(
      wide.err.find("decoder.attention: window 4 spans 9 x 9 cells, more than the 8 x 8 grid; at most 3"),
      std::string::npos)
      << wide.err;
  EXPECT_EQ(std::count(wide.err.begin(), wide.err.end(), '\n'), 1) << wide.err;
}

TEST(Train, RefinerTrainsResumesExactlyFromImagesOrFeaturesAndDrawsItsMaps) {
  // D = 16 in the smoke encoder: two heads of 8 channels.
  const std::vector<std::string> refiner = {
      "encoder.refiner.kind=transformer", "encoder.refiner.layers=1", "encoder.refiner.heads=2",
      "encoder.refiner.ffn_dim=32"};
  expect_exact_resume(refiner);

  TempDir work;
  auto from_features = refiner;
  for (const char* item : {"encoder.trainable_blocks=0", "train.epochs=1", "train.features=features"})
    from_features.push_back(item);
  const auto extracted = run_saccade(
      {"extract", "-cp", configs().string(), "experiment=smoke", "encoder.trainable_blocks=0", "--out",
       "features"},
      work.path());
  ASSERT_EQ(extracted.exit_code, 0) << extracted.err;
  const auto trained = train_smoke(work.path(), from_features);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const auto run = only_run(work.path());
  EXPECT_NE(
      read_file(run / "checkpoints/last/model.safetensors").find("refiner.layers.0.self_attn.in_proj_weight"),
      std::string::npos);

  const auto visualize =
      run_saccade({"visualize", "--run", run.string(), "--split", "test", "--n", "2"}, work.path());
  ASSERT_EQ(visualize.exit_code, 0) << visualize.err;
  const std::string index = read_file(run / "visualize/test/samples.json");
  EXPECT_NE(index.find("_refiner.png"), std::string::npos) << index;
  for (const char* drawn : {"000_", "001_"}) {
    const auto at = index.find(std::string("\"refiner_file\": \"") + drawn);
    ASSERT_NE(at, std::string::npos) << index;
    const auto name = index.substr(at + 17, index.find('"', at + 17) - at - 17);
    EXPECT_TRUE(std::filesystem::exists(run / "visualize/test" / name)) << name;
  }

  // The refiner's run read without one: one line naming the key and both values.
  const auto plain = run_saccade(
      {"eval", "-cp", configs().string(), "--run", run.string(), "encoder.refiner.kind=none",
       "runtime.check_blas=false"},
      work.path());
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_NE(
      plain.err.find(
          "encoder.refiner.kind=none changes the model of the trained run " + run.string() +
          ", which has encoder.refiner.kind=transformer"),
      std::string::npos)
      << plain.err;
  EXPECT_EQ(std::count(plain.err.begin(), plain.err.end(), '\n'), 1) << plain.err;

  // Heads that do not divide the annotation width: one line naming the key and value.
  const auto three_heads =
      train_smoke(work.path(), {"encoder.refiner.kind=transformer", "encoder.refiner.heads=3"});
  EXPECT_EQ(three_heads.exit_code, 2);
  EXPECT_NE(
      three_heads.err.find("encoder.refiner.heads=3 does not divide the annotation width 16"),
      std::string::npos)
      << three_heads.err;
  EXPECT_EQ(std::count(three_heads.err.begin(), three_heads.err.end(), '\n'), 1) << three_heads.err;
}

TEST(Train, TransformerDecoderTrainsResumesExactlyDecodesAndRefusesAnLstmConfig) {
  const std::vector<std::string> transformer = {
      "decoder=transformer", "decoder.layers=1", "decoder.heads=2", "decoder.dim=16", "decoder.ffn_dim=32"};
  expect_exact_resume(transformer);

  TempDir work;
  ASSERT_EQ(train_smoke(work.path(), transformer).exit_code, 0);
  const auto run = only_run(work.path());
  expect_beam_eval_and_overlays(work.path(), run);

  // The Transformer's run read with the LSTM decoder's config: one line naming both.
  const auto lstm = run_saccade(
      {"eval", "-cp", configs().string(), "--run", run.string(), "decoder.kind=lstm"}, work.path());
  EXPECT_NE(lstm.exit_code, 0);
  EXPECT_NE(
      lstm.err.find(
          "decoder.kind=lstm changes the model of the trained run " + run.string() +
          ", which has decoder.kind=transformer"),
      std::string::npos)
      << lstm.err;
  const std::string error = lstm.err.substr(lstm.err.find("saccade: error:"));
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 1) << lstm.err;
  // A key only the run's decoder group has (today's default decoder is the LSTM) is known, and read.
  const auto eval_with = [&](const std::string& override) {
    return run_saccade(
        {"eval", "-cp", configs().string(), "--run", run.string(), "decode.method=greedy", override},
        work.path());
  };
  const auto first_layer = eval_with("decoder.maps_layer=0");
  EXPECT_EQ(first_layer.exit_code, 0) << first_layer.err;
  const auto no_such_layer = eval_with("decoder.maps_layer=1");
  EXPECT_NE(no_such_layer.exit_code, 0);
  EXPECT_NE(no_such_layer.err.find("decoder.maps_layer=1 is not a layer"), std::string::npos)
      << no_such_layer.err;

  const auto three_heads = train_smoke(work.path(), {"decoder=transformer", "decoder.heads=3"});
  EXPECT_EQ(three_heads.exit_code, 2);
  EXPECT_NE(three_heads.err.find("decoder.heads=3 does not divide decoder.dim=256"), std::string::npos)
      << three_heads.err;
  EXPECT_EQ(std::count(three_heads.err.begin(), three_heads.err.end(), '\n'), 1) << three_heads.err;
}

// Without an image cache the loaders meet the bad images, every epoch and in the test pass: the
// summary counts each image once.
TEST(Train, BadImagesWithoutACacheAreSkippedAndCountedOnce) {
  TempDir work;
  const auto prepared = run_saccade({"prepare", "-cp", configs().string(), "experiment=smoke"}, work.path());
  ASSERT_EQ(prepared.exit_code, 0) << prepared.err;
  const auto world = work.path() / "datasets/shapes_smoke";
  std::set<std::string> damaged_splits;
  for (const auto& image : YAML::LoadFile((world / "dataset_shapes.json").string())["images"]) {
    const auto split = image["split"].as<std::string>();
    if (split == "val" || !damaged_splits.insert(split).second) continue;
    write_file(
        world / image["filepath"].as<std::string>() / image["filename"].as<std::string>(),
        "\x89PNG\r\n\x1A\n cut off");
  }
  ASSERT_EQ(damaged_splits.size(), 2u);
  const auto result = train_smoke(work.path(), {"data.cache=false", "data.on_bad_image=skip"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("Skipped 2 bad images (see the log)"), std::string::npos) << result.out;
}

TEST(Train, ResumeWithoutCheckpointIsClearError) {
  TempDir work;
  const auto result = train_smoke(work.path(), {"train.resume=" + (work / "no_such_run").string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("No checkpoint at"), std::string::npos) << result.err;
}

TEST(Train, DivergingLossStopsAndKeepsLastGoodCheckpoint) {
  TempDir work;
  // After epoch 1 the step schedule multiplies the learning rate by 1e40: the weights overflow.
  const auto result =
      train_smoke(work.path(), {"train.schedule=step", "train.lr_step_epochs=1", "train.lr_gamma=1e40"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("The loss became"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("at epoch 2"), std::string::npos) << result.err;
  const auto run = only_run(work.path());
  EXPECT_NE(read_file(run / "checkpoints/last/state.json").find("\"epoch\": 1"), std::string::npos);
}

// A full disk (a 400 KB file system in a private mount namespace: the first checkpoint fits, the
// best one written after it does not) stops training with one line naming the file; the last
// checkpoint stays whole and no temporary is left. Skipped where no mount namespace can be made.
TEST(Train, AFullDiskIsOneLineAndKeepsTheLastCheckpoint) {
  TempDir work;
  const auto small = work / "small";
  std::filesystem::create_directories(small);
  ASSERT_EQ(train_smoke(work.path(), {"train.epochs=1", "run.dir=" + (work / "warm").string()}).exit_code, 0);
  std::string saccade = SACCADE_BINARY;
  const std::string script =
      "mount -t tmpfs -o size=400k tmpfs '" + small.string() + "' || exit 77; cd '" + work.path().string() +
      "'; '" + saccade + "' train -cp '" + configs().string() +
      "' experiment=smoke run.dir=small/run 2>small/stderr; echo \"exit $?\"; tail -n 1 small/stderr; "
      "find small/run/checkpoints | sort; ls -a small/run | grep -c tmp; true";
  auto result = run_program({"unshare", "-m", "sh", "-c", script});
  if (result.exit_code != 0) result = run_program({"unshare", "-rm", "sh", "-c", script});
  if (result.exit_code != 0) GTEST_SKIP() << "no private mount namespace here: " << result.err;
  EXPECT_NE(result.out.find("exit 1\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("saccade: error: Could not write small/run/checkpoints/"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("No space left on device"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("terminate"), std::string::npos) << result.out;
  for (const char* file : {"model.safetensors", "optimizer.pt", "state.json", "vocab.json", "config.yaml"})
    EXPECT_NE(result.out.find("small/run/checkpoints/last/" + std::string(file)), std::string::npos) << file;
  for (const char* staged : {"\nsmall/run/checkpoints/best.tmp-", "\nsmall/run/checkpoints/last.tmp-"})
    EXPECT_EQ(result.out.find(staged), std::string::npos) << "a staged checkpoint left: " << result.out;
  EXPECT_NE(result.out.find("\n0\n"), std::string::npos) << "temporaries left: " << result.out;
}

// Names under `dir` that a writer uses only until it renames its work into place.
std::vector<std::string> temporaries_under(const std::filesystem::path& dir) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp") != std::string::npos || name.find(".staged") != std::string::npos)
      found.push_back(entry.path().string());
  }
  return found;
}

// kill -9 at moments spread over a whole run (generating the world, building the image caches,
// training, writing checkpoints and the report), then a restart as a user would make it: a
// resume from the killed run's last checkpoint, or a fresh run where it saved none. The restart
// removes what the killed process left half-written where it reads or resumes (caches, the resumed
// run) and ends with an uninterrupted run's losses. A run killed before its first checkpoint is
// not resumed, so a staged checkpoint it left stays in its own folder.
TEST(Train, KilledAtAnyMomentRestartsCleanlyAndResumesExactly) {
  TempDir reference;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(train_smoke(reference.path()).exit_code, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto expected = train_losses(only_run(reference.path()));
  for (const double fraction : {0.05, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9}) {
    TempDir work;
    const std::string delay = std::to_string(fraction * seconds);
    SCOPED_TRACE("killed after " + delay + " s");
    const auto killed = run_program(
        {"timeout", "-s", "KILL", delay, SACCADE_BINARY, "train", "-cp", configs().string(),
         "experiment=smoke"},
        work.path());
    if (killed.exit_code == 0) {
      EXPECT_EQ(train_losses(only_run(work.path())), expected);
      continue;
    }
    ASSERT_EQ(killed.exit_code, 128 + 9) << killed.err;
    std::vector<std::string> restart = {"run.dir=" + (work / "restart").string()};
    int saved_epochs = 0;
    std::string abandoned_run;  // a killed run with no checkpoint: nothing resumes it, so nothing tidies it
    // A kill between making experiments/smoke/ and the run folder inside it leaves no run.
    if (!smoke_runs(work.path()).empty()) {
      const auto killed_run = only_run(work.path());
      if (std::filesystem::exists(killed_run / "checkpoints/last")) {
        saved_epochs =
            YAML::LoadFile((killed_run / "checkpoints/last/state.json").string())["epoch"].as<int>();
        restart.push_back("train.resume=" + killed_run.string());
      } else {
        abandoned_run = killed_run.string() + "/";
      }
    }
    const auto result = train_smoke(work.path(), restart);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    std::vector<std::string> remaining;
    for (const auto& loss : expected) {
      if (std::stoi(loss.substr(0, loss.find(':'))) > saved_epochs) remaining.push_back(loss);
    }
    EXPECT_EQ(train_losses(work / "restart"), remaining);
    auto left = temporaries_under(work.path());
    if (!abandoned_run.empty())
      left.erase(
          std::remove_if(
              left.begin(), left.end(),
              [&](const std::string& path) { return path.rfind(abandoned_run, 0) == 0; }),
          left.end());
    EXPECT_EQ(left, std::vector<std::string>{});
  }
}

// A run folder on a read-only file system (a private mount, so root cannot write it either) is
// one line naming the folder and the system's reason.
TEST(Train, AnUnwritableRunFolderIsOneLine) {
  TempDir work;
  const auto locked = work / "locked";
  std::filesystem::create_directories(locked);
  const std::string script = "mount -t tmpfs -o ro tmpfs '" + locked.string() + "' || exit 77; cd '" +
                             work.path().string() + "'; '" + SACCADE_BINARY + "' train -cp '" +
                             configs().string() + "' experiment=smoke run.dir=locked/run; echo \"exit $?\"";
  auto result = run_program({"unshare", "-m", "sh", "-c", script});
  if (result.exit_code != 0) result = run_program({"unshare", "-rm", "sh", "-c", script});
  if (result.exit_code != 0) GTEST_SKIP() << "no private mount namespace here: " << result.err;
  EXPECT_NE(result.out.find("exit 1"), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("locked/run"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("Read-only file system"), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

// Settings that cannot run are refused before the run folder is created.
TEST(Train, BadSettingsLeaveNoRunFolder) {
  TempDir work;
  for (const char* bad : {"decoder.dropout=1.5", "train.objective=scst", "decode.beam_groups=0"}) {
    std::vector<std::string> overrides = {bad, "run.dir=" + (work / "run").string()};
    if (std::string(bad) == "train.objective=scst") overrides.push_back("dataset.augment.hflip=0.5");
    const auto result = train_smoke(work.path(), overrides);
    EXPECT_EQ(result.exit_code, 2) << bad << ": " << result.err;
    EXPECT_FALSE(std::filesystem::exists(work / "run")) << bad;
  }
}

// Numbers out of range are refused in one line naming the key, before training starts.
TEST(Train, NumbersOutOfRangeAreOneLine) {
  TempDir work;
  for (const auto& [override_text, message] :
       {std::pair{"train.lr=1e400", "train.lr: expected a finite number, got '.inf'"},
        std::pair{"train.lr=1e-310", "train.lr: 1.0e-310 is too close to 0"},
        std::pair{"train.batch_size=9223372036854775807", "train.batch_size must be in [1, 16777216]"},
        std::pair{"train.epochs=99999999999999999999", "train.epochs: expected an integer"}}) {
    const auto result = train_smoke(work.path(), {override_text});
    EXPECT_EQ(result.exit_code, 2) << override_text;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
}

// More threads than cores are cut to the cores with a warning, not started one by one.
TEST(Train, ThreadsBeyondTheCoresAreCutWithAWarning) {
  TempDir work;
  const auto result = train_smoke(work.path(), {"runtime.threads=100000", "train.epochs=1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("runtime.threads=100000 is more than this machine's"), std::string::npos)
      << result.err;
}

// Diverging before the first checkpoint says so instead of naming a checkpoint that is not there.
TEST(Train, DivergingInTheFirstEpochSaysNoCheckpointWasWritten) {
  TempDir work;
  const auto result = train_smoke(work.path(), {"train.lr=1e30", "train.grad_clip=0"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("at epoch 1"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("No checkpoint was written: it diverged in the first epoch"), std::string::npos)
      << result.err;
}

TEST(Train, BadTrainOptionIsConfigError) {
  TempDir work;
  const auto result = train_smoke(work.path(), {"train.optimizer=sgd"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(
      result.err.find("train.optimizer: Unknown optimizer 'sgd'; expected adam or rmsprop"),
      std::string::npos)
      << result.err;
}

// bf16 autocast on the CPU: the plain LibTorch ops run in bf16 instead of the float kernels, so
// the losses differ from fp32's, but only by bf16's rounding.
TEST(Train, Bf16AutocastOnTheCpuTrainsCloseToFp32) {
  TempDir fp32, bf16;
  ASSERT_EQ(train_smoke(fp32.path(), {"train.epochs=1"}).exit_code, 0);
  const auto result = train_smoke(bf16.path(), {"train.epochs=1", "runtime.precision=bf16"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(read_file(only_run(bf16.path()) / "train.log").find("on cpu, bf16 autocast"), std::string::npos);
  std::vector<double> expected, actual;
  for (const auto& row : read_metrics(only_run(fp32.path())))
    if (row.at("kind") == "train") expected.push_back(std::stod(row.at("loss")));
  for (const auto& row : read_metrics(only_run(bf16.path())))
    if (row.at("kind") == "train") actual.push_back(std::stod(row.at("loss")));
  ASSERT_EQ(actual.size(), expected.size());
  ASSERT_FALSE(actual.empty());
  EXPECT_NE(actual, expected);
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 0.01 * expected[i]) << i;
}

// A device or precision that cannot run is one line naming the key and value, before any file of
// the run is written.
TEST(Train, DevicesAndPrecisionsThatCannotRunAreRefusedBeforeAnyFileIsWritten) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"runtime.device=cuda:999"}, "runtime.device=cuda:999: "},
      {{"runtime.device=tpu"}, "runtime.device: expected auto, cpu, cuda or cuda:N, got 'tpu'"},
      {{"runtime.device=cpu", "runtime.precision=fp16"},
       "runtime.precision=fp16: half-precision autocast needs a CUDA device"}};
  for (const auto& [overrides, message] : cases) {
    TempDir work;
    const auto result = train_smoke(work.path(), overrides);
    EXPECT_EQ(result.exit_code, 2) << message;
    EXPECT_EQ(result.err.rfind("saccade: error: " + message, 0), 0u) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_FALSE(std::filesystem::exists(work / "experiments")) << message;
  }
}

TEST(Train, FrozenEncoderTrainsFromExtractedFeatures) {
  TempDir work;
  const auto extracted = run_saccade(
      {"extract", "-cp", configs().string(), "experiment=smoke", "encoder.trainable_blocks=0", "--out",
       "features"},
      work.path());
  ASSERT_EQ(extracted.exit_code, 0) << extracted.err;
  const auto result =
      train_smoke(work.path(), {"encoder.trainable_blocks=0", "train.epochs=1", "train.features=features"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("Annotations from the feature cache"), std::string::npos) << result.err;
  const auto trained = only_run(work.path());
  EXPECT_FALSE(train_losses(trained).empty());

  // Features extracted under another normalization would train the decoder on what the encoder
  // never gives it at evaluation: refused, naming the setting.
  const auto renormalized = train_smoke(
      work.path(), {"encoder.trainable_blocks=0", "train.epochs=1", "train.features=features",
                    "dataset.image.mean=[0.5,0.5,0.5]"});
  EXPECT_EQ(renormalized.exit_code, 2);
  EXPECT_NE(
      renormalized.err.find(
          "was extracted with dataset.image.mean=[0.485, 0.456, 0.406], this run has [0.5, 0.5, 0.5]"),
      std::string::npos)
      << renormalized.err;
  EXPECT_EQ(only_run(work.path()), trained);  // the refused run left no folder

  const auto trainable = train_smoke(work.path(), {"train.features=features"});
  EXPECT_EQ(trainable.exit_code, 2);
  EXPECT_NE(trainable.err.find("train.features needs a frozen encoder"), std::string::npos) << trainable.err;

  // Cached annotations come from unaugmented images: augmentation could not reach the model.
  const auto augmented = train_smoke(
      work.path(),
      {"encoder.trainable_blocks=0", "train.features=features", "dataset.augment.brightness=0.2"});
  EXPECT_EQ(augmented.exit_code, 2);
  EXPECT_NE(augmented.err.find("train.features and dataset.augment cannot be combined"), std::string::npos)
      << augmented.err;
}

// The validation rows of a run as "epoch:bleu4:cider_d".
std::vector<std::string> validation_scores(const std::filesystem::path& run) {
  std::vector<std::string> scores;
  for (const auto& row : read_metrics(run)) {
    if (row.at("kind") == "val")
      scores.push_back(row.at("epoch") + ":" + row.at("bleu4") + ":" + row.at("cider_d"));
  }
  return scores;
}

TEST(Train, ScstStartsFromARunsWeightsLogsItsRewardsAndResumesExactly) {
  TempDir start;
  ASSERT_EQ(train_smoke(start.path(), {"train.epochs=1"}).exit_code, 0);
  const auto initial = only_run(start.path());
  const std::vector<std::string> scst = {
      "train.objective=scst", "train.init_from=" + initial.string(), "train.scst.samples=3"};

  // With a vanishing learning rate the first validation is the initial run's own.
  TempDir frozen;
  auto tiny_steps = scst;
  tiny_steps.insert(tiny_steps.end(), {"train.epochs=1", "train.lr=1e-30"});
  const auto result = train_smoke(frozen.path(), tiny_steps);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("Starting from the weights of " + initial.string()), std::string::npos)
      << result.err;
  const auto run = only_run(frozen.path());
  ASSERT_EQ(validation_scores(run).size(), 1u);
  EXPECT_EQ(validation_scores(run), validation_scores(initial));
  int train_rows = 0;
  for (const auto& row : read_metrics(run)) {
    if (row.at("kind") != "train") continue;
    ++train_rows;
    EXPECT_GE(std::stod(row.at("scst_reward")), 0.0);
    EXPECT_FALSE(row.at("scst_baseline").empty());
    EXPECT_GT(std::stod(row.at("sample_words")), 0.0);
    const double endings = std::stod(row.at("function_word_endings"));
    EXPECT_TRUE(endings >= 0.0 && endings <= 1.0) << endings;
    EXPECT_EQ(row.count("xent"), 0u);  // empty cells are left out of a row
  }
  EXPECT_GE(train_rows, 2);
  // The report draws the rewards.
  EXPECT_NE(read_file(run / "report.html").find("Self-critical training"), std::string::npos);
  expect_exact_resume(scst);
  auto mean_baseline = scst;
  mean_baseline.push_back("train.scst.baseline=mean");
  expect_exact_resume(mean_baseline);
}

TEST(Train, ScstTrainsHardAttentionOnItsOwnRewards) {
  TempDir start;
  ASSERT_EQ(train_smoke(start.path(), {"train.epochs=1", "decoder.attention.mode=hard"}).exit_code, 0);
  TempDir work;
  const auto result = train_smoke(
      work.path(), {"decoder.attention.mode=hard", "train.objective=scst", "train.epochs=1",
                    "train.init_from=" + only_run(start.path()).string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const auto& row : read_metrics(only_run(work.path()))) {
    if (row.at("kind") == "train") {
      EXPECT_TRUE(row.count("reinforce") == 0 && row.count("scst_reward") == 1);
    }
  }
}

TEST(Train, InitFromARunOfAnotherVocabularyOrArchitectureIsOneLine) {
  TempDir start;
  ASSERT_EQ(train_smoke(start.path(), {"train.epochs=1"}).exit_code, 0);
  const std::string init_from = "train.init_from=" + only_run(start.path()).string();
  TempDir work;
  const auto wider = train_smoke(work.path(), {init_from, "decoder.hidden_dim=48"});
  EXPECT_EQ(wider.exit_code, 2);
  EXPECT_NE(
      wider.err.find("it was trained with decoder.hidden_dim=32, this run has decoder.hidden_dim=48"),
      std::string::npos)
      << wider.err;
  const auto fewer_words = train_smoke(work.path(), {init_from, "dataset.min_word_count=40"});
  EXPECT_EQ(fewer_words.exit_code, 2);
  EXPECT_NE(
      fewer_words.err.find("its vocabulary differs from the one this run's data builds"), std::string::npos)
      << fewer_words.err;
  const auto missing = train_smoke(work.path(), {"train.init_from=" + (work / "no_run").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(
      missing.err.find("train.init_from=" + (work / "no_run").string() + ": No checkpoint at"),
      std::string::npos)
      << missing.err;
  const auto flipped =
      train_smoke(work.path(), {init_from, "train.objective=scst", "dataset.augment.hflip=0.5"});
  EXPECT_EQ(flipped.exit_code, 2);
  EXPECT_NE(
      flipped.err.find("train.objective=scst and dataset.augment.hflip cannot be combined"),
      std::string::npos)
      << flipped.err;
  const auto one_sample =
      train_smoke(work.path(), {"train.objective=scst", "train.scst.baseline=mean", "train.scst.samples=1"});
  EXPECT_EQ(one_sample.exit_code, 2);
  EXPECT_NE(one_sample.err.find("train.scst.baseline=mean needs train.scst.samples >= 2"), std::string::npos)
      << one_sample.err;
  // Refused at set-up or before: no run folder is left behind.
  EXPECT_FALSE(std::filesystem::exists(work / "experiments"));

  // A resume refused at set-up, even one pointed into the resumed run's folder, leaves that run
  // whole and makes no folder beside it.
  const auto initial = only_run(start.path());
  const auto resumed = train_smoke(
      work.path(),
      {"train.resume=" + initial.string(), "run.dir=" + initial.string(), "decoder.hidden_dim=48"});
  EXPECT_NE(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(only_run(start.path()), initial);
  for (const char* file :
       {"config.yaml", "run.yaml", "metrics.csv", "train.log", "checkpoints/last/state.json"})
    EXPECT_TRUE(std::filesystem::exists(initial / file)) << file;

  // A saved config that is not YAML is named, with its line.
  const auto saved_config = initial / "checkpoints/best/config.yaml";
  write_file(saved_config, "seed: 0\ndecoder: {hidden_dim: [\n");
  const auto broken = train_smoke(work.path(), {init_from});
  EXPECT_EQ(broken.exit_code, 2);
  const std::string named = "saccade: error: " + init_from + ": " + saved_config.string() + ":";
  const size_t at = broken.err.find(named);
  ASSERT_NE(at, std::string::npos) << broken.err;
  // Then the line.
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(broken.err.at(at + named.size())))) << broken.err;
  EXPECT_FALSE(std::filesystem::exists(work / "experiments"));
}

// Refusals at set-up (the run's data, a train.init_from that is not there) leave no run folder;
// a folder the user made for the run stays, as empty as it was.
TEST(Train, RefusalsAtSetUpLeaveNoRunFolder) {
  TempDir work;
  const auto missing = train_smoke(work.path(), {"train.init_from=" + (work / "no_run").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(work / "experiments"));

  std::filesystem::create_directories(work / "mine");
  const auto into_mine =
      train_smoke(work.path(), {"train.init_from=" + (work / "no_run").string(), "run.dir=mine"});
  EXPECT_EQ(into_mine.exit_code, 2) << into_mine.err;
  ASSERT_TRUE(std::filesystem::is_directory(work / "mine"));
  EXPECT_TRUE(std::filesystem::is_empty(work / "mine"));

  write_file(
      work / "spaced.json",
      R"({"images": [{"filename": "a.png", "split": "train", "sentences": [{"tokens": ["a", "big dog"]}]}]})");
  const auto spaced = train_smoke(
      work.path(), {"dataset.kind=karpathy", "dataset.split_file=spaced.json", "dataset.images_dir=."});
  EXPECT_EQ(spaced.exit_code, 2) << spaced.err;
  EXPECT_NE(spaced.err.find("'big dog' holds whitespace"), std::string::npos) << spaced.err;
  EXPECT_FALSE(std::filesystem::exists(work / "experiments"));
}

// As Hydra's basic launcher: a failed job does not stop the sweep; it is marked failed, with its
// error, on the sweep's pages, and the sweep exits non-zero.
TEST(Train, ASweepRunsEveryJobAfterAFailedOneAndMarksItFailed) {
  TempDir work;
  const auto result = run_saccade(
      {"train", "-m", "-cp", configs().string(), "experiment=smoke", "train.epochs=1",
       "train.init_from=null,/nonexistent/run,null"},
      work.path());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("saccade: error: 1 of 3 jobs failed: #1"), std::string::npos) << result.err;
  const auto sweep = only_run(work.path());
  // The job refused at set-up left only the record of its failure.
  EXPECT_TRUE(std::filesystem::exists(sweep / "1/failure.txt"));
  EXPECT_FALSE(std::filesystem::exists(sweep / "1/config.yaml"));
  EXPECT_TRUE(std::filesystem::exists(sweep / "2/metrics.csv"));
  EXPECT_TRUE(std::filesystem::exists(sweep / "2/checkpoints/best"));
  const std::string error = "train.init_from=/nonexistent/run: No checkpoint at";
  const std::string report = read_file(sweep / "report.html");
  EXPECT_NE(report.find("<td>failed: " + error), std::string::npos) << report;
  EXPECT_EQ(report.find("not started"), std::string::npos) << report;
  const std::string comparison = read_file(sweep / "comparison.md");
  EXPECT_NE(comparison.find("Job #1 failed: " + error), std::string::npos) << comparison;
  EXPECT_NE(comparison.find("| 0, 0 |"), std::string::npos) << comparison;  // jobs 0 and 2, one run
  const std::string csv = read_file(sweep / "comparison.csv");
  EXPECT_NE(csv.find("\n2,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("\n1,"), std::string::npos) << csv;
}

}  // namespace
}  // namespace saccade::testing
