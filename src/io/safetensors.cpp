// safetensors reading (mmap + validated header) and writing (temporary file + rename).
// The header JSON goes through io/json (strict RFC 8259, valid UTF-8).
#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "base/text.h"
#include "io/json.h"
#include "io/temporaries.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

namespace saccade {
namespace detail {

struct SafetensorsMapping {
  void* data = nullptr;
  size_t size = 0;
  SafetensorsMapping() = default;
  SafetensorsMapping(const SafetensorsMapping&) = delete;
  SafetensorsMapping& operator=(const SafetensorsMapping&) = delete;
  ~SafetensorsMapping() {
    if (data != nullptr) munmap(data, size);
  }
};

}  // namespace detail

namespace {

// The spec caps the header at 100 MB; anything larger is a corrupt length field.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

std::string quoted(const std::filesystem::path& path) {
  return "'" + path.string() + "'";
}

// ---- Header validation. ----

struct DtypeInfo {
  const char* name;
  torch::Dtype type;
  size_t bytes;
};

const DtypeInfo kDtypes[] = {
    {"F64", torch::kFloat64, 8},   {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2},
    {"BF16", torch::kBFloat16, 2}, {"I64", torch::kInt64, 8},   {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},     {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& info : kDtypes) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

std::string known_dtypes() {
  std::vector<std::string> names;
  for (const auto& info : kDtypes) names.emplace_back(info.name);
  return join(names, ", ");
}

// A non-negative JSON integer, or a clear error naming the tensor and field.
uint64_t to_u64(const Json& value, const std::string& what, const std::filesystem::path& path) {
  if (!value.is_integer() || value.as_int64() < 0) {
    throw std::runtime_error(
        "Invalid safetensors header in " + quoted(path) + ": " + what +
        " must be a non-negative integer, got " +
        (value.is_number() ? dump_json(value) : describe(value.type())));
  }
  return static_cast<uint64_t>(value.as_int64());
}

SafetensorsEntry parse_entry(
    const std::string& name, const Json& value, uint64_t data_bytes, const std::filesystem::path& path) {
  const std::string where = "Invalid safetensors header in " + quoted(path) + ": tensor '" + name + "' ";
  if (!value.is_object()) throw std::runtime_error(where + "is not a JSON object");
  const Json* dtype = value.find("dtype");
  const Json* shape = value.find("shape");
  const Json* offsets = value.find("data_offsets");
  if (dtype == nullptr || !dtype->is_string()) throw std::runtime_error(where + "has no string 'dtype'");
  if (shape == nullptr || !shape->is_array()) throw std::runtime_error(where + "has no array 'shape'");
  if (offsets == nullptr || !offsets->is_array() || offsets->size() != 2) {
    throw std::runtime_error(where + "needs 'data_offsets' as [begin, end]");
  }
  const DtypeInfo* info = find_dtype(dtype->as_string());
  if (info == nullptr) {
    throw std::runtime_error(
        where + "has unsupported dtype '" + dtype->as_string() + "'; saccade reads " + known_dtypes());
  }
  SafetensorsEntry entry;
  entry.name = name;
  entry.dtype = info->name;
  uint64_t count = 1;
  bool count_overflow = false;
  for (const auto& item : shape->as_array()) {
    const uint64_t extent = to_u64(item, "tensor '" + name + "' shape", path);
    entry.shape.push_back(static_cast<int64_t>(extent));
    if (extent != 0 && count > std::numeric_limits<uint64_t>::max() / extent) count_overflow = true;
    count *= extent;
  }
  entry.begin = to_u64(offsets->at(0), "tensor '" + name + "' data_offsets[0]", path);
  entry.end = to_u64(offsets->at(1), "tensor '" + name + "' data_offsets[1]", path);
  if (entry.begin > entry.end) {
    throw std::runtime_error(
        where + "has data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
        "] with begin after end");
  }
  if (entry.end > data_bytes) {
    throw std::runtime_error(
        where + "has data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
        "] beyond the data section of " + std::to_string(data_bytes) + " bytes (truncated file?)");
  }
  const bool size_overflow =
      count_overflow || (count != 0 && info->bytes > std::numeric_limits<uint64_t>::max() / count);
  if (size_overflow || count * info->bytes != entry.end - entry.begin) {
    throw std::runtime_error(
        where + "has " + std::to_string(entry.end - entry.begin) + " bytes but shape " +
        shape_text(entry.shape) + " of " + entry.dtype + " needs " +
        (size_overflow ? "more than 2^64" : std::to_string(count * info->bytes)));
  }
  return entry;
}

}  // namespace

torch::Dtype safetensors_scalar_type(const std::string& dtype) {
  const DtypeInfo* info = find_dtype(dtype);
  if (info == nullptr) {
    throw std::runtime_error(
        "Unsupported safetensors dtype '" + dtype + "'; saccade reads " + known_dtypes());
  }
  return info->type;
}

std::string safetensors_dtype_name(torch::Dtype type) {
  for (const auto& info : kDtypes) {
    if (info.type == type) return info.name;
  }
  throw std::invalid_argument(
      std::string("A tensor of dtype ") + c10::toString(type) +
      " cannot be stored in safetensors; use one of " + known_dtypes());
}

namespace {

// Maps the whole file into `mapping` (at least its 8-byte header length), or throws naming it.
void map_safetensors_file(const std::filesystem::path& path, detail::SafetensorsMapping& mapping) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error("Could not open safetensors file " + quoted(path) + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw std::runtime_error("Could not read safetensors file " + quoted(path) + ": not a regular file");
  }
  const uint64_t file_bytes = static_cast<uint64_t>(info.st_size);
  if (file_bytes < 8) {
    ::close(fd);
    throw std::runtime_error(
        "Invalid safetensors file " + quoted(path) + ": " + std::to_string(file_bytes) +
        " bytes is shorter than the 8-byte header length");
  }
  // Private and writable: in-place edits of a returned view touch a private copy of the page only.
  void* data = ::mmap(nullptr, file_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (data == MAP_FAILED) {
    throw std::runtime_error(
        "Could not map safetensors file " + quoted(path) + ": " + std::strerror(map_errno));
  }
  mapping.data = data;
  mapping.size = file_bytes;
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::filesystem::path& path)
    : path_(path), mapping_(std::make_shared<detail::SafetensorsMapping>()) {
  map_safetensors_file(path, *mapping_);
  const void* data = mapping_->data;
  const uint64_t file_bytes = mapping_->size;

  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes, 8);
  if (header_bytes > kMaxHeaderBytes || header_bytes > file_bytes - 8) {
    throw std::runtime_error(
        "Invalid safetensors file " + quoted(path) + ": header length " + std::to_string(header_bytes) +
        " exceeds the file's " + std::to_string(file_bytes - 8) +
        " remaining bytes (truncated or not safetensors?)");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes + 8), header_bytes);
  Json root;
  try {
    root = parse_json(header, "header");
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error("Invalid safetensors header in " + quoted(path) + ": " + error.what());
  }
  if (!root.is_object()) {
    throw std::runtime_error(
        "Invalid safetensors header in " + quoted(path) + ": the header is not a JSON object");
  }
  const uint64_t data_bytes = file_bytes - 8 - header_bytes;
  for (const auto& [name, value] : root.as_object()) {
    if (name == "__metadata__") {
      if (!value.is_object()) {
        throw std::runtime_error(
            "Invalid safetensors header in " + quoted(path) + ": __metadata__ is not an object");
      }
      for (const auto& [key, item] : value.as_object()) {
        if (!item.is_string()) {
          throw std::runtime_error(
              "Invalid safetensors header in " + quoted(path) + ": __metadata__ value of '" + key +
              "' is not a string");
        }
        metadata_[key] = item.as_string();
      }
      continue;
    }
    index_[name] = entries_.size();
    entries_.push_back(parse_entry(name, value, data_bytes, path));
  }
  std::stable_sort(
      entries_.begin(), entries_.end(),
      [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.begin < b.begin; });
  // As the format's reference reader requires: the tensors tile the data section in order, each
  // beginning where the one before ends (overlapping ones would alias each other's bytes).
  for (size_t i = 0; i < entries_.size(); ++i) {
    const uint64_t expected = i == 0 ? 0 : entries_[i - 1].end;
    if (entries_[i].begin != expected) {
      throw std::runtime_error(
          "Invalid safetensors header in " + quoted(path) + ": tensor '" + entries_[i].name +
          "' begins at byte " + std::to_string(entries_[i].begin) + " of the data, not at " +
          std::to_string(expected) + (i == 0 ? "" : " where '" + entries_[i - 1].name + "' ends"));
    }
    index_[entries_[i].name] = i;
  }
  data_offset_ = 8 + header_bytes;
}

std::vector<std::string> SafetensorsReader::keys() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& entry : entries_) names.push_back(entry.name);
  return names;
}

