// MetricsCsv read back: what the writer wrote, empty cells absent, a torn last row dropped,
// malformed rows named by file and line.
#include "io/metrics_csv.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace saccade::testing {
namespace {

TEST(MetricsCsv, ReadsBackWhatWasWritten) {
  TempDir dir;
  {
    MetricsCsv csv(dir / "metrics.csv", {"kind", "epoch", "loss", "bleu4"});
    csv.write({{"kind", "train"}, {"epoch", "1"}, {"loss", MetricsCsv::number(2.5)}});
    csv.write({{"kind", "val"}, {"epoch", "1"}, {"bleu4", MetricsCsv::number(0.125)}});
  }
  const MetricsTable table = read_metrics_csv(dir / "metrics.csv");
  EXPECT_EQ(table.columns, (std::vector<std::string>{"kind", "epoch", "loss", "bleu4"}));
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].at("kind"), "train");
  EXPECT_EQ(MetricsTable::number(table.rows[0], "loss"), 2.5);
  EXPECT_EQ(table.rows[0].count("bleu4"), 0u);
  EXPECT_EQ(MetricsTable::number(table.rows[0], "bleu4"), std::nullopt);
  EXPECT_EQ(MetricsTable::number(table.rows[1], "bleu4"), 0.125);
}

TEST(MetricsCsv, DropsARowCutOffMidWrite) {
  TempDir dir;
  write_file(dir / "metrics.csv", "kind,step,loss\ntrain,20,2.5\ntrain,40,2.");
  const MetricsTable table = read_metrics_csv(dir / "metrics.csv");
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_EQ(table.rows[0].at("step"), "20");
}

TEST(MetricsCsv, NamesFileAndLineOfAMalformedRow) {
  TempDir dir;
  write_file(dir / "metrics.csv", "kind,step,loss\ntrain,20,2.5\ntrain,40,lots\n");
  try {
    read_metrics_csv(dir / "metrics.csv");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("metrics.csv:3: column 'loss' holds 'lots'"), std::string::npos)
        << error.what();
  }
  write_file(dir / "wide.csv", "kind,step\ntrain,20,2.5\n");
  EXPECT_THROW(read_metrics_csv(dir / "wide.csv"), std::invalid_argument);
  EXPECT_THROW(read_metrics_csv(dir / "absent.csv"), std::runtime_error);
}

}  // namespace
}  // namespace saccade::testing
