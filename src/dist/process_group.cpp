// ProcessGroup over c10d's TCPStore and ProcessGroupGloo (see process_group.h).
#include "dist/process_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "device/torch_compat.h"
// USE_C10D_NCCL comes with a CUDA LibTorch's CMake targets; nccl.h with NCCL's own package (a pip
// PyTorch keeps it in nvidia/nccl/include, see scripts/gpu_check.sh). Without both, Gloo carries
// CUDA tensors too.
#if defined(USE_C10D_NCCL) && __has_include(<nccl.h>)
#define SACCADE_WITH_NCCL 1
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "base/text.h"
#include "dist/join_watchdog.h"

namespace saccade {
namespace {

// The integer in environment variable `name`, or `fallback` when it is unset.
int int_from_environment(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < -(1L << 30) || value > (1L << 30)) {
    throw std::invalid_argument(std::string(name) + "='" + text + "' is not an integer");
  }
  return static_cast<int>(value);
}

// The first line of a c10 error, with what was being done in front.
[[noreturn]] void rethrow(const std::string& doing, const std::exception& error) {
  std::string message = error.what();
  message = message.substr(0, message.find('\n'));
  throw std::runtime_error(doing + ": " + message);
}

// Waits for one collective, turning a failure or a peer's absence into one line.
void wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what, int rank) {
  try {
    work->wait();
  } catch (const std::exception& error) {
    rethrow("rank " + std::to_string(rank) + ", " + what, error);
  }
}

// Runs one step of joining, described by `doing` ("rank 1 could not reach the rendezvous at
// ..."), which the watchdog reports should the step hang. What it throws becomes one line,
// "<doing>: <cause>": a refusal of the job's settings stays a std::invalid_argument (exit code
// 2), any other failure (c10d's) becomes a std::runtime_error.
template <typename Step>
auto join_step(JoinWatchdog& watchdog, const std::string& doing, Step step) {
  watchdog.set_step(doing);
  try {
    return step();
  } catch (const std::invalid_argument& refusal) {
    throw std::invalid_argument(doing + ": " + refusal.what());
  } catch (const std::exception& error) {
    rethrow(doing, error);
  }
}

// The keys of saccade's rendezvous: rank 0's WORLD_SIZE, the count of ranks that joined, each
// RANK's claims, and why a rank refused to go on (for the ranks waiting for it).
const char* const kWorldSizeKey = "join/world_size";
const char* const kJoinedKey = "join/joined";
const char* const kRankClaimKey = "join/rank/";
const char* const kRefusalKey = "join/refusal";
constexpr std::chrono::milliseconds kPollInterval{50};

std::vector<uint8_t> bytes_of(const std::string& text) {
  return {text.begin(), text.end()};
}

std::string text_of(const std::vector<uint8_t>& bytes) {
  return {bytes.begin(), bytes.end()};
}

// Records why this rank will not go on, for the ranks waiting in count_ranks, and throws it.
[[noreturn]] void refuse(c10d::Store& store, const std::string& reason) {
  try {
    store.set(kRefusalKey, bytes_of(reason));
  } catch (const std::exception&) {
    // The others then wait until their timeout instead.
  }
  throw std::invalid_argument(reason);
}

// Asks `ready` every kPollInterval until it holds; at the watchdog's deadline throws
// "<missing()> within dist.timeout_s = N s".
void poll_until(
    const JoinWatchdog& watchdog,
    const std::function<bool()>& ready,
    const std::function<std::string()>& missing) {
  while (!ready()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= watchdog.deadline())
      throw std::runtime_error(missing() + " within " + watchdog.timeout_text());
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(kPollInterval, watchdog.deadline() - now));
  }
}

// Rank 0 publishes its WORLD_SIZE; every other rank waits for it (under torchrun rank 0 may
// start later) and refuses to go on with another one: Gloo would fail deep inside instead.
void agree_on_world_size(c10d::Store& store, const DistOptions& options, const JoinWatchdog& watchdog) {
  const std::string world_size = std::to_string(options.world_size);
  if (options.rank == 0) {
    store.set(kWorldSizeKey, bytes_of(world_size));
    return;
  }
  poll_until(
      watchdog, [&] { return store.check({kWorldSizeKey}); },
      [] { return std::string("rank 0 did not join"); });
  const std::string rank0_world_size = text_of(store.get(kWorldSizeKey));
  if (rank0_world_size != world_size) {
    refuse(
        store, "rank " + std::to_string(options.rank) + " was started with WORLD_SIZE=" + world_size +
                   " and rank 0 with WORLD_SIZE=" + rank0_world_size);
  }
}

