// The run report: one self-contained HTML page per run folder (a sweep's page: sweep_report.h).
//
//   write_run_report(run_dir);      // <run>/report.html from the files the run wrote
//
// A page is built only from files in the folder (config.yaml, run.yaml, metrics.csv,
// results/<split>_scores.json, samples/samples.json and its PNGs), so it can be rebuilt at any
// time (`saccade report --run DIR`) and shows whatever exists so far: the trainer rewrites it
// after every epoch. Everything is inline (SVG curves, PNGs as data: URIs, CSS); the page loads
// nothing from anywhere and runs no script. Sections carry ids (summary, metrics, shapes,
// curves, samples, config) so tools and tests can find them.
//
// Files are written atomically. A malformed input file is a std::invalid_argument naming it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace saccade {

// Writes <run_dir>/report.html. Throws std::runtime_error when run_dir has no config.yaml (it is
// not a run folder) or the page cannot be written.
void write_run_report(const std::filesystem::path& run_dir);

}  // namespace saccade
