// `saccade serve` as its users meet it: the binary serves a smoke run trained once for the suite
// on a free loopback port; its API is driven over HTTP and checked against `saccade caption
// --json` on the same image; bad requests get JSON errors with 4xx statuses while the server
// keeps serving; and the page is driven in headless Chromium through ChromeDriver (upload an
// image, hover a word, see its attention drawn).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "io/json.h"
#include "io/temporaries.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

using namespace std::chrono_literals;

// Polls `ready` every 100 ms for up to `seconds`.
template <typename Ready>
bool eventually(Ready ready, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return ready();
}

// A `saccade serve` process on a free loopback port, answering once its runs are loaded.
class ServeProcess {
 public:
  ServeProcess(const std::vector<std::string>& arguments, const std::filesystem::path& work)
      : port_(free_port()), log_(work / ("serve-" + std::to_string(port_) + ".log")) {
    std::vector<std::string> argv = {SACCADE_BINARY,        "serve", "--port",
                                     std::to_string(port_), "-cp",   (source_dir() / "configs").string()};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    process_ = std::make_unique<ChildProcess>(argv, work, log_);
    started_ = eventually(
        [&] { return !process_->running() || log().find("attention explorer is at") != std::string::npos; },
        180);
  }
  bool started() { return started_ && process_->running(); }
  int port() const { return port_; }
  // Empty until the child has opened its log.
  std::string log() const { return std::filesystem::exists(log_) ? read_file(log_) : std::string(); }
  ChildProcess& process() { return *process_; }
  httplib::Client client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(60, 0);
    return client;
  }

 private:
  int port_;
  std::filesystem::path log_;
  std::unique_ptr<ChildProcess> process_;
  bool started_ = false;
};

class ServeTest : public ::testing::Test {
 protected:
  // The run and its server start with the suite's first test, so that a failure to start fails
  // the tests (a failure in SetUpTestSuite would only mark them skipped).
  void SetUp() override {
    if (!work_) {
      work_ = std::make_unique<TempDir>();
      const auto trained = run_saccade(
          {"train", "-cp", (source_dir() / "configs").string(), "experiment=smoke"}, work_->path());
      ASSERT_EQ(trained.exit_code, 0) << trained.err;
      for (const auto& entry : std::filesystem::directory_iterator(work_->path() / "experiments/smoke"))
        run_ = entry.path();
      server_ = std::make_unique<ServeProcess>(
          std::vector<std::string>{"--run", run_.string(), "serve.max_upload_bytes=100000"}, work_->path());
    }
    ASSERT_TRUE(server_ && server_->started()) << (server_ ? server_->log() : "the smoke run did not train");
  }
  static void TearDownTestSuite() {
    if (server_) {
      // SIGTERM is a clean stop: exit code 0.
      EXPECT_EQ(server_->process().stop(SIGTERM), 0) << server_->log();
      EXPECT_NE(server_->log().find("Stopping (Terminated)"), std::string::npos) << server_->log();
    }
    server_.reset();
    work_.reset();
  }

  // A test image of the run's dataset (a 64 px PNG of the shapes world) and its id.
  static std::pair<std::filesystem::path, std::string> test_image(size_t index = 0) {
    auto client = server_->client();
    const auto answer = client.Get("/runs/0/images");
    EXPECT_TRUE(answer && answer->status == 200);
    const Json image = parse_json(answer->body).at("images").at(index);
    for (const auto& entry : std::filesystem::recursive_directory_iterator(work_->path() / "datasets")) {
      if (entry.path().filename() == image.at("file").as_string())
        return {entry.path(), image.at("id").as_string()};
    }
    ADD_FAILURE() << "no file " << image.at("file").as_string();
    return {};
  }

  static Json post_caption(const std::string& query, const std::string& body, int expected_status = 200) {
    auto client = server_->client();
    const auto answer = client.Post(("/caption" + query).c_str(), body, "application/octet-stream");
    EXPECT_TRUE(answer) << query;
    if (!answer) return Json();
    EXPECT_EQ(answer->status, expected_status) << query << ": " << answer->body;
    EXPECT_EQ(answer->get_header_value("Content-Type"), "application/json") << query;
    return parse_json(answer->body);
  }