// Every rank claims its RANK and counts itself in, then waits until WORLD_SIZE ranks have, or
// until a rank records a refusal.
void count_ranks(c10d::Store& store, const DistOptions& options, const JoinWatchdog& watchdog) {
  const std::string rank = std::to_string(options.rank), world_size = std::to_string(options.world_size);
  if (store.add(kRankClaimKey + rank, 1) > 1) refuse(store, "two processes were started with RANK=" + rank);
  int64_t joined = store.add(kJoinedKey, 1);
  const auto all_joined = [&] {
    if (store.check({kRefusalKey})) throw std::invalid_argument(text_of(store.get(kRefusalKey)));
    joined = store.add(kJoinedKey, 0);
    if (joined > options.world_size) {
      refuse(
          store, std::to_string(joined) + " processes joined a job of WORLD_SIZE=" + world_size +
                     " (another job on the same MASTER_PORT?)");
    }
    return joined == options.world_size;
  };
  poll_until(
      watchdog, all_joined, [&] { return std::to_string(joined) + " of " + world_size + " ranks joined"; });
}

// A TCPStore on LibTorch's default server: from 2.4 on, libuv's, which a build without libuv
// (Debian's) refuses outright, before binding or connecting; there the classic server serves.
c10::intrusive_ptr<c10d::TCPStore> make_tcp_store(const std::string& host, c10d::TCPStoreOptions options) {
#if SACCADE_TORCH_AT_LEAST(2, 1)
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, options);
  } catch (const std::exception& error) {
    if (!options.useLibUV || std::string(error.what()).find("libuv") == std::string::npos) throw;
    options.useLibUV = false;
  }
#endif
  return c10::make_intrusive<c10d::TCPStore>(host, options);
}

// The job's store: rank 0 hosts it on MASTER_ADDR:MASTER_PORT (under torchrun the agent does),
// and every rank is a client. Its first answer proves that a store listens there.
c10::intrusive_ptr<c10d::Store> open_store(const DistOptions& options, bool agent_hosts) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(options.master_port);
  store_options.isServer = options.rank == 0 && !agent_hosts;
  // Not numWorkers: count_ranks counts the ranks, to the deadline and with a message, where
  // LibTorch 2.x would first sleep up to numWorkers milliseconds (100 s for WORLD_SIZE=100000).
  store_options.waitWorkers = false;
  store_options.timeout = options.timeout;
  c10::intrusive_ptr<c10d::Store> store = make_tcp_store(options.master_addr, store_options);
  if (agent_hosts) {
    // Each restart of the workers uses its own keys, as PyTorch's env:// rendezvous does.
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    store = c10::make_intrusive<c10d::PrefixStore>(
        std::string("/worker/attempt_") + (attempt != nullptr ? attempt : "0"), store);
  }
  store = c10::make_intrusive<c10d::PrefixStore>("saccade/", store);
  store->check({kWorldSizeKey});  // a first round trip: connecting proves only that a port listens
  return store;
}

c10::intrusive_ptr<c10d::ProcessGroupGloo> connect_gloo(
    const c10::intrusive_ptr<c10d::Store>& store, const DistOptions& options) {
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(options.timeout);
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  gloo_options->devices.push_back(
      interface != nullptr && *interface != '\0' ? c10d::ProcessGroupGloo::createDeviceForInterface(interface)
                                                 : c10d::ProcessGroupGloo::createDefaultDevice());
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, options.rank, options.world_size, gloo_options);
}

// A job's "key=value" lines as key -> value; their keys, in order, added to `keys`.
std::map<std::string, std::string> job_settings(const std::string& job, std::vector<std::string>& keys) {
  std::map<std::string, std::string> values;
  std::istringstream lines(job);
  for (std::string line; std::getline(lines, line);) {
    const size_t equals = line.find('=');
    const std::string key = line.substr(0, equals);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    values[key] = equals == std::string::npos ? "" : line.substr(equals + 1);
  }
  return values;
}

// Where two jobs differ first: "at decoder.hidden_dim (48 on rank 1, 32 on rank 0)".
std::string first_difference(const std::string& rank0_job, const std::string& other_job, int other_rank) {
  std::vector<std::string> keys;
  const auto rank0_values = job_settings(rank0_job, keys), other_values = job_settings(other_job, keys);
  const auto value_of = [](const std::map<std::string, std::string>& values, const std::string& key) {
    const auto found = values.find(key);
    return found == values.end() ? std::string("(not set)") : found->second;
  };
  for (const std::string& key : keys) {
    const std::string rank0_value = value_of(rank0_values, key), other_value = value_of(other_values, key);
    if (rank0_value != other_value)
      return "at " + key + " (" + other_value + " on rank " + std::to_string(other_rank) + ", " +
             rank0_value + " on rank 0)";
  }
  return "in the order of its settings";
}

}  // namespace

struct ProcessGroup::Backend {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#ifdef SACCADE_WITH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // for CUDA tensors; null on the CPU
#endif

