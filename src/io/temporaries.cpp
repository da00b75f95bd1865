// Temporaries beside their targets, and removing the ones dead processes left (see temporaries.h).
#include "io/temporaries.h"

#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <string>

#include "io/log.h"

namespace saccade {
namespace {

// Whether process `pid` runs on this machine (one we may not signal runs too).
bool process_alive(long pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

}  // namespace

std::filesystem::path temporary_for(const std::filesystem::path& target) {
  return target.string() + ".tmp-" + std::to_string(::getpid());
}

int remove_stale_temporaries(const std::filesystem::path& target) {
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : ".";
  const std::string prefix = target.filename().string() + ".tmp";
  std::error_code error;
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::string digits = name.substr(prefix.size());
    if (!digits.empty() && digits.front() == '-')
      digits.erase(0, 1);  // .tmp-<pid>, or .tmp<pid> of older versions
    if (digits.empty() || digits.size() > 9) continue;
    bool numeric = true;
    for (const char c : digits) numeric = numeric && std::isdigit(static_cast<unsigned char>(c));
    if (!numeric || process_alive(std::stol(digits))) continue;
    std::error_code ignored;
    if (std::filesystem::remove_all(entry.path(), ignored) > 0) {
      log::info() << "Removed " << entry.path().string() << ", left by process " << digits
                  << " that no longer runs";
      ++removed;
    }
  }
  return removed;
}

}  // namespace saccade
