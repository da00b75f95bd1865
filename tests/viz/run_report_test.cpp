// The run and sweep report pages: chart geometry and ticks worked by hand, base64 against RFC 4648,
// page contents from a run folder built here, a sweep's comparison against means and standard
// deviations worked by hand, and the page as headless Chromium renders it.
#include "viz/run_report.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "base/text.h"
#include "data/image_pipeline.h"
#include "eval/split_results.h"
#include "io/json.h"
#include "io/metrics_csv.h"
#include "test_util.h"
#include "viz/sample_overlays.h"
#include "viz/svg_chart.h"
#include "viz/sweep_report.h"

namespace saccade {
namespace {

using testing::read_file;
using testing::TempDir;
using testing::write_file;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(NiceTicks, StepsAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_EQ(nice_ticks(0, 1, 5), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  // rough step 0.148 -> 0.2; from floor(0.13 / 0.2) * 0.2 = 0 to ceil(0.87 / 0.2) * 0.2 = 1.
  const auto ticks = nice_ticks(0.13, 0.87, 5);
  ASSERT_EQ(ticks.size(), 6u);
  EXPECT_DOUBLE_EQ(ticks.front(), 0.0);
  EXPECT_DOUBLE_EQ(ticks.back(), 1.0);
  // rough step 3125 / 6 = 520.8 -> 1000.
  EXPECT_EQ(nice_ticks(0, 3125, 6), (std::vector<double>{0, 1000, 2000, 3000, 4000}));
  // A single value 3 is widened by 10% to [2.7, 3.3]: rough 0.12 -> 0.2, ticks 2.6 .. 3.4.
  const auto single = nice_ticks(3, 3, 5);
  ASSERT_EQ(single.size(), 5u);
  EXPECT_NEAR(single.front(), 2.6, 1e-12);
  EXPECT_NEAR(single.back(), 3.4, 1e-12);
}

TEST(SvgLineChart, PlacesPointsInThePlotArea) {
  // 600 x 300: plot area x 64 .. 450 (margins 64 and 150), y 32 .. 256 (margins 32 and 44).
  // x spans the data (0 .. 10), y the ticks of [0, 1] (0 .. 1).
  const std::string svg = svg_line_chart({"t", "step", "loss"}, {{"a<b", {{0, 0}, {10, 1}, {5, 0.5}}}});
  EXPECT_TRUE(contains(svg, "points=\"64.00,256.00 450.00,32.00 257.00,144.00\"")) << svg;
  EXPECT_TRUE(contains(svg, ">a&lt;b</text>"));
  EXPECT_FALSE(contains(svg, "a<b"));
  // Whole-number x (epochs) gets whole-number tick labels only.
  const std::string epochs = svg_line_chart({"t", "epoch", ""}, {{"bleu", {{1, 0.2}, {2, 0.3}, {3, 0.25}}}});
  EXPECT_TRUE(contains(epochs, ">2</text>")) << epochs;
  EXPECT_FALSE(contains(epochs, ">1.5</text>"));
  EXPECT_FALSE(contains(epochs, ">2.0</text>"));
  // One point is a dot; no finite point at all says so.
  EXPECT_TRUE(contains(svg_line_chart({"t", "x", "y"}, {{"one", {{2, 3}}}}), "<circle"));
  EXPECT_TRUE(contains(svg_line_chart({"t", "x", "y"}, {{"none", {{1, NAN}}}}), "no data yet"));
}

// A run folder as training leaves it: config, run record, three epochs of metrics (the best
// bleu4 at epoch 2), test scores, and one sample whose overlay is a solid red square.
void make_run_folder(const std::filesystem::path& run, double bleu_scale = 1.0) {
  write_file(run / "config.yaml", "train:\n  val_metric: bleu4\n  epochs: 3\n");
  write_file(run / "overrides.yaml", "- train.epochs=3\n");
  write_file(
      run / "run.yaml",
      "command: train\nargv: [saccade, train, train.epochs=3]\nchoices: {dataset: shapes}\n"
      "host: box\nstarted: 2026-01-02T03:04:05+0000\nversion: 0.1.0\ncommit: abc1234\n");
  {
    MetricsCsv csv(run / "metrics.csv", {"kind", "epoch", "step", "loss", "lr", "bleu4", "cider_d"});
    const double bleu[] = {0.31, 0.47, 0.42};
    for (int epoch = 1; epoch <= 3; ++epoch) {
      csv.write(
          {{"kind", "train"},
           {"epoch", std::to_string(epoch)},
           {"step", std::to_string(10 * epoch)},
           {"loss", MetricsCsv::number(4.0 - epoch)},
           {"lr", "0.001"}});
      csv.write(
          {{"kind", "val"},
           {"epoch", std::to_string(epoch)},
           {"step", std::to_string(10 * epoch)},
           {"bleu4", MetricsCsv::number(bleu[epoch - 1] * bleu_scale)},
           {"cider_d", MetricsCsv::number(epoch * 0.5)}});
    }
  }
  SplitResults test{"test", "greedy", 2, {"7"}, {{"7", "a red square"}}, {}, {}};
  test.scores.bleu = {0.9, 0.8, 0.7, 0.6125};
  test.scores.cider_d = 2.25;
  write_split_results(run / "results", test);
  std::filesystem::create_directories(run / "samples");
  write_image_file(
      run / "samples/000_7.png", torch::tensor({255, 0, 0}, torch::kUInt8).expand({48, 48, 3}).contiguous());
  const Json sample = Json::object(
      {{"image_id", "7"},
       {"caption", "a red square"},
       {"log_prob", -1.5},
       {"references", Json::array({"a <b>red</b> square"})},
       {"file", "000_7.png"}});
  write_json_file(run / "samples" / kSamplesIndex, Json::array({sample}));
}

TEST(RunReport, HoldsMetricsCurvesSamplesAndConfigInline) {
  TempDir dir;
  const auto run = dir / "run";
  make_run_folder(run);
  write_run_report(run);
  const std::string html = read_file(run / "report.html");
  for (const char* id : {"summary", "metrics", "curves", "samples", "config"})
    EXPECT_TRUE(contains(html, "<section id=\"" + std::string(id) + "\">")) << id;
  // Best bleu4 is epoch 2's 0.47; the test row comes from results/test_scores.json.
  EXPECT_TRUE(contains(html, "<td>validation, best bleu4</td><td class=\"number\">2</td>"));
  EXPECT_TRUE(contains(html, "<td class=\"number\">0.4700</td>"));
  EXPECT_TRUE(contains(html, "<td class=\"number\">0.6125</td>"));
  EXPECT_TRUE(contains(html, "<td class=\"number\">n/a</td>"));  // METEOR unavailable, not 0
  EXPECT_TRUE(contains(html, "saccade train train.epochs=3"));
  // The overlay is the PNG file itself, base64-encoded inline; references are escaped.
  EXPECT_TRUE(
      contains(html, "src=\"data:image/png;base64," + base64_encode(read_file(run / "samples/000_7.png"))));
  EXPECT_TRUE(contains(html, "reference: a &lt;b&gt;red&lt;/b&gt; square"));
  // Self-contained: nothing is fetched, nothing runs.
  EXPECT_FALSE(contains(html, "src=\"http"));
  EXPECT_FALSE(contains(html, "href=\"http"));
  EXPECT_FALSE(contains(html, "<script"));
  EXPECT_FALSE(contains(html, "<link"));
  EXPECT_FALSE(contains(html, "Hard attention"));  // a soft-attention run has no REINFORCE curves
}

TEST(RunReport, ShapesScoresShowThePointingGameByKindOfWordAndTwoObjectRelations) {
  TempDir dir;
  const auto run = dir / "run";
  make_run_folder(run);
  SplitResults test{"test", "greedy", 2, {"7"}, {{"7", "a red square"}}, {}, {}};
  ShapesScores shapes;
  shapes.pointing_accuracy = 0.75;
  shapes.pointing_words = 8;
  shapes.pointing_accuracy_by_kind = {0.5, 1.0, std::nullopt};  // colour, shape, size
  shapes.pointing_words_by_kind = {4, 4, 0};
  shapes.pair_relation_accuracy = 0.875;
  shapes.pair_relations = 8;
  shapes.pair_relation_room_baseline = 0.625;
  test.shapes = shapes;
  write_split_results(run / "results", test);
  write_run_report(run);
  const std::string html = read_file(run / "report.html");
  EXPECT_TRUE(contains(html, "<th>by word: colour / shape / size</th>")) << html;
  EXPECT_TRUE(contains(html, "<td class=\"number\">0.750</td>")) << html;
  EXPECT_TRUE(contains(html, "<td class=\"number\">0.500 / 1.000 / -</td>")) << html;
  EXPECT_TRUE(contains(html, "<th>two objects</th><th>relations</th><th>first object's room</th>")) << html;
  EXPECT_TRUE(contains(
      html, "<td class=\"number\">0.875</td><td class=\"number\">8</td><td class=\"number\">0.625</td>"))
      << html;
}

TEST(RunReport, HardAttentionRunsChartTheirReinforceTerms) {
  TempDir dir;
  const auto run = dir / "run";
  make_run_folder(run);
  std::filesystem::remove(run / "metrics.csv");
  {
    MetricsCsv csv(run / "metrics.csv", {"kind", "epoch", "step", "loss", "reinforce", "attention_entropy"});
    csv.write(
        {{"kind", "train"},
         {"epoch", "1"},
         {"step", "10"},
         {"loss", "3"},
         {"reinforce", "-0.5"},
         {"attention_entropy", "12.5"}});
  }
  write_run_report(run);
  const std::string html = read_file(run / "report.html");
  EXPECT_TRUE(contains(html, "Hard attention"));
  EXPECT_TRUE(contains(html, "REINFORCE term"));
  EXPECT_TRUE(contains(html, "attention entropy"));
}

TEST(RunReport, ShowsAFreshRunAndRejectsAFolderThatIsNoRun) {
  TempDir dir;
  write_file(dir / "run/config.yaml", "train:\n  val_metric: cider_d\n");
  write_run_report(dir / "run");
  const std::string html = read_file(dir / "run/report.html");
  EXPECT_TRUE(contains(html, "No validation yet."));
  EXPECT_TRUE(contains(html, "no data yet"));
  EXPECT_TRUE(contains(html, "No samples yet"));
  try {
    write_run_report(dir / "elsewhere");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_TRUE(contains(error.what(), "elsewhere is not a run folder")) << error.what();
  }
}

// A hand-edited scores or samples file of the wrong shape is named in the error.
TEST(RunReport, AFileOfTheWrongShapeIsNamed) {
  TempDir dir;
  const auto run = dir / "run";
  make_run_folder(run);
  const auto expect_named = [&](const std::filesystem::path& file, const std::string& what) {
    try {
      write_run_report(run);
      ADD_FAILURE() << "no error for " << file;
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()), file.string() + ": " + what);
    }
  };
  const auto scores = run / "results/test_scores.json";
  const std::string good_scores = read_file(scores);
  Json edited = read_json_file(scores);
  Json corpus = edited.at("corpus");
  corpus.set("bleu4", "high");
  edited.set("corpus", corpus);
  write_json_file(scores, edited);
  expect_named(scores, "expected a number, got a string");
  write_file(scores, good_scores);
  write_json_file(run / "samples" / kSamplesIndex, Json::array({Json::object({{"image_id", 7}})}));
  expect_named(run / "samples" / kSamplesIndex, "expected a string, got an integer");
}

// A record cut short or of the wrong shape (run.yaml, multirun.yaml), or YAML nested past
// yaml-cpp's limit, is one message naming the file and the key or line, not "bad conversion".
TEST(RunReport, ACutRecordNamesTheFileAndKey) {
  TempDir dir;
  const auto run = dir / "run";
  make_run_folder(run);
  const auto message = [&](const std::string& text) {
    write_file(run / "run.yaml", text);
    return testing::message_of<std::invalid_argument>([&] { write_run_report(run); });
  };
  const std::string record = (run / "run.yaml").string();
  EXPECT_EQ(
      message("command: train\nargv:\n  - saccade\n  -\n"),
      record + ": argv[1]: expected a string, got null");
  EXPECT_EQ(message("command\n"), record + ": top level: expected a mapping, got 'command'");
  EXPECT_EQ(message("command: train\n"), record + ": argv is missing");
  EXPECT_EQ(
      message("argv: [saccade]\nchoices: [dataset]\n"), record + ": choices: expected a mapping, got a list");
  EXPECT_EQ(
      message("argv: [saccade]\nchoices: {dataset: [a]}\n"),
      record + ": choices.dataset: expected a string, got a list");
  write_file(run / "run.yaml", "argv: [saccade]\n");
  write_file(run / "config.yaml", "train: " + std::string(600, '[') + std::string(600, ']') + "\n");
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] {
        write_run_report(run);
      }).rfind((run / "config.yaml").string() + ":1: the YAML nests too deep", 0),
      0u);
}

