// Run folder creation and the records written into it.
#include "io/run_folder.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/text.h"
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

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
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
  std::filesystem::create_directories(dir);
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

  log::set_file(dir / (record.command + ".log"));
  return dir;
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
