// saccade: the command-line front end. Parses `saccade <command> [flags] [overrides]`, composes
// the config, expands a multirun, creates run folders and runs the command once per job.
// Every failure ends here as one line on stderr and exit code 1 (run failed) or 2 (usage/config);
// a sweep runs on past a failed job and ends with the worst job's code.
#include <c10/util/Exception.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/text.h"
#include "cli/command.h"
#include "cli/launcher.h"
#include "cli/runtime.h"
#include "config/config.h"
#include "decode/trained_run.h"
#include "io/log.h"
#include "io/run_folder.h"
#include "viz/sweep_report.h"

namespace saccade::cli {
namespace {

const char* const kGroups[] = {"dataset", "encoder", "decoder", "train", "experiment"};

std::filesystem::path default_config_dir() {
  return std::filesystem::path(SACCADE_SOURCE_DIR) / "configs";
}

// What main() does with an invocation besides running it.
enum class Action { run, print_config, print_defaults, help };

struct Parsed {
  Invocation invocation;
  Action action = Action::run;
  bool resolve_printed_config = false;  // --resolve: as Hydra, --cfg prints unresolved without it
};

std::string usage_line(const CommandSpec& command) {
  std::string line = "usage: saccade " + command.name;
  for (const auto& flag : command.flags) {
    line += " [" + flag.name + (flag.value_name.empty() ? "" : " " + flag.value_name) + "]";
  }
  if (command.accepts_positional) line += " [ARGS...]";
  if (command.composes_config) line += " [-m] [--cfg] [--info defaults] [-cp DIR] [-cn NAME] [OVERRIDES...]";
  return line;
}

void print_global_help(std::ostream& out) {
  out << "saccade " << saccade_version() << ": attention-based image captioning (Show, Attend and Tell)\n\n"
      << "usage: saccade <command> [flags] [key=value overrides...]\n\ncommands:\n";
  for (const auto& command : commands()) {
    out << "  " << command.name << std::string(12 - std::min<size_t>(11, command.name.size()), ' ')
        << command.summary << "\n";
  }
  out << "\nconfig groups (pick with group=option, e.g. encoder=resnet101):\n";
  const auto config_dir = default_config_dir();
  for (const char* group : kGroups) {
    std::string options;
    try {
      options = join(group_options(config_dir, group), ", ");
    } catch (const std::exception&) {
      options = "(none)";
    }
    out << "  " << group << std::string(12 - std::min<size_t>(11, std::string(group).size()), ' ') << options
        << "\n";
  }
  out << "\nflags for config-driven commands:\n"
      << "  --cfg             print the composed, resolved config and exit\n"
      << "  --info defaults   print the final defaults list and exit\n"
      << "  -cp, --config-path DIR   config folder (default: the repository's configs/)\n"
      << "  -cn, --config-name NAME  primary config name (default: config)\n"
      << "  -m, --multirun    sweep: key=a,b  key=range(0,3)  key=choice(a,b)\n"
      << "\noverrides: group=option  a.b=value  +a.b=value (add)  ++a.b=value (add or set)  ~a.b (delete)\n"
      << "Run `saccade <command> --help` for a command's own flags.\n";
}

void print_command_help(const CommandSpec& command) {
  std::cout << usage_line(command) << "\n\n" << command.summary << "\n\n" << command.description << "\n";
  if (!command.flags.empty()) {
    std::cout << "\nflags:\n";
    for (const auto& flag : command.flags) {
      std::string left = flag.name + (flag.value_name.empty() ? "" : " " + flag.value_name);
      std::cout << "  " << left << std::string(std::max<int>(2, 20 - static_cast<int>(left.size())), ' ')
                << flag.help << "\n";
    }
  }
}

const CommandSpec& find_command(const std::string& name) {
  for (const auto& command : commands()) {
    if (command.name == name) return command;
  }
  std::vector<std::string> known;
  for (const auto& command : commands()) known.push_back(command.name);
  throw ConfigError(
      "Unknown command '" + name + "'. Commands: " + join(known, ", ") + " (see saccade --help)");
}

const FlagSpec* find_flag(const CommandSpec& command, const std::string& name) {
  for (const auto& flag : command.flags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

bool is_override(const std::string& token) {
  return token.find('=') != std::string::npos || token.rfind("~", 0) == 0 || token.rfind("+", 0) == 0;
}

Parsed parse_arguments(int argc, char** argv) {
  Parsed parsed;
  Invocation& invocation = parsed.invocation;
  invocation.argv.assign(argv, argv + argc);
  invocation.command = &find_command(argv[1]);
  const CommandSpec& command = *invocation.command;
  invocation.request.config_dir = default_config_dir();

  const std::vector<std::string> args(argv + 2, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string token = args[i];
    std::string inline_value;
    const bool is_flag = token.rfind("-", 0) == 0;
    if (is_flag && token.rfind("--", 0) == 0 && token.find('=') != std::string::npos) {
      inline_value = token.substr(token.find('=') + 1);
      token = token.substr(0, token.find('='));
    }
    auto take_value = [&](const std::string& name) {
      if (!inline_value.empty()) return inline_value;
      if (i + 1 >= args.size()) throw ConfigError("Flag " + name + " needs a value");
      return args[++i];
    };
    if (token == "--help" || token == "-h") {
      parsed.action = Action::help;
    } else if (is_flag && command.composes_config && token == "--cfg") {
      parsed.action = Action::print_config;
      if (i + 1 < args.size() && (args[i + 1] == "job" || args[i + 1] == "all")) ++i;
    } else if (is_flag && command.composes_config && token == "--resolve") {
      parsed.resolve_printed_config = true;
    } else if (is_flag && command.composes_config && token == "--info") {
      const std::string what = i + 1 < args.size() && !is_override(args[i + 1]) ? args[++i] : "defaults";
      if (what != "defaults") throw ConfigError("--info supports only 'defaults', got '" + what + "'");
      parsed.action = Action::print_defaults;
    } else if (is_flag && command.composes_config && (token == "-cp" || token == "--config-path")) {
      invocation.request.config_dir = take_value(token);
    } else if (is_flag && command.composes_config && (token == "-cn" || token == "--config-name")) {
      invocation.request.config_name = take_value(token);
    } else if (is_flag && command.composes_config && (token == "-m" || token == "--multirun")) {
      invocation.multirun = true;
    } else if (is_flag) {
      const FlagSpec* flag = find_flag(command, token);
      if (flag == nullptr) {
        throw ConfigError(
            "Unknown flag '" + token + "' for 'saccade " + command.name + "'. " + usage_line(command));
      }
      invocation.flags[flag->name] = flag->value_name.empty() ? "" : take_value(flag->name);
      invocation.flag_values[flag->name].push_back(invocation.flags[flag->name]);
    } else if (command.composes_config && is_override(token)) {
      invocation.request.overrides.push_back(token);
    } else if (command.accepts_positional) {
      invocation.positional.push_back(token);
    } else {
      throw ConfigError(
          "Unexpected argument '" + token + "' for 'saccade " + command.name + "'. " + usage_line(command));
    }
  }
  // As Hydra: a printout is of one composition, not of a sweep's jobs.
  if (invocation.multirun &&
      (parsed.action == Action::print_config || parsed.action == Action::print_defaults))
    throw ConfigError("Only one of -m, --cfg and --info can be given");
  return parsed;
}

void print_defaults(const Composition& composition) {
  std::cout << "Defaults List\n*************\n";
  for (const auto& entry : composition.defaults) {
    std::cout << "| " << entry.config_path << (entry.is_self ? " (_self_)" : "")
              << " | package: " << (entry.package.empty() ? "<root>" : entry.package)
              << " | parent: " << (entry.parent.empty() ? "-" : entry.parent) << " |\n";
  }
}

// Returns `dir`, or `dir-1`, `dir-2`, ... when a run started in the same second already owns it.
std::filesystem::path unused_folder(const std::filesystem::path& dir) {
  std::filesystem::path candidate = dir;
  for (int suffix = 1; std::filesystem::exists(candidate) && !std::filesystem::is_empty(candidate);
       ++suffix) {
    candidate = dir.string() + "-" + std::to_string(suffix);
  }
  return candidate;
}

// Keys a rank may set for itself: rank 0 alone names the run folders, and how a process computes
// and logs suits its machine (its GPU, its cores).
const std::set<std::string> kPerRankKeys = {"run.dir",         "run.sweep_dir",     "runtime.device",
                                            "runtime.threads", "runtime.log_level", "runtime.check_blas"};

// The leaves of `node` under `key` as "key=value" lines (a list is one leaf), in file order.
void add_config_lines(const YAML::Node& node, const std::string& key, std::vector<std::string>& lines) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string name = entry.first.as<std::string>();
      add_config_lines(entry.second, key.empty() ? name : key + "." + name, lines);
    }
    return;
  }
  if (kPerRankKeys.count(key) > 0) return;
  YAML::Emitter value;
  value << YAML::Flow << node;
  lines.push_back(key + "=" + escape_control_characters(value.c_str()));
}

// "size of dataset.split_file=N bytes" lines for the dataset's caption files: ranks that read
// different copies of the data would train apart. Sizes, not digests, keep the check instant.
void add_dataset_file_lines(const YAML::Node& dataset, std::vector<std::string>& lines) {
  if (!dataset || !dataset.IsMap()) return;  // an absent key's node throws when asked its type
  std::vector<std::pair<std::string, YAML::Node>> files = {{"dataset.split_file", dataset["split_file"]}};
  const YAML::Node captions_files = dataset["captions_files"];
  for (size_t i = 0; captions_files && captions_files.IsSequence() && i < captions_files.size(); ++i)
    files.emplace_back("dataset.captions_files[" + std::to_string(i) + "]", captions_files[i]);
  for (const auto& [key, file] : files) {
    if (!file || !file.IsScalar()) continue;
    std::error_code absent;
    const auto bytes = std::filesystem::file_size(file.as<std::string>(), absent);
    lines.push_back("size of " + key + "=" + (absent ? "no file" : std::to_string(bytes) + " bytes"));
  }
}

// What every rank of a data-parallel job must agree on, one "key=value" line each: the command
// with its arguments and flags, the composed config and the sizes of the dataset's files.
std::string job_text(const Job& job) {
  const Invocation& invocation = *job.invocation;
  std::vector<std::string> lines = {
      "command=" + invocation.command->name,
      "arguments=" + escape_control_characters(join(invocation.positional, " "))};
  // Not --nproc: under torchrun a rank may be given `--nproc 1`, which starts no workers.
  for (const auto& [flag, value] : invocation.flags)
    if (flag != "--nproc") lines.push_back(flag + "=" + escape_control_characters(value));
  const YAML::Node config = YAML::Load(job.composition.config.to_yaml());
  add_config_lines(config, "", lines);
  add_dataset_file_lines(config["dataset"], lines);
  return join(lines, "\n");
}

// The process group of a data-parallel command's job, made by the first job from the variables
// torchrun sets (`process`), computing on the job's device, and kept in `group` for the next
// jobs; nullptr for other commands and for a single process. Every job's ranks must run the same
// job: with another model a rank would fail inside Gloo, with another learning rate train apart.
ProcessGroup* data_parallel_group(
    const Job& job, const DistOptions& process, std::unique_ptr<ProcessGroup>& group) {
  if (!job.invocation->command->data_parallel || process.world_size == 1) return nullptr;
  const std::string text = job_text(job);
  if (!group) group = std::make_unique<ProcessGroup>(process, job.placement.device);
  group->require_same_job(text);
  return group.get();
}

// Rank 0's `path`, on every rank (the run folder's timestamp is rank 0's).
std::filesystem::path agreed(ProcessGroup* group, const std::filesystem::path& path) {
  if (group == nullptr) return path;
  return group->all_gather(group->is_main() ? path.string() : "").front();
}

// The request a job's config is composed from. A command reading a trained run composes over
// the run's group choices, as load_trained_run does, so that a key only those groups have is
// known (decoder.maps_layer of a Transformer run).
ComposeRequest job_request(const Invocation& invocation, const std::vector<std::string>& overrides) {
  ComposeRequest request = invocation.request;
  request.overrides = overrides;
  if (invocation.command->composes_config && invocation.has_flag("--run")) {
    const auto choices = run_choices(invocation.flag("--run"), invocation.request);
    request.overrides.insert(request.overrides.begin(), choices.begin(), choices.end());
  }
  return request;
}

// Job `number` of the invocation, with `overrides`: its config composed, its runtime applied,
// its device current and its process group joined (`group` keeps the one group of every job),
// its settings checked before any file of the run is written.
Job prepare_job(
    const Invocation& invocation,
    const std::vector<std::string>& overrides,
    int number,
    std::unique_ptr<ProcessGroup>& group) {
  const CommandSpec& command = *invocation.command;
  Job job;
  job.invocation = &invocation;
  job.overrides = overrides;
  job.number = number;
  job.composition = compose(job_request(invocation, job.overrides));
  const Config& config = job.composition.config;
  const RuntimeOptions runtime = runtime_options_from(config);
  validate(runtime);
  const DistOptions process = dist_options_from_environment(config.get<int>("dist.timeout_s"));
  validate(process);
  job.placement = placement_from(config, process.local_rank, process.local_world_size);
  make_current(job.placement.device);
  apply_runtime(runtime, process.local_world_size);
  job.group = data_parallel_group(job, process, group);
  if (job.group != nullptr && !job.group->is_main()) log::set_console_level(log::Level::warn);
  if (command.check != nullptr) command.check(config);
  return job;
}

// Runs job `number` of the invocation: composes and checks it, creates its run folder (and, at
// the first job of a sweep, the sweep folder, kept in `sweep_dir`) and runs the command. Returns
// the command's exit code.
int run_job(
    const Invocation& invocation,
    const std::vector<std::vector<std::string>>& job_overrides,
    size_t number,
    std::unique_ptr<ProcessGroup>& group,
    std::filesystem::path& sweep_dir) {
  const CommandSpec& command = *invocation.command;
  Job job = prepare_job(invocation, job_overrides[number], static_cast<int>(number), group);
  const bool main_rank = job.group == nullptr || job.group->is_main();
  if (command.creates_run_folder) {
    // The main rank names and creates the folders; the other ranks learn where they are.
    if (invocation.multirun && sweep_dir.empty()) {
      if (main_rank) {
        const auto dir = unused_folder(job.composition.config.get<std::string>("run.sweep_dir"));
        write_multirun_record(
            dir, RunRecord{command.name, invocation.argv, invocation.request.overrides}, job_overrides);
        sweep_dir = dir;  // only once multirun.yaml is there: the sweep's pages need it
      }
      sweep_dir = agreed(job.group, sweep_dir);
      log::info() << "Sweep of " << job_overrides.size() << " jobs in " << sweep_dir.string();
    }
    if (main_rank) {
      job.run_dir = invocation.multirun ? sweep_dir / std::to_string(number)
                                        : unused_folder(job.composition.config.get<std::string>("run.dir"));
      create_run_folder(
          job.run_dir, job.composition, RunRecord{command.name, invocation.argv, job.overrides});
    }
    job.run_dir = agreed(job.group, job.run_dir);
    if (!main_rank)
      log::set_file(job.run_dir / "logs" / ("rank" + std::to_string(job.group->rank()) + ".log"));
  }
  if (invocation.multirun) log::info() << "Job #" << number << ": " << join(job.overrides, " ");
  return command.run(job);
}

// What a failure ends as: an exit code and one line.
struct Failure {
  int exit_code = kExitFailure;
  std::string message;
};

// The failure `error` is: usage and config errors (std::invalid_argument) exit 2, the rest 1.
Failure failure_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::invalid_argument& caught) {
    return {kExitUsage, caught.what()};
  } catch (const c10::Error& caught) {
    return {kExitFailure, first_line(caught.what_without_backtrace())};
  } catch (const std::exception& caught) {
    return {kExitFailure, caught.what()};
  } catch (...) {
    return {kExitFailure, "unknown failure"};
  }
}