TEST(SweepReport, ACutRecordNamesTheFileAndKey) {
  TempDir dir;
  const auto sweep = dir / "sweep";
  const std::string record = (sweep / "multirun.yaml").string();
  const auto message = [&](const std::string& text) {
    write_file(sweep / "multirun.yaml", text);
    return testing::message_of<std::invalid_argument>([&] { write_sweep_report(sweep); });
  };
  EXPECT_EQ(
      message("argv: [saccade]\njobs:\n  - [seed=0]\n  -\n"),
      record + ": jobs[1]: expected a list, got null");
  EXPECT_EQ(
      message("argv: [saccade]\njobs:\n  - [seed=0, {a: 1}]\n"),
      record + ": jobs[0][1]: expected a string, got a mapping");
  EXPECT_EQ(message("command: train\nargv: [saccade]\n"), record + ": jobs is missing");
  EXPECT_EQ(message("jobs: [[seed=0]]\n"), record + ": argv is missing");
  EXPECT_EQ(message("argv: saccade\njobs: [[seed=0]]\n"), record + ": argv: expected a list, got 'saccade'");
}

TEST(SweepReport, ComparesJobsAndMarksTheBest) {
  TempDir dir;
  const auto sweep = dir / "sweep";
  write_file(
      sweep / "multirun.yaml",
      "command: train\nargv: [saccade, train, -m, seed=1,2,3]\noverrides: [seed=1,2,3]\n"
      "jobs: [[train.epochs=3, seed=1], [train.epochs=3, seed=2], [train.epochs=3, seed=3]]\n"
      "started: 2026-01-02T03:04:05+0000\n");
  make_run_folder(sweep / "0", 1.0);
  make_run_folder(sweep / "1", 1.5);  // best bleu4 0.705
  write_run_report(sweep / "1");
  write_sweep_report(sweep);
  const std::string html = read_file(sweep / "report.html");
  EXPECT_TRUE(contains(html, "<section id=\"jobs\">"));
  EXPECT_TRUE(contains(html, "<tr class=\"best\"><td><a href=\"1/report.html\">#1</a></td><td>seed=2</td>"));
  EXPECT_TRUE(contains(html, "<tr><td>#0</td><td>seed=1</td><td>finished</td>"));  // no report.html: no link
  EXPECT_TRUE(contains(html, "<tr><td>#2</td><td>seed=3</td><td>not started</td>"));
  EXPECT_FALSE(contains(html, "<td>train.epochs=3"));  // shared by every job: not what tells them apart
  EXPECT_TRUE(contains(html, "bleu4 0.7050"));
  EXPECT_EQ(html.find("bleu4 0.7050"), html.rfind("bleu4 0.7050"));
  EXPECT_TRUE(contains(html, "data-name=\"#0 seed=1\""));
  EXPECT_TRUE(contains(html, "data-name=\"#1 seed=2\""));
  EXPECT_THROW(write_sweep_report(dir / "sweep/0"), std::runtime_error);
}

