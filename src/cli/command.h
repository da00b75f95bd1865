// The contract between the `saccade` front end (main.cpp) and each command.
//
// main.cpp parses the command line into an Invocation, composes the config (for commands that
// use one), expands a multirun into jobs, creates each job's run folder, applies the runtime
// settings, and calls the command's `run` once per job with a Job.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "device/placement.h"
#include "dist/process_group.h"

namespace saccade::cli {

// Exit codes: 0 success, 1 a run failed (I/O, numerics, state), 2 usage or configuration error.
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

struct FlagSpec {
  std::string name;        // "--run"
  std::string value_name;  // "DIR"; empty for a boolean switch
  std::string help;        // one line
};

struct Invocation;
struct Job;

struct CommandSpec {
  std::string name;                  // "train"
  std::string summary;               // one line for `saccade --help`
  std::string description;           // a paragraph for `saccade <name> --help`
  std::vector<FlagSpec> flags;       // command-specific flags
  bool composes_config = true;       // whether configs/ is composed (and overrides accepted)
  bool creates_run_folder = false;   // whether each job gets a run folder under run.dir
  bool accepts_positional = false;   // whether bare arguments (files) are accepted
  int (*run)(const Job&) = nullptr;  // nullptr: "not implemented yet"
  bool data_parallel = false;        // joins the job torchrun's variables describe (dist/), --nproc
  // Reads and validates the job's settings without touching a file: a bad value is refused
  // before the run folder exists. nullptr: nothing to check early.
  void (*check)(const Config&) = nullptr;
};

struct Invocation {
  const CommandSpec* command = nullptr;
  std::vector<std::string> argv;  // the whole command line, argv[0] included
  std::map<std::string, std::string>
      flags;  // command-specific flags given ("--json" -> ""), the last value of each
  std::map<std::string, std::vector<std::string>>
      flag_values;                      // every value of each, in order (--run A --run B)
  std::vector<std::string> positional;  // bare arguments
  ComposeRequest request;               // config dir/name and overrides
  bool multirun = false;

  bool has_flag(const std::string& name) const { return flags.count(name) > 0; }
  // The value of a flag, or `fallback` when it was not given.
  std::string flag(const std::string& name, const std::string& fallback = "") const;
  // The flag's value as an integer >= 1. Throws std::invalid_argument naming the flag otherwise.
  int64_t positive_flag(const std::string& name, const std::string& fallback) const;
  // The flag's value as an integer in [low, high]; otherwise std::invalid_argument:
  // "<name> must be <expected>, got '<value>'".
  int64_t integer_flag(
      const std::string& name,
      const std::string& fallback,
      int64_t low,
      int64_t high,
      const std::string& expected) const;
};

struct Job {
  const Invocation* invocation = nullptr;
  Composition composition;             // empty for commands that compose no config
  std::vector<std::string> overrides;  // this job's overrides (a multirun job's own values)
  int number = 0;                      // job number within a multirun, 0 for a single run
  std::filesystem::path run_dir;       // empty unless the command creates run folders
  ProcessGroup* group = nullptr;       // data-parallel peers (data_parallel commands); null = alone
  Placement placement;                 // runtime.device and runtime.precision, resolved for this process

  // The invocation's config folder and name with this job's overrides (for load_trained_run).
  ComposeRequest request() const;
};

// Every command saccade knows, in `--help` order.
const std::vector<CommandSpec>& commands();

// Implemented commands (one file each under cli/).
int run_serve(const Job& job);
int run_train(const Job& job);
void check_train(const Config& config);
int run_extract(const Job& job);
int run_score(const Job& job);
int run_bench(const Job& job);
int run_prepare(const Job& job);
int run_eval(const Job& job);
int run_caption(const Job& job);
int run_visualize(const Job& job);
int run_report(const Job& job);

}  // namespace saccade::cli