// A failed job of a sweep, kept until the sweep folder exists to record it in.
struct JobFailure {
  int number = 0;
  std::string message;
};

// After a sweep: the comparison on stdout, and on stderr which jobs failed.
void print_sweep_outcome(
    const std::filesystem::path& sweep_dir,
    const std::optional<SweepComparison>& comparison,
    const std::vector<JobFailure>& failures,
    size_t job_count) {
  if (comparison && (!comparison->rows.empty() || !comparison->failed.empty())) {
    std::cout << "\nComparison (" << (sweep_dir / "comparison.md").string() << "):\n\n"
              << comparison_markdown(*comparison);
  }
  if (failures.empty()) return;
  std::vector<std::string> numbers;
  for (const JobFailure& failure : failures) numbers.push_back("#" + std::to_string(failure.number));
  std::cerr << "saccade: error: " << failures.size() << " of " << job_count
            << " jobs failed: " << join(numbers, ", ") << "\n";
}

// Runs every job, as Hydra's basic launcher does: a sweep goes on past a failed job, records it
// for the sweep's pages, and exits with the worst job's code.
int run_jobs(const Parsed& parsed) {
  const Invocation& invocation = parsed.invocation;
  const Action action = parsed.action;
  const CommandSpec& command = *invocation.command;
  std::vector<std::vector<std::string>> job_overrides;
  if (invocation.multirun) {
    job_overrides = expand_sweeps(invocation.request.overrides, invocation.request.config_dir);
  } else {
    reject_sweeps(invocation.request.overrides);
    job_overrides = {invocation.request.overrides};
  }

  if (action == Action::print_config || action == Action::print_defaults) {
    const Composition composition = compose(job_request(invocation, job_overrides.front()));
    if (action == Action::print_config) {
      std::cout << composition.config.to_yaml(parsed.resolve_printed_config);
    } else {
      print_defaults(composition);
    }
    return 0;
  }
  if (command.run == nullptr) {
    std::cerr << "saccade: '" << command.name << "' is not implemented yet\n";
    return kExitFailure;
  }

  // Ranks that failed apart may wait in different exchanges: a sweep over several processes ends
  // at its first failure, the jobs after it not started.
  const bool ends_at_first_failure = command.data_parallel && dist_options_from_environment(1).world_size > 1;
  // Released when the jobs end, before static destruction (NCCL shuts down in its destructor).
  std::unique_ptr<ProcessGroup> group;
  std::filesystem::path sweep_dir;
  std::optional<SweepComparison> comparison;
  std::vector<JobFailure> failures;
  size_t recorded = 0;  // the failures written into the sweep folder so far
  int worst = 0;
  for (size_t number = 0; number < job_overrides.size(); ++number) {
    int status = kExitFailure;
    std::string message;
    try {
      status = run_job(invocation, job_overrides, number, group, sweep_dir);
      message = "exit code " + std::to_string(status);  // a command that returned, not threw
    } catch (...) {
      if (!invocation.multirun) throw;
      Failure failure = failure_of(std::current_exception());
      status = failure.exit_code;
      message = std::move(failure.message);
    }
    if (invocation.multirun && status != 0) {
      log::error() << "Job #" << number << " failed: " << message;  // into the job's log too
      failures.push_back({static_cast<int>(number), message});
    }
    log::set_file("");
    worst = std::max(worst, status);
    const bool main_rank = group == nullptr || group->is_main();
    if (invocation.multirun && command.creates_run_folder && main_rank && !sweep_dir.empty()) {
      for (; recorded < failures.size(); ++recorded)
        record_job_failure(sweep_dir, failures[recorded].number, failures[recorded].message);
      comparison = write_sweep_report(sweep_dir);
    }
    if (status != 0 && ends_at_first_failure) break;
  }
  if (invocation.multirun) print_sweep_outcome(sweep_dir, comparison, failures, job_overrides.size());
  return worst;
}