// A finished job of a compared sweep: its seed, training rates and test scores (shapes metrics
// when `pointing` is given, with `relations` stated relations).
void make_compared_job(
    const std::filesystem::path& job,
    int seed,
    double bleu4,
    const std::vector<double>& rates,
    std::optional<double> pointing = std::nullopt,
    int64_t relations = 0) {
  write_file(job / "config.yaml", "seed: " + std::to_string(seed) + "\ntrain:\n  val_metric: bleu4\n");
  {
    MetricsCsv csv(job / "metrics.csv", {"kind", "epoch", "step", "images_per_s"});
    for (size_t i = 0; i < rates.size(); ++i)
      csv.write(
          {{"kind", "train"},
           {"epoch", "1"},
           {"step", std::to_string(10 * (i + 1))},
           {"images_per_s", MetricsCsv::number(rates[i])}});
  }
  SplitResults test{"test", "greedy", 3, {"7"}, {{"7", "a red square"}}, {}, {}};
  test.scores.bleu = {0.9, 0.8, 0.7, bleu4};
  test.scores.cider_d = 5.0;
  if (pointing) {
    ShapesScores shapes;
    shapes.pointing_accuracy = pointing;
    shapes.pointing_baseline = 0.07;
    shapes.relations = relations;
    if (relations > 0) {
      shapes.pair_relation_accuracy = static_cast<double>(relations) / 1000;
      shapes.pair_relation_room_baseline = 0.25;
    }
    test.shapes = shapes;
  }
  test.parameters = 847397;
  write_split_results(job / "results", test);
}

