// A multirun's pages: report.html listing its jobs, and the comparison of its runs
// (comparison.md, comparison.csv), written beside multirun.yaml after every job and printed at
// the end of `saccade train -m`.
//
//   const SweepComparison comparison = write_sweep_report(sweep_dir);
//   std::cout << comparison_markdown(comparison);
//
// The comparison puts jobs whose overrides differ only in `seed` on one row, as one run: each
// number is the mean over its seeds, with the sample standard deviation where they differ. The
// numbers are each job's test scores (results/test_scores.json: BLEU-4 and CIDEr-D, the shapes
// world's attention and content metrics, the model's parameters) and its training speed (the
// median images/s of metrics.csv's training rows, which the first steps' warm-up does not move).
// A job without test scores yet is named as unfinished and left out of the means; a job that
// failed (its one-line error in <sweep>/<number>/failure.txt, which record_job_failure writes) is
// named as failed, with its error, and left out too.
//
// Pages are built only from the sweep folder's files, so `saccade report --run SWEEP` rebuilds
// them at any time. A malformed input file is a std::invalid_argument naming it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace saccade {

struct SweepJob {
  int number = 0;
  std::filesystem::path dir;           // <sweep>/<number>
  std::vector<std::string> overrides;  // as multirun.yaml lists them
  std::vector<std::string> swept;      // those not shared by every job: what tells it apart
  std::string failure;                 // the error it failed with; "" when it has not failed
};

// Records that job `number` of the sweep failed with `error` (its first line), for the sweep's
// pages to read; creates the job's folder when the job failed before making it.
void record_job_failure(const std::filesystem::path& sweep_dir, int number, const std::string& error);

// multirun.yaml's jobs, in launch order. Throws std::runtime_error when sweep_dir has no
// multirun.yaml.
std::vector<SweepJob> read_sweep_jobs(const std::filesystem::path& sweep_dir);

struct SweepComparison {
  std::vector<std::string> header;             // "run", "seeds", then each number some job has
  std::vector<std::vector<std::string>> rows;  // one per run, in sweep order: "0.833 ± 0.012"
  std::vector<std::string> job_header;         // "job", "run", "seed", then the numbers' keys
  std::vector<std::vector<std::string>> jobs;  // one per finished job, 8 significant digits
  std::vector<int> unfinished;                 // the jobs without test scores yet, not failed
  struct Failed {
    int number;
    std::string error;
  };
  std::vector<Failed> failed;  // the failed jobs, in sweep order
};

SweepComparison compare_sweep(const std::filesystem::path& sweep_dir);

// The table in Markdown, with a legend saying what each number is (one line when no job has
// finished), then a line for each failed job.
std::string comparison_markdown(const SweepComparison& comparison);

// Writes <sweep_dir>/report.html (one row per job: its swept values, status, epochs, best
// validation score, test scores, a link to its own page; the comparison; every job's validation
// curve in one chart), comparison.md and comparison.csv (one row per finished job). Returns the
// comparison. Throws std::runtime_error when sweep_dir has no multirun.yaml.
SweepComparison write_sweep_report(const std::filesystem::path& sweep_dir);

}  // namespace saccade