  static std::unique_ptr<TempDir> work_;
  static std::filesystem::path run_;
  static std::unique_ptr<ServeProcess> server_;
};

std::unique_ptr<TempDir> ServeTest::work_;
std::filesystem::path ServeTest::run_;
std::unique_ptr<ServeProcess> ServeTest::server_;

TEST_F(ServeTest, RunsAreDescribedWithTheirTestImages) {
  auto client = server_->client();
  const auto runs = client.Get("/runs");
  ASSERT_TRUE(runs && runs->status == 200);
  const Json described = parse_json(runs->body).at("runs");
  ASSERT_EQ(described.size(), 1u);
  const Json& run = described.at(0);
  EXPECT_EQ(run.at("dir").as_string(), run_.string());
  EXPECT_EQ(run.at("decoder").at("kind").as_string(), "lstm");
  EXPECT_EQ(run.at("choices").at("decoder").as_string(), "soft") << runs->body;
  EXPECT_GT(run.at("test_images").as_int64(), 0);
  EXPECT_TRUE(run.at("scores").at("corpus").find("bleu4") != nullptr) << runs->body;
  const auto images = client.Get("/runs/0/images");
  ASSERT_TRUE(images && images->status == 200);
  EXPECT_EQ(
      static_cast<int64_t>(parse_json(images->body).at("images").size()), run.at("test_images").as_int64());
  const auto page = client.Get("/");
  ASSERT_TRUE(page && page->status == 200);
  EXPECT_NE(page->body.find("attention explorer"), std::string::npos);
  EXPECT_EQ(page->body.find("http"), std::string::npos) << "the page fetches nothing from outside";
}

// The same image and options give `saccade caption --json`'s record to the bit.
TEST_F(ServeTest, CaptionsAsTheCaptionCommandDoes) {
  const auto [file, id] = test_image();
  const std::string bytes = read_file(file);
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"", {}}, {"?method=beam&beam_size=3&n_best=3", {"--beam", "3", "--n-best", "3"}}};
  for (const auto& [query, flags] : cases) {
    const Json served = post_caption(query, bytes);
    std::vector<std::string> args = {"caption",
                                     file.string(),
                                     "--run",
                                     run_.string(),
                                     "--json",
                                     "--out",
                                     (work_->path() / "overlays").string(),
                                     "--replace"};  // one folder for every case
    args.insert(args.end(), flags.begin(), flags.end());
    const auto printed = run_saccade(args, work_->path());
    ASSERT_EQ(printed.exit_code, 0) << printed.err;
    const Json record = parse_json(printed.out).at(0);
    for (const char* key : {"caption", "words", "log_prob", "finished", "grid", "attention"})
      EXPECT_EQ(served.at(key), record.at(key)) << key << " " << query;
    EXPECT_EQ(served.find("n_best") != nullptr, !flags.empty());
    if (!flags.empty()) {
      EXPECT_EQ(served.at("n_best"), record.at("n_best"));
      EXPECT_EQ(served.at("n_best").size(), 3u);
    }
    // Each word's weights are a distribution over the grid's cells.
    const int64_t cells = served.at("grid").at(0).as_int64() * served.at("grid").at(1).as_int64();
    for (const Json& row : served.at("attention").as_array()) {
      ASSERT_EQ(static_cast<int64_t>(row.size()), cells);
      double sum = 0;
      for (const Json& weight : row.as_array()) sum += weight.as_double();
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
    EXPECT_EQ(served.at("crop").as_string().rfind("data:image/png;base64,iVBORw0KGgo", 0), 0u);
  }
}