// --nproc N, refused above max_local_workers(): cast to an int unchecked, 4294967296 wrapped to 0
// workers, and 1000 forked until the process limit.
int local_worker_count(const Invocation& invocation) {
  const int64_t nproc = invocation.positive_flag("--nproc", "1");
  const int bound = max_local_workers();
  if (nproc > bound) {
    throw ConfigError(
        "--nproc " + std::to_string(nproc) + " is more than the " + std::to_string(bound) +
        " local workers this machine allows (4 per core, at least 8)");
  }
  return static_cast<int>(nproc);
}

// `saccade train --nproc N`: the same command line without --nproc, as N local workers.
int launch_workers(const Invocation& invocation, int nproc) {
  if (invocation.command->name == "bench" &&
      (invocation.positional.size() != 1 || invocation.positional.front() != "decoder")) {
    throw ConfigError("Only `saccade bench decoder` runs on several processes (--nproc)");
  }
  if (std::getenv("WORLD_SIZE") != nullptr) {
    throw ConfigError(
        "--nproc " + std::to_string(nproc) +
        " starts its own workers; WORLD_SIZE is already set by a launcher");
  }
  std::vector<std::string> argv;
  for (size_t i = 0; i < invocation.argv.size(); ++i) {
    if (invocation.argv[i] == "--nproc") {
      ++i;  // and its value
    } else if (invocation.argv[i].rfind("--nproc=", 0) != 0) {
      argv.push_back(invocation.argv[i]);
    }
  }
  return launch_local_workers(nproc, argv);
}

}  // namespace
}  // namespace saccade::cli

