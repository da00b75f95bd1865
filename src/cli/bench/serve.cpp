// `saccade bench serve --run DIR`: the explorer's latency as its users feel it. Serves the run on a
// free loopback port in this process, then clients on their own threads, each with its own
// keep-alive connection, send POST /caption with one image (--image FILE, or the run's first test
// image) as fast as answers come back. For concurrency 1 and 4 and for greedy and beam 3 it prints
// the latency percentiles (p50, p90, p99, max) and the requests answered per second, after 10
// untimed requests. Every answer must be 200: a failed request stops the bench.
#include <httplib.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench/bench.h"
#include "cli/runtime.h"
#include "decode/trained_run.h"
#include "serve/explorer.h"
#include "serve/explorer_server.h"

namespace saccade::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct LoadResult {
  std::vector<double> latencies_ms;  // sorted
  double seconds = 0;
};

// `total` requests of `target` with `image` from `clients` threads at once.
LoadResult load(int port, const std::string& target, const std::string& image, int clients, int total) {
  std::atomic<int> next{0};
  std::vector<std::vector<double>> per_client(static_cast<size_t>(clients));
  std::vector<std::string> failures(static_cast<size_t>(clients));
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);  // as browsers do: the body is not held back behind the headers
      while (next.fetch_add(1) < total) {
        const auto sent = Clock::now();
        const auto answer = client.Post(target.c_str(), image, "application/octet-stream");
        if (!answer || answer->status != 200) {
          failures[c] = answer ? answer->body : "no answer: " + httplib::to_string(answer.error());
          return;
        }
        per_client[c].push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  LoadResult result;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (size_t c = 0; c < per_client.size(); ++c) {
    if (!failures[c].empty()) throw std::runtime_error("POST " + target + " failed: " + failures[c]);
    result.latencies_ms.insert(result.latencies_ms.end(), per_client[c].begin(), per_client[c].end());
  }
  std::sort(result.latencies_ms.begin(), result.latencies_ms.end());
  return result;
}

double percentile(const std::vector<double>& sorted, double p) {
  const size_t index = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

std::string image_bytes(const Job& job, const Explorer& explorer) {
  std::filesystem::path file = job.invocation->flag("--image", "");
  if (file.empty()) {
    if (explorer.test_images(0).empty())
      throw std::invalid_argument("the run offers no test images to send; give --image FILE");
    file = explorer.test_images(0).front().path;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::invalid_argument("--image " + file.string() + ": cannot read it");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void print_load(const std::string& search, int clients, const LoadResult& result) {
  const auto& l = result.latencies_ms;
  std::printf(
      "  %-8s concurrency %d: %4zu requests, p50 %7.2f ms, p90 %7.2f ms, p99 %7.2f ms, max %7.2f ms, %7.1f "
      "requests/s\n",
      search.c_str(), clients, l.size(), percentile(l, 50), percentile(l, 90), percentile(l, 99), l.back(),
      static_cast<double>(l.size()) / result.seconds);
}

}  // namespace

int bench_serve(const Job& job) {
  const Invocation& invocation = *job.invocation;
  if (!invocation.has_flag("--run")) throw std::invalid_argument("saccade bench serve needs --run DIR");
  const int total = static_cast<int>(invocation.positive_flag("--requests", "200"));
  const std::string dir = invocation.flag("--run");
  Explorer explorer({{load_trained_run(dir, job.request(), job.placement), {}}});
  ServeOptions options = serve_options_from(job.composition.config);
  options.port = 0;
  const std::string image = image_bytes(job, explorer);
  ExplorerServer server(explorer, options);
  const int port = server.bind();
  std::atomic<bool> ended{false};
  std::thread serving([&server, &ended] {
    server.run();
    ended = true;
  });
  // stop() does nothing before run() listens.
  while (!server.running() && !ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (ended) {
    serving.join();
    throw std::runtime_error("the bench's server stopped before it served");
  }
  const Json& run = explorer.runs_json().at("runs").at(0);
  std::cout << "host: " << std::thread::hardware_concurrency() << " cores, " << runtime_environment() << "\n"
            << "serve: " << dir << " (" << run.at("decoder").at("kind").as_string() << " decoder, "
            << run.at("decoder").at("attention_mode").as_string() << " attention, "
            << run.at("image_size").as_int64() << " px crop, grid " << run.at("grid").at(0).as_int64() << "x"
            << run.at("grid").at(1).as_int64() << "), image of " << image.size() << " bytes, "
            << options.threads << " server threads\n";
  try {
    for (const std::string& search : {std::string("greedy"), std::string("beam 3")}) {
      const std::string target =
          search == "greedy" ? "/caption?method=greedy" : "/caption?method=beam&beam_size=3";
      load(port, target, image, 1, 10);  // warm-up: packed weights, the allocator, the connection
      for (const int clients : {1, 4}) print_load(search, clients, load(port, target, image, clients, total));
    }
  } catch (...) {
    server.stop();
    serving.join();
    throw;
  }
  server.stop();
  serving.join();
  return 0;
}

}  // namespace saccade::cli
