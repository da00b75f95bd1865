// METEOR via a child `java` process that speaks meteor-1.5.jar's -stdio protocol over two pipes
// (see meteor.h). POSIX only, like the rest of saccade.
#include "eval/meteor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "base/text.h"

namespace saccade {
namespace {

// The launcher to run: `program` itself when it names a path, else its first executable match on
// PATH; "" when there is none.
std::string find_program(const std::string& program) {
  auto executable = [](const std::string& path) {
    return access(path.c_str(), X_OK) == 0 && !std::filesystem::is_directory(path);
  };
  if (program.find('/') != std::string::npos) return executable(program) ? program : "";
  const char* path = std::getenv("PATH");
  const std::string dirs = path == nullptr ? "" : path;
  for (size_t start = 0; start <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = end == start ? "." : dirs.substr(start, end - start);
    if (executable(dir + "/" + program)) return dir + "/" + program;
    start = end + 1;
  }
  return "";
}

// Python's str.replace: every non-overlapping occurrence, left to right.
std::string replace_all(const std::string& text, const std::string& from, const std::string& to) {
  std::string out;
  size_t start = 0;
  for (size_t at; (at = text.find(from, start)) != std::string::npos; start = at + from.size()) {
    out += text.substr(start, at - start) + to;
  }
  return out + text.substr(start);
}

// The candidate as one METEOR segment: tokens joined by spaces, with the protocol's separator
// "|||" removed and the double space that leaves collapsed. coco-caption cleans only the
// candidate: a reference goes as it is, and a "|||" in it splits it in two for the jar.
std::string candidate_segment(const Tokens& tokens) {
  return replace_all(replace_all(join(tokens, " "), "|||", ""), "  ", " ");
}

// The running jar: one request line in, one answer line out.
class MeteorProcess {
 public:
  MeteorProcess(const std::string& java, const std::filesystem::path& jar) : jar_(jar.string()) {
    int to_child[2];
    int from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) {
      throw std::runtime_error("Could not create pipes for METEOR: " + std::string(std::strerror(errno)));
    }
    // Everything the child needs is prepared before fork: it may only make system calls.
    const std::string jar_dir = jar.parent_path().string();
    const char* argv[] = {java.c_str(), "-Xmx2G", "-jar", jar_.c_str(), "-",    "-",
                          "-stdio",     "-l",     "en",   "-norm",      nullptr};
    // A jar that dies mid-request must surface as an error here, not kill saccade.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &previous_sigpipe_);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(to_child[0], STDIN_FILENO);
      dup2(from_child[1], STDOUT_FILENO);
      const int null = open("/dev/null", O_WRONLY);
      if (null >= 0) dup2(null, STDERR_FILENO);
      for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1], null}) close(fd);
      // The jar finds its data/ folder beside itself; coco-caption runs it from there too.
      if (chdir(jar_dir.c_str()) != 0) _exit(127);
      execv(java.c_str(), const_cast<char* const*>(argv));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    to_child_ = to_child[1];
    from_child_ = fdopen(from_child[0], "r");
    if (pid_ < 0 || from_child_ == nullptr) {
      const std::string reason = std::strerror(errno);
      stop();
      throw std::runtime_error("Could not start METEOR (" + jar_ + "): " + reason);
    }
  }
  MeteorProcess(const MeteorProcess&) = delete;
  MeteorProcess& operator=(const MeteorProcess&) = delete;
  ~MeteorProcess() { stop(); }

  void write_line(const std::string& line) {
    const std::string text = line + "\n";
    for (size_t done = 0; done < text.size();) {
      const ssize_t written = write(to_child_, text.data() + done, text.size() - done);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) fail();
      done += static_cast<size_t>(written);
    }
  }

  std::string read_line() {
    std::string line;
    for (int c; (c = std::fgetc(from_child_)) != '\n';) {
      if (c == EOF) fail();
      line += static_cast<char>(c);
    }
    return line;
  }

  double read_number() {
    const std::string line = read_line();
    char* end = nullptr;
    const double value = std::strtod(line.c_str(), &end);
    while (end != nullptr && (*end == ' ' || *end == '\r' || *end == '\t')) ++end;
    if (line.empty() || end == nullptr || *end != '\0') {
      throw std::runtime_error("METEOR (" + jar_ + ") answered '" + line + "' where a score was expected");
    }
    return value;
  }

 private:
  [[noreturn]] void fail() const {
    throw std::runtime_error(
        "METEOR (" + jar_ + ") stopped answering. HINT: run `java -jar " + jar_ +
        " - - -stdio -l en -norm` to see why");
  }

  void stop() {
    if (to_child_ >= 0) close(to_child_);
    if (from_child_ != nullptr) std::fclose(from_child_);
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    to_child_ = -1;
    from_child_ = nullptr;
    pid_ = -1;
    sigaction(SIGPIPE, &previous_sigpipe_, nullptr);
  }

  std::string jar_;
  pid_t pid_ = -1;
  int to_child_ = -1;
  FILE* from_child_ = nullptr;
  struct sigaction previous_sigpipe_ {};
};

}  // namespace

MeteorScores meteor(const std::vector<ImageTokens>& images, const MeteorOptions& options) {
  MeteorScores scores;
  if (options.jar.empty()) {
    scores.unavailable_reason = "eval.meteor_jar is not set";
    return scores;
  }
  if (!std::filesystem::is_regular_file(options.jar)) {
    throw std::invalid_argument("eval.meteor_jar: no file at '" + options.jar + "'");
  }
  const std::string java = find_program(options.java);
  if (java.empty()) {
    scores.unavailable_reason = "'" + options.java + "' was not found (METEOR needs Java)";
    return scores;
  }

  MeteorProcess process(java, std::filesystem::absolute(options.jar));
  std::string evaluation = "EVAL";
  for (const auto& image : images) {
    std::string request = "SCORE";
    for (const auto& reference : image.references) request += " ||| " + join(reference, " ");
    process.write_line(request + " ||| " + candidate_segment(image.candidate));
    evaluation += " ||| " + process.read_line();
  }
  process.write_line(evaluation);
  for (size_t i = 0; i < images.size(); ++i) scores.per_image.push_back(process.read_number());
  scores.corpus = process.read_number();
  scores.available = true;
  return scores;
}

}  // namespace saccade