  // `call` on the group that carries `tensor`: NCCL for CUDA tensors when there is one, else Gloo.
  template <typename Call>
  c10::intrusive_ptr<c10d::Work> carry(const torch::Tensor& tensor, Call call) {
#ifdef SACCADE_WITH_NCCL
    if (nccl && tensor.is_cuda()) return call(*nccl);
#endif
    return call(*gloo);
  }
};

DistOptions dist_options_from_environment(int timeout_s) {
  DistOptions options;
  options.world_size = int_from_environment("WORLD_SIZE", 1);
  options.rank = int_from_environment("RANK", 0);
  options.local_rank = int_from_environment("LOCAL_RANK", options.rank);
  options.local_world_size = int_from_environment("LOCAL_WORLD_SIZE", std::max(1, options.local_rank + 1));
  if (const char* addr = std::getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0')
    options.master_addr = addr;
  options.master_port = int_from_environment("MASTER_PORT", options.master_port);
  options.timeout = std::chrono::seconds(timeout_s);
  return options;
}

void validate(const DistOptions& options) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument(message);
  };
  require(options.world_size >= 1, "WORLD_SIZE must be >= 1, got " + std::to_string(options.world_size));
  require(
      options.rank >= 0 && options.rank < options.world_size, "RANK must be in [0, WORLD_SIZE) = [0, " +
                                                                  std::to_string(options.world_size) +
                                                                  "), got " + std::to_string(options.rank));
  require(
      options.local_rank >= 0 && options.local_rank < options.local_world_size,
      "LOCAL_RANK must be in [0, LOCAL_WORLD_SIZE) = [0, " + std::to_string(options.local_world_size) +
          "), got " + std::to_string(options.local_rank));
  require(
      options.master_port >= 1 && options.master_port <= 65535,
      "MASTER_PORT must be in 1 .. 65535, got " + std::to_string(options.master_port));
  require(options.timeout.count() >= 1, "dist.timeout_s must be >= 1");
}

ProcessGroup::ProcessGroup(const DistOptions& options, c10::Device device) : options_(options) {
  validate(options_);
  if (options_.world_size == 1) return;
  const std::string this_rank = "rank " + std::to_string(options_.rank);
  const std::string where = options_.master_addr + ":" + std::to_string(options_.master_port);
  // Under torchrun the agent already hosts the store on MASTER_PORT: every rank is a client.
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const bool agent_hosts = agent_store != nullptr && std::string(agent_store) == "True";
  const std::string reach = this_rank + " could not " +
                            (options_.rank == 0 && !agent_hosts ? "host" : "reach") + " the rendezvous at " +
                            where + " (WORLD_SIZE=" + std::to_string(options_.world_size) + ")";
  JoinWatchdog watchdog(options_.timeout, reach);
  backend_ = std::make_unique<Backend>();
  try {
    backend_->store = join_step(watchdog, reach, [&] { return open_store(options_, agent_hosts); });
    join_step(watchdog, this_rank + " could not form the job at " + where, [&] {
      agree_on_world_size(*backend_->store, options_, watchdog);
      count_ranks(*backend_->store, options_, watchdog);
    });
    backend_->gloo = join_step(watchdog, this_rank + " could not connect to its peers through " + where, [&] {
      return connect_gloo(backend_->store, options_);
    });
    watchdog.set_step(this_rank + " could not compare its kind of device with its peers'");
    require_same_device_kind(device);
#ifdef SACCADE_WITH_NCCL
    if (device.is_cuda()) {
      watchdog.set_step(this_rank + " could not set up NCCL through " + where);
      c10::cuda::set_device(device.index());  // NCCL's communicators use the current device
      // Collectives then block in wait() and fail there, within the timeout, with a message,
      // instead of NCCL's watchdog aborting the process.
      setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = options_.timeout;
      backend_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          c10::make_intrusive<c10d::PrefixStore>("nccl/", backend_->store), options_.rank,
          options_.world_size, nccl_options);
    }
#endif
  } catch (...) {
    // c10d's threads end while the watchdog still turns their failures (junk from a peer that is
    // no store) into one line.
    backend_.reset();
    throw;
  }
}

// Every rank must hand its tensors to the same backend: refuses ranks on different kinds of device.
void ProcessGroup::require_same_device_kind(c10::Device device) {
  const std::vector<std::string> kinds = all_gather(c10::DeviceTypeName(device.type(), /*lower_case=*/true));
  for (int r = 0; r < size(); ++r) {
    if (kinds[r] != kinds[0]) {
      throw std::runtime_error(
          "rank " + std::to_string(r) + " computes on " + kinds[r] + " and rank 0 on " + kinds[0] +
          ": every rank needs the same kind of device (runtime.device, and a GPU for each worker)");
    }
  }
}

ProcessGroup::~ProcessGroup() = default;

