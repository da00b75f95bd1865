// Logger implementation: one mutex, console to stderr, optional append-only file.
#include "io/log.h"

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <stdexcept>

#include "base/enum_names.h"

namespace saccade::log {
namespace {

struct Sink {
  std::mutex mutex;
  Level console_level = Level::info;
  std::ofstream file;
};

Sink& sink() {
  static Sink instance;
  return instance;
}

std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

}  // namespace

const EnumNames<Level> kLevelNames(
    "log level",
    {{Level::debug, "debug"}, {Level::info, "info"}, {Level::warn, "warn"}, {Level::error, "error"}});

Level parse_level(const std::string& name) {
  return kLevelNames.parse(name);
}

std::string to_string(Level level) {
  return kLevelNames.name(level);
}

void set_console_level(Level level) {
  std::lock_guard<std::mutex> lock(sink().mutex);
  sink().console_level = level;
}

void set_file(const std::filesystem::path& path) {
  std::lock_guard<std::mutex> lock(sink().mutex);
  sink().file.close();
  if (path.empty()) return;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  sink().file.open(path, std::ios::app);
  if (!sink().file) throw std::runtime_error("Could not open log file: " + path.string());
}

void write(Level level, const std::string& line) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (level >= s.console_level) {
    if (level >= Level::warn) {
      std::cerr << to_string(level) << ": " << line << '\n';
    } else {
      std::cerr << line << '\n';
    }
  }
  if (s.file.is_open() && level >= Level::info) {
    s.file << '[' << timestamp() << "][" << to_string(level) << "] " << line << '\n';
    s.file.flush();
  }
}

}  // namespace saccade::log