bool SafetensorsReader::contains(const std::string& key) const {
  return index_.count(key) > 0;
}

const SafetensorsEntry& SafetensorsReader::entry(const std::string& key) const {
  const auto it = index_.find(key);
  if (it == index_.end()) {
    throw std::invalid_argument("No tensor '" + key + "' in safetensors file " + quoted(path_));
  }
  return entries_[it->second];
}

torch::Tensor SafetensorsReader::get(const std::string& key, std::optional<torch::Dtype> dtype) const {
  const SafetensorsEntry& found = entry(key);
  const DtypeInfo* info = find_dtype(found.dtype);
  const auto options = torch::TensorOptions().dtype(info->type).device(torch::kCPU);
  char* bytes = static_cast<char*>(mapping_->data) + data_offset_ + found.begin;
  torch::Tensor tensor;
  if (found.end == found.begin) {
    tensor = torch::empty(found.shape, options);
  } else if (reinterpret_cast<uintptr_t>(bytes) % info->bytes == 0) {
    // The deleter holds the mapping, so the view outlives the reader if it must.
    std::shared_ptr<detail::SafetensorsMapping> keep = mapping_;
    tensor = torch::from_blob(
        bytes, found.shape, [keep](void*) {}, options);
  } else {
    tensor = torch::empty(found.shape, options);
    std::memcpy(tensor.data_ptr(), bytes, found.end - found.begin);
  }
  if (dtype.has_value() && *dtype != info->type) tensor = tensor.to(*dtype);
  return tensor;
}