TEST(SweepComparison, AveragesEachRunOverItsSeeds) {
  TempDir dir;
  const auto sweep = dir / "sweep";
  write_file(
      sweep / "multirun.yaml",
      "command: train\nargv: [saccade, train, -m, experiment=a,b, seed=0,1]\n"
      "jobs: [[experiment=a, seed=0, train.epochs=3], [experiment=a, seed=1, train.epochs=3],\n"
      "       [experiment=b, seed=0, train.epochs=3], [experiment=b, seed=1, train.epochs=3]]\n");
  // Medians of the rates: 110 and (90 + 126) / 2 = 108.
  make_compared_job(sweep / "0", 0, 0.6, {100, 300, 110}, 0.7, 330);
  make_compared_job(sweep / "1", 1, 0.7, {90, 126}, 0.8, 350);
  make_compared_job(sweep / "2", 0, 0.5, {50});
  write_file(sweep / "3/config.yaml", "seed: 1\n");  // started, not finished

  const SweepComparison comparison = write_sweep_report(sweep);
  // Columns no job has (content, recall, ...: null in the scores) are left out.
  EXPECT_EQ(
      comparison.header,
      (std::vector<std::string>{
          "run", "seeds", "BLEU-4", "CIDEr-D", "stated", "two objects", "first object's room", "pointing",
          "random pointing", "train images/s", "parameters"}));
  ASSERT_EQ(comparison.rows.size(), 2u);
  // Means 0.65, 340, 0.34, 0.75, 109; sample standard deviations sqrt(2 * 0.05^2) = 0.0707,
  // sqrt(2 * 10^2) = 14.1, sqrt(2 * 0.01^2) = 0.0141, sqrt(2 * 1^2) = 1.41; equal values have none.
  EXPECT_EQ(
      comparison.rows[0], (std::vector<std::string>{
                              "experiment=a", "0, 1", "0.650 ± 0.071", "5.00", "340 ± 14", "0.340 ± 0.014",
                              "0.250", "0.750 ± 0.071", "0.070", "109 ± 1", "847397"}));
  EXPECT_EQ(
      comparison.rows[1],
      (std::vector<std::string>{
          "experiment=b", "0", "0.500", "5.00", "n/a", "n/a", "n/a", "n/a", "n/a", "50", "847397"}));
  EXPECT_EQ(comparison.unfinished, (std::vector<int>{3}));
  ASSERT_EQ(comparison.jobs.size(), 3u);
  EXPECT_EQ(comparison.jobs[1][0], "1");
  EXPECT_EQ(comparison.jobs[1][1], "experiment=a");
  EXPECT_EQ(comparison.jobs[1][2], "1");
  EXPECT_EQ(comparison.jobs[1][3], "0.7");  // bleu4, unrounded
  EXPECT_EQ(comparison.jobs[1].size(), comparison.job_header.size());

  const std::string markdown = read_file(sweep / "comparison.md");
  EXPECT_EQ(markdown, comparison_markdown(comparison));
  EXPECT_TRUE(contains(markdown, "| experiment=a | 0, 1 | 0.650 ± 0.071 | 5.00 |")) << markdown;
  EXPECT_TRUE(contains(markdown, "| --- | --- | ---: |")) << markdown;
  EXPECT_TRUE(contains(markdown, "Without test scores yet: #3.")) << markdown;
  const std::string csv = read_file(sweep / "comparison.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);  // the header and three finished jobs
  EXPECT_EQ(csv.substr(0, csv.find('\n')), join(comparison.job_header, ","));
  EXPECT_TRUE(contains(csv, "\n2,experiment=b,0,0.5,5,")) << csv;
  const std::string html = read_file(sweep / "report.html");
  EXPECT_TRUE(contains(html, "<section id=\"comparison\">"));
  EXPECT_TRUE(contains(html, "<td class=\"number\">340 ± 14</td>")) << html;
  // The same sweep with only seeds swept is one run.
  write_file(sweep / "multirun.yaml", "jobs: [[seed=0], [seed=1]]\n");
  const SweepComparison seeds_only = compare_sweep(sweep);
  ASSERT_EQ(seeds_only.rows.size(), 1u);
  EXPECT_EQ(seeds_only.rows[0][0], "-");
  EXPECT_EQ(seeds_only.rows[0][1], "0, 1");
}

// A failed job is named as failed, with the first line of its error, whether it left part of its
// folder or none; a job never started stays "not started".
TEST(SweepComparison, FailedJobsAreNamedWithTheirError) {
  TempDir dir;
  const auto sweep = dir / "sweep";
  write_file(
      sweep / "multirun.yaml",
      "argv: [saccade, train, -m, seed=0,1,2,3]\njobs: [[seed=0], [seed=1], [seed=2], [seed=3]]\n");
  make_compared_job(sweep / "0", 0, 0.6, {100});
  write_file(sweep / "1/config.yaml", "seed: 1\n");  // failed after making its folder
  record_job_failure(sweep, 1, "train.init_from=/nowhere: No checkpoint at /nowhere\n  at trainer.cpp");
  record_job_failure(sweep, 2, "No key <seed> & no run");  // failed before it

  const SweepComparison comparison = write_sweep_report(sweep);
  ASSERT_EQ(comparison.failed.size(), 2u);
  EXPECT_EQ(comparison.failed[0].number, 1);
  EXPECT_EQ(comparison.failed[0].error, "train.init_from=/nowhere: No checkpoint at /nowhere");
  EXPECT_EQ(comparison.failed[1].number, 2);
  EXPECT_EQ(comparison.unfinished, (std::vector<int>{3}));
  ASSERT_EQ(comparison.rows.size(), 1u);
  const std::string markdown = read_file(sweep / "comparison.md");
  EXPECT_TRUE(contains(markdown, "\nJob #1 failed: train.init_from=/nowhere: No checkpoint at /nowhere\n"))
      << markdown;
  EXPECT_TRUE(contains(markdown, "\nJob #2 failed: No key <seed> & no run\n")) << markdown;
  const std::string html = read_file(sweep / "report.html");
  EXPECT_TRUE(
      contains(html, "<td>seed=1</td><td>failed: train.init_from=/nowhere: No checkpoint at /nowhere</td>"))
      << html;
  EXPECT_TRUE(contains(html, "<td>seed=2</td><td>failed: No key &lt;seed&gt; &amp; no run</td>")) << html;
  EXPECT_TRUE(contains(html, "<td>seed=3</td><td>not started</td>")) << html;
  // With no finished job, the failures are still named.
  std::filesystem::rename(sweep / "0", dir / "moved");
  const std::string unscored = comparison_markdown(compare_sweep(sweep));
  EXPECT_TRUE(contains(unscored, "No job of the sweep has test scores yet.\n")) << unscored;
  EXPECT_TRUE(contains(unscored, "\nJob #1 failed: ")) << unscored;
}

// Runs headless Chromium on `page`: the DOM after loading into `dom`, a screenshot into
// work/page.png. Returns -1 when the DOM dump failed, else the exit status of the screenshot run.
int render_in_chromium(
    const std::filesystem::path& page, const std::filesystem::path& work, std::string& dom) {
  const std::string flags =
      "--headless --no-sandbox --disable-gpu --disable-background-networking --disable-extensions "
      "--disable-sync --no-first-run --no-default-browser-check --hide-scrollbars --user-data-dir=" +
      (work / "profile").string() + " ";
  const std::string url = "file://" + std::filesystem::absolute(page).string();
  const std::string dump = "timeout 120 chromium " + flags + "--dump-dom " + url + " > " +
                           (work / "dom.html").string() + " 2> " + (work / "dump.log").string();
  if (std::system(dump.c_str()) != 0) return -1;
  dom = read_file(work / "dom.html");
  const std::string shot = "timeout 120 chromium " + flags +
                           "--window-size=1280,2400 --screenshot=" + (work / "page.png").string() + " " +
                           url + " > " + (work / "shot.log").string() + " 2>&1";
  return std::system(shot.c_str());
}

TEST(RunReport, RendersInHeadlessChromium) {
  ASSERT_EQ(std::system("command -v chromium > /dev/null"), 0)
      << "chromium is not installed; scripts/setup.sh installs it (Debian package chromium)";
  TempDir dir;
  const auto run = dir / "run";
  make_run_folder(run);
  write_run_report(run);
  std::string dom;
  ASSERT_EQ(render_in_chromium(run / "report.html", dir.path(), dom), 0) << read_file(dir / "shot.log");
  // The browser parsed the page into the expected elements.
  for (const char* id : {"summary", "metrics", "curves", "samples", "config"})
    EXPECT_TRUE(contains(dom, "<section id=\"" + std::string(id) + "\">")) << id;
  EXPECT_TRUE(contains(dom, "<svg"));
  EXPECT_TRUE(contains(dom, "<polyline"));
  EXPECT_TRUE(contains(dom, "generated: a red square"));
  // The screenshot shows the inline overlay (a 48 x 48 block of pure red) and a chart line in
  // the first series' colour (#1f77b4).
  const torch::Tensor shot = decode_image(dir / "page.png").to(torch::kInt32);  // [H, W, 3]
  EXPECT_EQ(shot.size(1), 1280);
  const auto red = (shot.select(2, 0) == 255) & (shot.select(2, 1) == 0) & (shot.select(2, 2) == 0);
  EXPECT_GE(red.sum().item<int64_t>(), 40 * 40);
  const auto blue = (shot.select(2, 0) == 0x1f) & (shot.select(2, 1) == 0x77) & (shot.select(2, 2) == 0xb4);
  EXPECT_GE(blue.sum().item<int64_t>(), 50);
}

}  // namespace
}  // namespace saccade
