// `saccade report --run DIR`: rebuilds report.html of a run folder, or of a sweep folder and its jobs
// (and prints the sweep's comparison).
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "viz/run_report.h"
#include "viz/sweep_report.h"

namespace saccade::cli {
namespace {

// A run folder holds its config.yaml and what training wrote beside it (a folder of config
// files has a config.yaml too).
bool is_run_folder(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "config.yaml") &&
         (std::filesystem::exists(dir / "run.yaml") || std::filesystem::exists(dir / "metrics.csv") ||
          std::filesystem::exists(dir / "checkpoints"));
}

}  // namespace

int run_report(const Job& job) {
  const std::filesystem::path dir = job.invocation->flag("--run");
  if (dir.empty()) throw ConfigError("saccade report needs --run DIR (a run folder or a sweep folder)");
  if (!std::filesystem::is_directory(dir)) throw ConfigError("--run " + dir.string() + ": no such folder");
  if (std::filesystem::exists(dir / "multirun.yaml")) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.is_directory() && is_run_folder(entry.path())) {
        write_run_report(entry.path());
        std::cout << (entry.path() / "report.html").string() << "\n";
      }
    }
    const SweepComparison comparison = write_sweep_report(dir);
    if (!comparison.rows.empty()) std::cout << comparison_markdown(comparison) << "\n";
  } else if (is_run_folder(dir)) {
    write_run_report(dir);
  } else {
    throw ConfigError(
        "--run " + dir.string() +
        ": neither a run folder (config.yaml with run.yaml, metrics.csv or checkpoints/) nor a sweep folder "
        "(multirun.yaml)");
  }
  std::cout << (dir / "report.html").string() << "\n";
  return 0;
}

}  // namespace saccade::cli
