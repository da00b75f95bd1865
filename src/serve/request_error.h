// A request the explorer refuses: the HTTP status (4xx) and one sentence for the JSON answer
// {"error": message}. Everything else thrown while answering is the server's fault (500).
#pragma once

#include <stdexcept>
#include <string>

namespace saccade {

class RequestError : public std::runtime_error {
 public:
  RequestError(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

}  // namespace saccade