// A test image named by id is the same image as its bytes uploaded, with its truth boxes.
TEST_F(ServeTest, TestImagesByIdComeWithTheirBoxes) {
  const auto [file, id] = test_image(1);
  const Json by_id = post_caption("?image=" + id, "");
  const Json uploaded = post_caption("", read_file(file));
  EXPECT_EQ(by_id.at("attention"), uploaded.at("attention"));
  EXPECT_EQ(by_id.at("image").at("id").as_string(), id);
  EXPECT_EQ(uploaded.find("boxes"), nullptr);
  const Json& boxes = by_id.at("boxes");
  ASSERT_GE(boxes.size(), 1u);
  const double side = by_id.at("image").at("width").as_double();
  for (const Json& object : boxes.as_array()) {
    const Json& box = object.at("box");
    EXPECT_LT(box.at(0).as_double(), box.at(2).as_double());
    EXPECT_LE(box.at(2).as_double(), side);
    EXPECT_FALSE(object.at("label").as_string().empty());
  }
  // Sampling repeats with its seed, and another seed may draw otherwise but is still a caption.
  const Json sampled = post_caption("?image=" + id + "&method=sample&temperature=1.5&seed=7", "");
  EXPECT_EQ(
      post_caption("?image=" + id + "&method=sample&temperature=1.5&seed=7", "").at("attention"),
      sampled.at("attention"));
}

TEST_F(ServeTest, BadRequestsAreJsonErrorsAndTheServerKeepsServing) {
  const auto [file, id] = test_image();
  const std::string png = read_file(file);
  struct Case {
    std::string query, body;
    int status;
    std::string error;  // a part of the message
  };
  const Case cases[] = {
      {"?beam=3", png, 400, "unknown parameter 'beam'"},
      {"?method=beam&beam_size=0", png, 400, "beam_size must be >= 1"},
      {"?method=sample&temperature=0", png, 400, "temperature must be a finite number >= 0.0001"},
      {"?method=beam&beam_size=2&n_best=3", png, 400, "n_best must be in [1, 2]"},
      {"?method=beam&beam_size=500", png, 400, "beam_size=500: at most 32"},
      {"?beam_size=three", png, 400, "beam_size=three: expected an integer"},
      {"?method=fast", png, 400, "method=fast: expected greedy, beam or sample"},
      {"?run=3", png, 400, "run=3: no such run; 1 loaded"},
      {"?layer=1", png, 400, "layer: the run's decoder is not a Transformer"},
      {"?seed=1&seed=2", png, 400, "seed is given more than once"},
      {"", "", 400, "no image"},
      {"", "just some text, not an image", 415, "the uploaded image: not an image in a supported format"},
      {"", "P5\n30000 30000\n255\n" + std::string(64, '\x7f'), 413, "more than data.max_pixels=100000000"},
      {"", png.substr(0, png.size() / 2), 415, "corrupt or truncated"},
      {"?image=../../etc/passwd", "", 404, "image=../../etc/passwd is not an image of the run's test split"},
      {"?image=" + id, png, 400, "not both"},
      {"", std::string(150000, 'x'), 413, "larger than serve.max_upload_bytes"},
  };
  for (const Case& bad : cases) {
    const Json answer = post_caption(bad.query, bad.body, bad.status);
    ASSERT_TRUE(answer.is_object()) << bad.query;
    EXPECT_NE(answer.at("error").as_string().find(bad.error), std::string::npos)
        << bad.query << ": " << answer.at("error").as_string();
  }
  auto client = server_->client();
  for (const char* path : {"/runs/7/images", "/../config.yaml", "/runs/0/images/..%2f..%2fetc%2fpasswd"}) {
    const auto answer = client.Get(path);
    ASSERT_TRUE(answer) << path;
    EXPECT_EQ(answer->status, 404) << path;
    EXPECT_NO_THROW(parse_json(answer->body).at("error")) << path << ": " << answer->body;
  }
  EXPECT_EQ(post_caption("", png).at("words").size(), post_caption("", png).at("attention").size());
}

// Sends `bytes` on a fresh loopback connection and returns what comes back before the server
// closes it (or 2 s pass); with `abandon`, closes right after sending.
std::string raw_exchange(int port, const std::string& bytes, bool abandon) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return "<no connection>";
  }
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) < 0 || abandon) {
    close(fd);
    return "";
  }
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;)
    answer.append(buffer, static_cast<size_t>(n));
  close(fd);
  return answer;
}

