// How `saccade serve` listens: the address from its flags, the limits from serve.* keys.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace saccade {

struct ServeOptions {
  std::string host = "127.0.0.1";  // --host: loopback unless the user names another address
  int port = 8080;                 // --port; 0 = a free port, logged
  // serve.max_upload_bytes: a larger POST /caption body is refused with HTTP 413 before it is read.
  int64_t max_upload_bytes = 16 << 20;
  // serve.threads: connections served at once; more wait for a free thread.
  int64_t threads = 8;
  // serve.timeout_s: seconds a connection may take to send a request or read its answer.
  int64_t timeout_s = 10;
};

// Reads serve.{max_upload_bytes, threads, timeout_s}; throws ConfigError for a missing key or a
// value out of range (max_upload_bytes >= 1024, 1 <= threads <= 256, 1 <= timeout_s <= 3600).
ServeOptions serve_options_from(const Config& config);

// Whether `host` is a loopback address (127.x.y.z, ::1 or localhost): reachable from this machine
// only.
bool is_loopback(const std::string& host);

}  // namespace saccade