std::vector<std::pair<std::string, torch::Tensor>> load_safetensors(
    const std::filesystem::path& path, std::optional<torch::Dtype> dtype) {
  const SafetensorsReader reader(path);
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& key : reader.keys()) tensors.emplace_back(key, reader.get(key, dtype));
  return tensors;
}

void save_safetensors(
    const std::filesystem::path& path,
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata) {
  // Widest elements first (stable otherwise), as the reference writer does, so every tensor
  // starts aligned to its element size without gaps between tensors.
  std::vector<std::pair<std::string, torch::Tensor>> ordered;
  std::set<std::string> names;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty())
      throw std::invalid_argument("A safetensors tensor name must not be empty (" + quoted(path) + ")");
    if (name == "__metadata__")
      throw std::invalid_argument("'__metadata__' is reserved and cannot name a tensor");
    if (!names.insert(name).second) {
      throw std::invalid_argument(
          "Tensor name '" + name + "' appears twice in the tensors for " + quoted(path));
    }
    if (!tensor.defined())
      throw std::invalid_argument("Tensor '" + name + "' for " + quoted(path) + " is undefined");
    safetensors_dtype_name(tensor.scalar_type());  // rejects unsupported dtypes early
    ordered.emplace_back(name, tensor.detach().to(torch::kCPU).contiguous());
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.second.element_size() > b.second.element_size();
  });

  Json root = Json::object();
  if (!metadata.empty()) {
    Json members = Json::object();
    for (const auto& [key, value] : metadata) members.set(key, value);
    root.set("__metadata__", std::move(members));
  }
  uint64_t offset = 0;
  for (const auto& [name, tensor] : ordered) {
    const uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * tensor.element_size();
    Json shape = Json::array();
    for (const int64_t extent : tensor.sizes()) shape.push_back(extent);
    root.set(
        name, Json::object(
                  {{"dtype", safetensors_dtype_name(tensor.scalar_type())},
                   {"shape", std::move(shape)},
                   {"data_offsets", Json::array({offset, offset + bytes})}}));
    offset += bytes;
  }
  std::string header;
  try {
    header = dump_json(root);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument("Could not write safetensors file " + quoted(path) + ": " + error.what());
  }
  header.append((8 - header.size() % 8) % 8, ' ');

  AtomicFile file(path);
  const uint64_t header_bytes = header.size();
  file.write(&header_bytes, 8);
  file.write(header);
  for (const auto& [name, tensor] : ordered)
    file.write(tensor.data_ptr(), static_cast<size_t>(tensor.numel() * tensor.element_size()));
  file.commit();
}

}  // namespace saccade