TEST_F(ServeTest, MalformedAndAbandonedRequestsLeaveItServing) {
  const int port = server_->port();
  const std::string garbage = raw_exchange(port, "THIS IS NOT HTTP\r\n\r\n", false);
  EXPECT_EQ(garbage.rfind("HTTP/1.1 400", 0), 0u) << garbage;
  EXPECT_NE(garbage.find("{\"error\":"), std::string::npos) << garbage;
  // `curl -X POST` without -d sends neither a length nor a chunked body.
  const std::string unsized = raw_exchange(
      port, "POST /caption?image=" + test_image().second + " HTTP/1.1\r\nHost: x\r\n\r\n", false);
  EXPECT_EQ(unsized.rfind("HTTP/1.1 411", 0), 0u) << unsized;
  EXPECT_NE(unsized.find("needs a Content-Length header"), std::string::npos) << unsized;
  // A body cut off: the client promised 50,000 bytes, sent 1,000 and left.
  raw_exchange(
      port, "POST /caption HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n" + std::string(1000, 'x'),
      true);
  // A request line that never ends, then gone.
  raw_exchange(port, "GET /runs HTTP/1.1\r\nHost: x\r\nX-Long: " + std::string(5000, 'y'), true);
  const auto [file, id] = test_image();
  EXPECT_FALSE(post_caption("", read_file(file)).at("caption").as_string().empty());
}

// Resident memory of a process, in KiB, from /proc.
int64_t resident_kib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

TEST_F(ServeTest, AHundredConcurrentRequestsAreAllAnswered) {
  const auto [file, id] = test_image();
  const std::string png = read_file(file);
  const int64_t before = resident_kib(server_->process().pid());
  std::vector<std::string> statuses(100);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < statuses.size(); ++i) {
    clients.emplace_back([&, i] {
      auto client = server_->client();
      const auto answer = client.Post("/caption?method=beam&beam_size=3", png, "image/png");
      statuses[i] = answer ? std::to_string(answer->status) : httplib::to_string(answer.error());
    });
  }
  for (auto& client : clients) client.join();
  for (size_t i = 0; i < statuses.size(); ++i) EXPECT_EQ(statuses[i], "200") << "request " << i;
  // Eight connections are served at once, each body at most serve.max_upload_bytes.
  EXPECT_LT(resident_kib(server_->process().pid()) - before, 256 * 1024);
}

TEST_F(ServeTest, APortInUseIsOneLineAndAFailure) {
  const auto result = run_saccade(
      {"serve", "-cp", (source_dir() / "configs").string(), "--run", run_.string(), "--port",
       std::to_string(server_->port())},
      work_->path());
  EXPECT_EQ(result.exit_code, 1) << result.err;
  const std::string expected =
      "cannot listen on 127.0.0.1:" + std::to_string(server_->port()) + ": Address already in use\n";
  ASSERT_GE(result.err.size(), expected.size()) << result.err;
  EXPECT_EQ(result.err.substr(result.err.size() - expected.size()), expected) << result.err;
  const auto bad_port = run_saccade({"serve", "--run", run_.string(), "--port", "70000"}, work_->path());
  EXPECT_EQ(bad_port.exit_code, 2);
  EXPECT_NE(bad_port.err.find("--port must be a TCP port, 0 to 65535"), std::string::npos) << bad_port.err;
}

