// ProcessGroup over c10d's TCPStore and ProcessGroupGloo (see process_group.h).
#include "dist/process_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "device/torch_compat.h"
#if SACCADE_TORCH_AT_LEAST(2, 1)
#include <torch/csrc/distributed/c10d/TCPStoreBackend.hpp>
#endif
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
#include <stdexcept>

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
  backend_ = std::make_unique<Backend>();
  const std::string where = options_.master_addr + ":" + std::to_string(options_.master_port);
  // Under torchrun the agent already hosts the store on MASTER_PORT: every rank is a client, and
  // each restart of the workers uses its own keys (as PyTorch's env:// rendezvous does).
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const bool agent_hosts = agent_store != nullptr && std::string(agent_store) == "True";
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(options_.master_port);
  store_options.isServer = options_.rank == 0 && !agent_hosts;
  store_options.numWorkers = static_cast<std::size_t>(options_.world_size);
  store_options.waitWorkers = true;
  store_options.timeout = options_.timeout;
#if SACCADE_TORCH_AT_LEAST(2, 1)
  // LibTorch >= 2.4 asks for the libuv server by default, which a build without libuv (Debian's)
  // refuses outright: use it exactly when the build has it.
  store_options.useLibUV = c10d::detail::is_libuv_tcpstore_backend_available();
#endif
  try {
    c10::intrusive_ptr<c10d::Store> store =
        c10::make_intrusive<c10d::TCPStore>(options_.master_addr, store_options);
    if (agent_hosts) {
      const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
      store = c10::make_intrusive<c10d::PrefixStore>(
          std::string("/worker/attempt_") + (attempt != nullptr ? attempt : "0"), store);
    }
    backend_->store = c10::make_intrusive<c10d::PrefixStore>("saccade/", store);
  } catch (const std::exception& error) {
    rethrow(
        "rank " + std::to_string(options_.rank) + " could not " +
            (store_options.isServer ? "host" : "reach") + " the rendezvous at " + where +
            " (WORLD_SIZE=" + std::to_string(options_.world_size) + ")",
        error);
  }
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(options_.timeout);
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  gloo_options->devices.push_back(
      interface != nullptr && *interface != '\0' ? c10d::ProcessGroupGloo::createDeviceForInterface(interface)
                                                 : c10d::ProcessGroupGloo::createDefaultDevice());
  try {
    backend_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(
        backend_->store, options_.rank, options_.world_size, gloo_options);
  } catch (const std::exception& error) {
    rethrow(
        "rank " + std::to_string(options_.rank) + " could not connect to its peers through " + where, error);
  }
  // Every rank must hand its tensors to the same backend: refuse ranks on different kinds of device.
  const std::vector<std::string> kinds = all_gather(c10::DeviceTypeName(device.type(), /*lower_case=*/true));
  for (int r = 0; r < size(); ++r) {
    if (kinds[r] != kinds[0]) {
      throw std::runtime_error(
          "rank " + std::to_string(r) + " computes on " + kinds[r] + " and rank 0 on " + kinds[0] +
          ": every rank needs the same kind of device (runtime.device, and a GPU for each worker)");
    }
  }
#ifdef SACCADE_WITH_NCCL
  if (device.is_cuda()) {
    c10::cuda::set_device(device.index());  // NCCL's communicators use the current device
    // Collectives then block in wait() and fail there, within the timeout, with a message, instead
    // of NCCL's watchdog aborting the process.
    setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = options_.timeout;
    backend_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
        c10::make_intrusive<c10d::PrefixStore>("nccl/", backend_->store), options_.rank, options_.world_size,
        nccl_options);
  }
#endif
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