// c10d's collectives take one tensor per device of this process; ours go one at a time.
void ProcessGroup::broadcast(std::vector<torch::Tensor> tensors, int root) {
  if (!backend_) return;
  c10d::BroadcastOptions options;
  options.rootRank = root;
  for (auto& tensor : tensors) {
    std::vector<torch::Tensor> one = {tensor};
    wait(
        backend_->carry(tensor, [&](auto& group) { return group.broadcast(one, options); }),
        "broadcast from rank " + std::to_string(root), rank());
  }
}

void ProcessGroup::all_reduce_sum(std::vector<torch::Tensor> tensors) {
  if (!backend_) return;
  for (auto& tensor : tensors) {
    std::vector<torch::Tensor> one = {tensor};
    wait(backend_->carry(tensor, [&](auto& group) { return group.allreduce(one); }), "all-reduce", rank());
  }
}

std::vector<std::string> ProcessGroup::all_gather(const std::string& text) {
  if (!backend_) return {text};
  // Lengths first, then every text padded to the longest.
  auto length = torch::tensor({static_cast<int64_t>(text.size())}, torch::kLong);
  std::vector<std::vector<torch::Tensor>> lengths(1);
  for (int r = 0; r < size(); ++r) lengths[0].push_back(torch::empty({1}, torch::kLong));
  std::vector<torch::Tensor> length_input = {length};
  wait(backend_->gloo->allgather(lengths, length_input), "all-gather", rank());
  int64_t longest = 0;
  for (const auto& l : lengths[0]) longest = std::max(longest, l.item<int64_t>());
  auto bytes = torch::zeros({std::max<int64_t>(longest, 1)}, torch::kUInt8);
  std::copy(text.begin(), text.end(), reinterpret_cast<char*>(bytes.data_ptr<uint8_t>()));
  std::vector<std::vector<torch::Tensor>> gathered(1);
  for (int r = 0; r < size(); ++r) gathered[0].push_back(torch::empty_like(bytes));
  std::vector<torch::Tensor> bytes_input = {bytes};
  wait(backend_->gloo->allgather(gathered, bytes_input), "all-gather", rank());
  std::vector<std::string> texts;
  for (int r = 0; r < size(); ++r) {
    const auto* data = reinterpret_cast<const char*>(gathered[0][r].data_ptr<uint8_t>());
    texts.emplace_back(data, data + lengths[0][r].item<int64_t>());
  }
  return texts;
}

void ProcessGroup::require_same_job(const std::string& job) {
  if (!backend_) return;
  // A digest first: the whole texts only travel when they differ.
  const std::vector<std::string> digests = all_gather(hex_digest(fnv1a(job.data(), job.size())));
  const auto differing = std::find_if(
      digests.begin(), digests.end(), [&](const std::string& digest) { return digest != digests.front(); });
  if (differing == digests.end()) return;
  const int other_rank = static_cast<int>(differing - digests.begin());
  const std::vector<std::string> jobs = all_gather(job);
  throw std::invalid_argument(
      "rank " + std::to_string(other_rank) + "'s job differs from rank 0's " +
      first_difference(jobs.front(), jobs[other_rank], other_rank) +
      ": start every rank with the same command line, config and dataset files");
}

std::string ProcessGroup::backend_for(c10::Device device) const {
#ifdef SACCADE_WITH_NCCL
  if (backend_ && backend_->nccl && device.is_cuda()) return "NCCL";
#endif
  return "Gloo";
}

void ProcessGroup::barrier() {
  if (!backend_) return;
  wait(backend_->gloo->barrier(), "barrier", rank());
}

void sum_gradients(ProcessGroup& group, const std::vector<torch::Tensor>& parameters) {
  if (group.size() == 1) return;
  constexpr int64_t kBucketBytes = 25 << 20;
  std::vector<torch::Tensor> bucket;
  int64_t bytes = 0;
  const auto flush = [&] {
    if (bucket.empty()) return;
    std::vector<torch::Tensor> flat;
    for (const auto& grad : bucket) flat.push_back(grad.reshape({-1}));
    auto joined = torch::cat(flat);
    group.all_reduce_sum({joined});
    int64_t offset = 0;
    for (auto& grad : bucket) {
      grad.copy_(joined.narrow(0, offset, grad.numel()).view_as(grad));
      offset += grad.numel();
    }
    bucket.clear();
    bytes = 0;
  };
  for (auto parameter : parameters) {
    if (!parameter.requires_grad()) continue;
    if (!parameter.grad().defined()) parameter.mutable_grad() = torch::zeros_like(parameter);
    bucket.push_back(parameter.grad());
    bytes += parameter.grad().numel() * static_cast<int64_t>(parameter.grad().element_size());
    if (bytes >= kBucketBytes) flush();
  }
  flush();
}

}  // namespace saccade