// `saccade bench serve` answers every request and prints, per search and concurrency, the
// requests it timed with ordered percentiles.
TEST_F(ServeTest, TheServeBenchTimesEveryRequest) {
  const auto result = run_saccade(
      {"bench", "serve", "-cp", (source_dir() / "configs").string(), "--run", run_.string(), "--requests",
       "12"},
      work_->path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::regex line(
      R"((greedy|beam 3) +concurrency ([14]): +12 requests, p50 +([0-9.]+) ms, p90 +([0-9.]+) ms, )"
      R"(p99 +([0-9.]+) ms, max +([0-9.]+) ms, +([0-9.]+) requests/s)");
  int lines = 0;
  for (std::sregex_iterator match(result.out.begin(), result.out.end(), line), end; match != end; ++match) {
    ++lines;
    std::vector<double> ordered;
    for (size_t group = 3; group <= 6; ++group) ordered.push_back(std::stod((*match)[group].str()));
    EXPECT_TRUE(std::is_sorted(ordered.begin(), ordered.end())) << match->str();
    EXPECT_GT(ordered.front(), 0.0) << match->str();
    EXPECT_GT(std::stod((*match)[7].str()), 0.0) << match->str();
  }
  EXPECT_EQ(lines, 4) << result.out;
}

TEST_F(ServeTest, ListeningBeyondLoopbackIsTheUsersChoiceAndLogged) {
  ServeProcess open({"--run", run_.string(), "--host", "0.0.0.0"}, work_->path());
  ASSERT_TRUE(open.started()) << open.log();
  EXPECT_NE(open.log().find("anyone who can reach this machine"), std::string::npos) << open.log();
  EXPECT_EQ(open.process().stop(SIGINT), 0) << open.log();
  EXPECT_EQ(server_->log().find("anyone who can reach"), std::string::npos) << server_->log();
}

// --- The page in headless Chromium, driven over the WebDriver protocol by ChromeDriver.

constexpr const char* kElementKey = "element-6066-11e4-a52e-4f735466cecf";

class WebDriverSession {
 public:
  WebDriverSession(int port, const std::filesystem::path& profile) : client_("127.0.0.1", port) {
    client_.set_read_timeout(120, 0);
    const Json capabilities = Json::object(
        {{"capabilities",
          Json::object(
              {{"alwaysMatch", Json::object(
                                   {{"browserName", "chrome"},
                                    {"goog:chromeOptions",
                                     Json::object(
                                         {{"binary", "/usr/bin/chromium"},
                                          {"args", Json::array(
                                                       {"--headless", "--no-sandbox", "--disable-gpu",
                                                        "--window-size=1280,1100",
                                                        "--user-data-dir=" + profile.string()})}})}})}})}});
    id_ = call("POST", "/session", capabilities).at("sessionId").as_string();
  }
  ~WebDriverSession() {
    if (!id_.empty()) client_.Delete(("/session/" + id_).c_str());
  }
  // The value of a command on the session (`path` relative to it, once it exists); a WebDriver
  // error fails the test with its message.
  Json call(const std::string& method, const std::string& path, const Json& body = Json::object()) {
    const std::string target = id_.empty() ? path : "/session/" + id_ + path;
    const auto answer = method == "GET" ? client_.Get(target.c_str())
                                        : client_.Post(target.c_str(), dump_json(body), "application/json");
    if (!answer) throw std::runtime_error("ChromeDriver did not answer " + target);
    const Json value = parse_json(answer->body).at("value");
    if (answer->status != 200) throw std::runtime_error(target + ": " + dump_json(value));
    return value;
  }
  Json script(const std::string& code) {
    return call("POST", "/execute/sync", Json::object({{"script", code}, {"args", Json::array()}}));
  }
  std::string element(const std::string& css) {
    return call("POST", "/element", Json::object({{"using", "css selector"}, {"value", css}}))
        .at(kElementKey)
        .as_string();
  }
  // Moves the mouse onto the element's centre.
  void hover(const std::string& element) {
    const Json move = Json::object(
        {{"type", "pointerMove"}, {"origin", Json::object({{kElementKey, element}})}, {"x", 0}, {"y", 0}});
    const Json mouse = Json::object(
        {{"type", "pointer"},
         {"id", "mouse"},
         {"parameters", Json::object({{"pointerType", "mouse"}})},
         {"actions", Json::array({move})}});
    call("POST", "/actions", Json::object({{"actions", Json::array({mouse})}}));
  }

 private:
  httplib::Client client_;
  std::string id_;
};

std::string base64_decode(const std::string& text) {
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* at = c == '\0' ? nullptr : std::strchr(alphabet, c);
    if (at == nullptr) continue;
    bits = (bits << 6) | static_cast<uint32_t>(at - alphabet);
    if ((count += 6) >= 8) out += static_cast<char>((bits >> (count -= 8)) & 0xff);
  }
  return out;
}

