// Logging: leveled lines to the console (stderr) and, once a run folder exists, its log file.
//
//   log::info() << "epoch " << epoch << " loss " << loss;
//
// Each statement is one line, written whole when the temporary returned by info()/warn()/...
// goes out of scope; writers are serialized so worker threads never interleave a line.
// Nothing below cli/ writes to stdout or stderr except through this logger.
#pragma once

#include <filesystem>
#include <sstream>
#include <string>

namespace saccade::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

// "debug" | "info" | "warn" | "error"; throws std::invalid_argument naming the value otherwise.
Level parse_level(const std::string& name);
std::string to_string(Level level);

// Lines below this level are dropped on the console (the file always gets info and above).
void set_console_level(Level level);

// Appends every later line to this file (created with its parent folders); "" stops it.
void set_file(const std::filesystem::path& path);

// Writes one finished line. Prefer the stream helpers below.
void write(Level level, const std::string& line);

// Collects one line and writes it on destruction.
class Line {
 public:
  explicit Line(Level level) : level_(level) {}
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  ~Line() { write(level_, stream_.str()); }

  template <typename T>
  Line& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  Level level_;
  std::ostringstream stream_;
};

inline Line debug() {
  return Line(Level::debug);
}
inline Line info() {
  return Line(Level::info);
}
inline Line warn() {
  return Line(Level::warn);
}
inline Line error() {
  return Line(Level::error);
}

}  // namespace saccade::log
