#include "serve/explorer_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/text.h"
#include "io/log.h"
#include "serve/request_error.h"

namespace saccade {
namespace {

// The reason phrase of the statuses the explorer answers with.
std::string reason_of(int status) {
  switch (status) {
    case 400:
      return "the request is malformed";
    case 404:
      return "no such page or API route";
    case 405:
      return "the route does not take this method";
    case 408:
      return "the request took too long to arrive";
    case 413:
      return "the request body is larger than serve.max_upload_bytes";
    case 414:
      return "the request line is too long";
    case 415:
      return "the body is not an image";
    case 500:
      return "the server failed";
    default:
      return "HTTP status " + std::to_string(status);
  }
}

void answer_json(httplib::Response& response, int status, const Json& body) {
  response.status = status;
  response.set_content(dump_json(body), "application/json");
}

void answer_error(httplib::Response& response, int status, const std::string& message) {
  answer_json(response, status, Json::object({{"error", message}}));
}

// Runs `answer`, turning what it throws into the JSON error it stands for.
template <typename Answer>
void guarded(httplib::Response& response, Answer answer) {
  try {
    answer();
  } catch (const RequestError& error) {
    answer_error(response, error.status(), first_line(error.what()));
  } catch (const std::exception& error) {
    log::error() << "serve: " << first_line(error.what());
    answer_error(response, 500, first_line(error.what()));
  }
}

// The query parameters in request order.
std::vector<std::pair<std::string, std::string>> parameters_of(const httplib::Request& request) {
  return {request.params.begin(), request.params.end()};
}

}  // namespace

struct ExplorerServer::Routes {
  Routes(Explorer& explorer, const ServeOptions& options) : explorer(explorer), options(options) {}
  Explorer& explorer;
  ServeOptions options;
  httplib::Server server;
  int listening_socket = -1;
};

ExplorerServer::ExplorerServer(Explorer& explorer, const ServeOptions& options)
    : routes_(std::make_unique<Routes>(explorer, options)) {
  httplib::Server& server = routes_->server;
  const size_t threads = static_cast<size_t>(options.threads);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(static_cast<size_t>(options.max_upload_bytes));
  server.set_read_timeout(static_cast<time_t>(options.timeout_s), 0);
  server.set_write_timeout(static_cast<time_t>(options.timeout_s), 0);
  server.set_keep_alive_max_count(100);
  // An answer goes out as headers then body: without TCP_NODELAY the body waits for the client's
  // delayed ACK of the headers (tens of milliseconds on Linux).
  server.set_tcp_nodelay(true);
  // SO_REUSEADDR alone (httplib adds SO_REUSEPORT): a port another server holds is refused.
  server.set_socket_options([routes = routes_.get()](int socket) {
    int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    routes->listening_socket = socket;
  });
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& response) {
        if (response.body.empty()) answer_error(response, response.status, reason_of(response.status));
        return httplib::Server::HandlerResponse::Handled;
      }));
  // A body with neither a length nor chunks would be read until the client gives up: refuse it
  // before reading (`curl -X POST` without -d sends one).
  server.set_pre_routing_handler([](const httplib::Request& request, httplib::Response& response) {
    if (request.method != "POST" || request.has_header("Content-Length") ||
        request.has_header("Transfer-Encoding"))
      return httplib::Server::HandlerResponse::Unhandled;
    answer_error(
        response, 411, "a POST needs a Content-Length header (curl sends one with -d '' or --data-binary)");
    return httplib::Server::HandlerResponse::Handled;
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
    answer_error(response, 500, reason_of(500));
  });
  server.set_logger([](const httplib::Request& request, const httplib::Response& response) {
    log::debug() << "serve: " << request.method << " " << request.path << " " << response.status;
  });
  Explorer& routes_explorer = explorer;
  server.Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_header("Cache-Control", "no-store");
    response.set_content(kExplorerPage, "text/html; charset=utf-8");
  });
  server.Get("/runs", [&routes_explorer](const httplib::Request&, httplib::Response& response) {
    answer_json(response, 200, routes_explorer.runs_json());
  });
  server.Get(
      R"(/runs/(\d{1,6})/images)",
      [&routes_explorer](const httplib::Request& request, httplib::Response& response) {
        guarded(response, [&] {
          answer_json(response, 200, routes_explorer.images_json(std::stoul(request.matches[1].str())));
        });
      });
  // The body is read raw, whatever its Content-Type says (httplib would parse a form's).
  server.Post(
      "/caption", [&routes_explorer](
                      const httplib::Request& request, httplib::Response& response,
                      const httplib::ContentReader& read_body) {
        std::string body;
        const bool read = read_body([&body](const char* data, size_t length) {
          body.append(data, length);
          return true;
        });
        if (!read) {  // over serve.max_upload_bytes (httplib set 413), or the client left
          if (response.status < 400) response.status = 400;
          return;
        }
        guarded(response, [&] {
          const CaptionQuery query = parse_caption_query(parameters_of(request), routes_explorer.searches());
          answer_json(response, 200, routes_explorer.caption(query, body));
        });
      });
}

ExplorerServer::~ExplorerServer() = default;

int ExplorerServer::bind() {
  httplib::Server& server = routes_->server;
  const std::string& host = routes_->options.host;
  errno = 0;
  int port = routes_->options.port;
  bool bound = false;
  if (port == 0) {
    port = server.bind_to_any_port(host);
    bound = port > 0;
  } else {
    bound = server.bind_to_port(host, port);
  }
  if (!bound) {
    const std::string reason = errno != 0 ? std::strerror(errno) : "the address is not one of this machine's";
    throw std::runtime_error(
        "cannot listen on " + host + ":" + std::to_string(routes_->options.port) + ": " + reason);
  }
  // httplib 0.11 listens with a backlog of 5: a burst of connections overflows it and the
  // kernel resets some of them. Listening again on the bound socket only raises the backlog.
  if (::listen(routes_->listening_socket, SOMAXCONN) != 0)
    throw std::runtime_error(
        "cannot listen on " + host + ":" + std::to_string(port) + ": " + std::strerror(errno));
  return port;
}

bool ExplorerServer::run() {
  return routes_->server.listen_after_bind();
}

void ExplorerServer::stop() {
  routes_->server.stop();
}

bool ExplorerServer::running() const {
  return routes_->server.is_running();
}

}  // namespace saccade