// Uploads an image, hovers the caption's second word and checks that its attention is drawn;
// the screenshot goes to $SACCADE_EXPLORER_SCREENSHOT when set (docs/serve_explorer.png), with
// the runs of $SACCADE_EXPLORER_RUNS (space-separated) served instead of the smoke run.
TEST_F(ServeTest, ThePageCaptionsAnUploadAndDrawsTheHoveredWordsAttention) {
  ASSERT_EQ(std::system("command -v chromedriver > /dev/null"), 0)
      << "chromedriver is not installed; scripts/setup.sh installs it (Debian package chromium-driver)";
  std::unique_ptr<ServeProcess> shown_runs;
  int serve_port = server_->port();
  if (const char* runs = std::getenv("SACCADE_EXPLORER_RUNS")) {
    std::vector<std::string> arguments;
    std::istringstream dirs(runs);
    for (std::string dir; dirs >> dir;) arguments.insert(arguments.end(), {"--run", dir});
    shown_runs = std::make_unique<ServeProcess>(arguments, work_->path());
    ASSERT_TRUE(shown_runs->started()) << shown_runs->log();
    serve_port = shown_runs->port();
  }
  const int driver_port = free_port();
  ChildProcess driver(
      {"/usr/bin/chromedriver", "--port=" + std::to_string(driver_port)}, work_->path(),
      work_->path() / "chromedriver.log");
  httplib::Client probe("127.0.0.1", driver_port);
  ASSERT_TRUE(eventually([&] { return static_cast<bool>(probe.Get("/status")); }, 30))
      << read_file(work_->path() / "chromedriver.log");
  WebDriverSession browser(driver_port, work_->path() / "chromium-profile");
  browser.call(
      "POST", "/url", Json::object({{"url", "http://127.0.0.1:" + std::to_string(serve_port) + "/"}}));
  ASSERT_TRUE(eventually(
      [&] {
        return browser.script("return document.querySelectorAll('#run-a option').length").as_int64() > 0;
      },
      30));

  const auto [file, id] = test_image(2);
  browser.call(
      "POST", "/element/" + browser.element("#file-input") + "/value",
      Json::object({{"text", std::filesystem::absolute(file).string()}}));
  ASSERT_TRUE(eventually(
      [&] {
        return browser.script("return document.querySelectorAll('.column .word').length").as_int64() > 1;
      },
      60))
      << browser.script("return document.body.innerText").as_string();
  const Json served = post_caption("", read_file(file));
  if (!shown_runs) {
    EXPECT_EQ(
        browser.script("return document.querySelector('.column .caption').innerText.trim()").as_string(),
        served.at("caption").as_string());
  }
  const std::string before =
      browser.script("return document.querySelector('.column canvas').toDataURL()").as_string();
  const std::string word = browser.element(".column .captions li .word:nth-of-type(2)");
  browser.hover(word);
  EXPECT_EQ(browser.script("return document.querySelector('.column canvas').dataset.word").as_string(), "1");
  EXPECT_NE(browser.script("return document.querySelector('.column canvas').toDataURL()").as_string(), before)
      << "the second word's attention is drawn over the first's";
  const std::string info =
      browser.script("return document.querySelector('.column .word-info').innerText").as_string();
  EXPECT_NE(info.find("word 2 of"), std::string::npos) << info;
  EXPECT_NE(browser.script("return document.querySelector('.word.active').innerText").as_string(), "");
  // The right arrow steps to the next word.
  browser.script(
      "document.body.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}))");
  const size_t words =
      browser.script("return document.querySelectorAll('.column .captions li:first-child .word').length")
          .as_int64();
  EXPECT_EQ(
      browser.script("return document.querySelector('.column canvas').dataset.word").as_string(),
      words > 2 ? "2" : "1");

  browser.script("window.scrollTo(0, 0)");
  const std::string png = base64_decode(browser.call("GET", "/screenshot").as_string());
  EXPECT_EQ(png.substr(1, 3), "PNG");
  if (const char* screenshot = std::getenv("SACCADE_EXPLORER_SCREENSHOT")) write_file(screenshot, png);
}

}  // namespace
}  // namespace saccade::testing
