// Run folder creation and the records written into it.
#include "io/run_folder.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "base/text.h"
#include "config/yaml_tree.h"
#include "io/host_name.h"
#include "io/log.h"
#include "io/temporaries.h"

namespace saccade {
namespace {

std::string now_iso8601() {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[40];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S%z", &local);
  return text;
}

std::string emit(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

YAML::Node string_list(const std::vector<std::string>& items) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const auto& item : items) list.push_back(item);
  return list;
}

// What create_run_folder made for a run folder of this process whose run has not started: whether
// the folder was there (empty) before, and the folders above it that it created, innermost first.
struct MadeRunFolder {
  bool existed = false;
  std::vector<std::filesystem::path> made_parents;
};

struct MadeRunFolders {
  std::mutex mutex;
  std::map<std::filesystem::path, MadeRunFolder> folders;
};

MadeRunFolders& made_run_folders() {
  static MadeRunFolders made;
  return made;
}

// Records, before create_run_folder makes anything, what it is about to make for `dir`.
void remember_made(const std::filesystem::path& dir) {
  MadeRunFolder made;
  made.existed = std::filesystem::exists(dir);
  for (auto parent = dir.parent_path(); !parent.empty() && !std::filesystem::exists(parent);
       parent = parent.parent_path())
    made.made_parents.push_back(parent);
  MadeRunFolders& all = made_run_folders();
  const std::lock_guard<std::mutex> lock(all.mutex);
  all.folders[dir] = made;
}

// The record of `dir`, taken out of the list; std::nullopt when this process has none.
std::optional<MadeRunFolder> forget_made(const std::filesystem::path& dir) {
  MadeRunFolders& all = made_run_folders();
  const std::lock_guard<std::mutex> lock(all.mutex);
  const auto found = all.folders.find(dir);
  if (found == all.folders.end()) return std::nullopt;
  MadeRunFolder made = found->second;
  all.folders.erase(found);
  return made;
}

// Removes what create_run_folder made for `dir` in this process (see UnstartedRunFolder). Never
// throws: it runs while a refusal unwinds.
void take_back(const std::filesystem::path& dir) noexcept {
  try {
    const std::optional<MadeRunFolder> made = forget_made(dir);
    if (!made) return;
    log::set_file("");  // the log file is in the folder
    std::error_code error;
    if (made->existed) {
      // Empty when create_run_folder began: all it holds now is this attempt's.
      std::vector<std::filesystem::path> entries;
      for (const auto& entry : std::filesystem::directory_iterator(dir)) entries.push_back(entry.path());
      for (const auto& entry : entries) {
        remove_tree(entry, error);
        if (error) break;
      }
    } else {
      remove_tree(dir, error);
    }
    for (const auto& parent : made->made_parents) {
      if (::rmdir(parent.c_str()) != 0) break;  // not empty: something else is in it now
    }
    if (error)
      log::warn() << "Could not remove the unstarted run folder " << dir.string() << ": " << error.message();
  } catch (const std::exception& failure) {
    log::warn() << "Could not remove the unstarted run folder " << dir.string() << ": " << failure.what();
  }
}

// config.yaml, overrides.yaml and run.yaml.
void write_run_records(
    const std::filesystem::path& dir, const Composition& composition, const RunRecord& record) {
  write_file_atomically(dir / "config.yaml", composition.config.to_yaml(true));
  write_file_atomically(dir / "overrides.yaml", emit(string_list(record.overrides)));

  YAML::Node run;
  run["command"] = record.command;
  run["argv"] = string_list(record.argv);
  YAML::Node choices(YAML::NodeType::Map);
  for (const auto& [group, option] : composition.choices) {
    choices[group] = option ? YAML::Node(*option) : YAML::Node(YAML::NodeType::Null);
  }
  run["choices"] = choices;
  run["host"] = host_name();
  run["started"] = now_iso8601();
  run["version"] = saccade_version();
  run["commit"] = saccade_commit();
  write_file_atomically(dir / "run.yaml", emit(run));
}

}  // namespace

std::string saccade_version() {
  return SACCADE_VERSION;
}
std::string saccade_commit() {
  return SACCADE_GIT_COMMIT;
}

std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path)) throw std::runtime_error("Could not read " + path.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw std::runtime_error("Could not read " + path.string());
  return bytes.str();
}

std::string file_digest(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path)) throw std::runtime_error("Could not read " + path.string());
  uint64_t hash = kFnv1aOffset;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    hash = fnv1a(buffer.data(), static_cast<size_t>(in.gcount()), hash);
  }
  if (in.bad()) throw std::runtime_error("Could not read " + path.string());
  return hex_digest(hash);
}

std::filesystem::path create_run_folder(
    const std::filesystem::path& dir, const Composition& composition, const RunRecord& record) {
  if (std::filesystem::exists(dir) && !std::filesystem::is_empty(dir)) {
    throw std::runtime_error("Run folder already exists and is not empty: " + dir.string());
  }
  remember_made(dir);
  try {
    std::filesystem::create_directories(dir);
    write_run_records(dir, composition, record);
    log::set_file(dir / (record.command + ".log"));
  } catch (...) {
    take_back(dir);
    throw;
  }
  return dir;
}

UnstartedRunFolder::UnstartedRunFolder(std::filesystem::path dir) : dir_(std::move(dir)) {}

UnstartedRunFolder::~UnstartedRunFolder() {
  if (!started_) take_back(dir_);
}

void UnstartedRunFolder::started() {
  started_ = true;
  forget_made(dir_);
}

YAML::Node read_yaml_file(const std::filesystem::path& path) {
  const YAML::Node root = config_detail::parse_yaml(read_file_bytes(path), path.string());
  config_detail::check_expanded_size(root, path.string());
  return root;
}

void write_multirun_record(
    const std::filesystem::path& sweep_dir,
    const RunRecord& record,
    const std::vector<std::vector<std::string>>& jobs) {
  YAML::Node root;
  root["command"] = record.command;
  root["argv"] = string_list(record.argv);
  root["overrides"] = string_list(record.overrides);
  YAML::Node list(YAML::NodeType::Sequence);
  for (const auto& job : jobs) list.push_back(string_list(job));
  root["jobs"] = list;
  root["started"] = now_iso8601();
  root["version"] = saccade_version();
  root["commit"] = saccade_commit();
  write_file_atomically(sweep_dir / "multirun.yaml", emit(root));
}

}  // namespace saccade