int main(int argc, char** argv) {
  using namespace saccade;
  using namespace saccade::cli;
  if (argc < 2) {
    print_global_help(std::cerr);
    return kExitUsage;
  }
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    print_global_help(std::cout);
    return 0;
  }
  if (first == "--version") {
    std::cout << "saccade " << saccade_version() << " (" << saccade_commit() << ")\n";
    return 0;
  }
  try {
    const Parsed parsed = parse_arguments(argc, argv);
    if (parsed.action == Action::help) {
      print_command_help(*parsed.invocation.command);
      return 0;
    }
    if (parsed.action == Action::run && parsed.invocation.has_flag("--nproc")) {
      const int nproc = local_worker_count(parsed.invocation);
      if (nproc > 1) return launch_workers(parsed.invocation, nproc);
    }
    // Only runs that compute pay for the second start-up.
    if (parsed.action == Action::run) {
      choose_thread_waiting(argv);
      keep_freed_memory_for_reuse();
    }
    if (!parsed.invocation.command->composes_config) {
      if (parsed.invocation.command->run == nullptr) {
        std::cerr << "saccade: '" << parsed.invocation.command->name << "' is not implemented yet\n";
        return kExitFailure;
      }
      Job job;
      job.invocation = &parsed.invocation;
      apply_runtime(RuntimeOptions{});
      return parsed.invocation.command->run(job);
    }
    return run_jobs(parsed);
  } catch (...) {
    const Failure failure = failure_of(std::current_exception());
    std::cerr << "saccade: error: " << failure.message << "\n";
    return failure.exit_code;
  }
}
