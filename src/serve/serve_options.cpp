#include "serve/serve_options.h"

namespace saccade {
namespace {

int64_t bounded(const Config& config, const std::string& key, int64_t low, int64_t high) {
  const auto value = config.get<int64_t>(key);
  if (value < low || value > high) {
    throw ConfigError(
        key + "=" + std::to_string(value) + " is out of range [" + std::to_string(low) + ", " +
        std::to_string(high) + "]");
  }
  return value;
}

}  // namespace

ServeOptions serve_options_from(const Config& config) {
  ServeOptions options;
  options.max_upload_bytes = bounded(config, "serve.max_upload_bytes", 1024, int64_t{1} << 40);
  options.threads = bounded(config, "serve.threads", 1, 256);
  options.timeout_s = bounded(config, "serve.timeout_s", 1, 3600);
  return options;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace saccade
