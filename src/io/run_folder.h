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
// run.yaml, and points the logger at `dir/<command>.log`. Returns `dir`. A failure part-way takes
// back what it made, as ~UnstartedRunFolder does.
std::filesystem::path create_run_folder(
    const std::filesystem::path& dir, const Composition& composition, const RunRecord& record);

// A run folder that create_run_folder filled in this process, taken back if its run is refused
// before it starts, so that a refusal at set-up (train.init_from, a feature cache, the data)
// leaves no folder behind.
//
//   UnstartedRunFolder unstarted(job.run_dir);  // before the set-up that may refuse
//   ...                                         // set-up: a throw takes the folder back
//   unstarted.started();                        // the run is under way: the folder stays
//
// Taking back stops the logger writing into the folder, then removes the folder and the folders
// above it that create_run_folder made (each only if empty); a folder that existed (empty) before
// stays, emptied. A folder this process did not fill with create_run_folder (another rank's, a
// resumed run's, the user's), or whose run started, is never touched. A killed process leaves
// the folder as it was.
class UnstartedRunFolder {
 public:
  explicit UnstartedRunFolder(std::filesystem::path dir);
  ~UnstartedRunFolder();
  UnstartedRunFolder(const UnstartedRunFolder&) = delete;
  UnstartedRunFolder& operator=(const UnstartedRunFolder&) = delete;

  void started();

 private:
  std::filesystem::path dir_;
  bool started_ = false;
};

// A YAML file a run keeps (config.yaml, run.yaml, multirun.yaml, a checkpoint's config.yaml).
// std::runtime_error "Could not read <path>" when it cannot be read; ConfigError naming the file
// and line when it is not YAML or nests too deep, naming the file when it expands too far.
YAML::Node read_yaml_file(const std::filesystem::path& path);

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
