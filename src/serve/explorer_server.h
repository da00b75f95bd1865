// The explorer over HTTP: one page and a small JSON API, served by cpp-httplib's threads.
//
//   ExplorerServer server(explorer, options);
//   const int port = server.bind();   // throws, naming host:port, when it cannot listen
//   server.run();                     // until stop() (from another thread)
//
// Routes (docs/serve.md documents the API):
//   GET  /                 the page (serve/explorer_page.html, built into the binary)
//   GET  /runs             Explorer::runs_json
//   GET  /runs/<i>/images  Explorer::images_json
//   POST /caption?...      Explorer::caption: the query (serve/caption_query.h), the image as body
// Every answer is JSON but the page's; an error is {"error": one sentence} with a 4xx status for
// what the client sent (an unknown route 404, a body over serve.max_upload_bytes 413, a request
// httplib cannot parse 400) and 500 for the server's own failure. Bodies over the limit are
// refused from their Content-Length before they are read, so memory per connection stays
// bounded, and serve.threads connections are served at once (the others wait).
#pragma once

#include <memory>

#include "serve/explorer.h"
#include "serve/serve_options.h"

namespace saccade {

class ExplorerServer {
 public:
  ExplorerServer(Explorer& explorer, const ServeOptions& options);
  ~ExplorerServer();
  ExplorerServer(const ExplorerServer&) = delete;
  ExplorerServer& operator=(const ExplorerServer&) = delete;

  // Binds options.host:options.port (port 0: a free one) and returns the port. Throws
  // std::runtime_error "cannot listen on HOST:PORT: <reason>" (a port in use, an address this
  // machine does not have).
  int bind();
  // Serves until stop(); returns false when listening failed.
  bool run();
  // Makes run() return; safe from any thread. Does nothing before run() listens.
  void stop();
  // Whether run() is listening.
  bool running() const;

 private:
  struct Routes;
  std::unique_ptr<Routes> routes_;
};

// The page, built into the binary from serve/explorer_page.html.
extern const char* const kExplorerPage;

}  // namespace saccade
