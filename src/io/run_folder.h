// Run folders: where every run's outputs land, and what they record about the run.
//
// A single run lands in `<run.dir>` (default experiments/<run.name>/<timestamp>/); a multirun in
// `<run.sweep_dir>/<job number>/` with multirun.yaml at the sweep root. Each run folder gets
//   config.yaml     the composed config, interpolations resolved
//   overrides.yaml  the command-line overrides, as given
//   run.yaml        chosen option per group, command line, host, start time, version, commit
//   <command>.log   the log of this run (the logger is pointed at it)
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "io/temporaries.h"  // write_file_atomically

namespace saccade {

struct RunRecord {
  std::string command;                 // "train", "eval", ...
  std::vector<std::string> argv;       // the full command line
  std::vector<std::string> overrides;  // the overrides that composed this run
};

// The project version and the commit it was built from ("0.1.0", "a1b2c3d-dirty").
std::string saccade_version();
std::string saccade_commit();

// Creates `dir` (error if it exists and is not empty), writes config.yaml, overrides.yaml and
// run.yaml, and points the logger at `dir/<command>.log`. Returns `dir`.
std::filesystem::path create_run_folder(
    const std::filesystem::path& dir, const Composition& composition, const RunRecord& record);

// Writes multirun.yaml at a sweep root: the command line, the sweep overrides and every job's
// overrides in launch order.
void write_multirun_record(
    const std::filesystem::path& sweep_dir,
    const RunRecord& record,
    const std::vector<std::vector<std::string>>& jobs);

// The whole content of `path`; std::runtime_error "Could not read <path>" when it cannot be read.
std::string read_file_bytes(const std::filesystem::path& path);

// A 64-bit FNV-1a digest of a file's bytes, as 16 hex digits: whether two files hold the same
// content. Throws std::runtime_error naming the file when it cannot be read.
std::string file_digest(const std::filesystem::path& path);

}  // namespace saccade
