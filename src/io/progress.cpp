// ProgressBar implementation; terminal detection through isatty(stderr).
#include "io/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "io/log.h"

namespace saccade {

ProgressBar::ProgressBar(int64_t total, std::string label, std::string unit)
    : total_(total),
      label_(std::move(label)),
      unit_(std::move(unit)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_),
      interactive_(isatty(fileno(stderr)) != 0) {}

ProgressBar::~ProgressBar() {
  finish();
}

void ProgressBar::advance(int64_t count, const std::vector<std::pair<std::string, double>>& values) {
  done_ += count;
  if (!values.empty()) values_ = values;
  if (!interactive_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && done_ != total_) return;
  last_draw_ = now;
  std::fprintf(stderr, "\r%s\033[K", render().c_str());
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (interactive_) std::fprintf(stderr, "\r\033[K");
  log::info() << render();
}

double ProgressBar::rate() const {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return seconds > 0 ? static_cast<double>(done_) / seconds : 0.0;
}

std::string ProgressBar::format_duration(double seconds) {
  const int64_t total = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  const int64_t hours = total / 3600;
  const int64_t minutes = (total / 60) % 60;
  const int64_t secs = total % 60;
  char text[32];
  if (hours > 0) {
    std::snprintf(
        text, sizeof(text), "%lld:%02lld:%02lld", static_cast<long long>(hours),
        static_cast<long long>(minutes), static_cast<long long>(secs));
  } else {
    std::snprintf(
        text, sizeof(text), "%02lld:%02lld", static_cast<long long>(minutes), static_cast<long long>(secs));
  }
  return text;
}

std::string ProgressBar::render() const {
  std::ostringstream line;
  line << label_ << ' ';
  if (total_ > 0) {
    constexpr int kWidth = 24;
    const double fraction = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
    const int filled = static_cast<int>(fraction * kWidth);
    line << '[' << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] " << done_ << '/'
         << total_;
  } else {
    line << done_;
  }
  const double per_second = rate();
  char rate_text[32];
  std::snprintf(rate_text, sizeof(rate_text), "%.1f", per_second);
  line << ' ' << rate_text << ' ' << unit_ << "/s";
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  line << " elapsed " << format_duration(elapsed);
  if (total_ > 0 && per_second > 0 && done_ < total_) {
    line << " eta " << format_duration(static_cast<double>(total_ - done_) / per_second);
  }
  for (const auto& [name, value] : values_) {
    char value_text[32];
    std::snprintf(value_text, sizeof(value_text), "%.4g", value);
    line << ' ' << name << ' ' << value_text;
  }
  return line.str();
}

}  // namespace saccade
