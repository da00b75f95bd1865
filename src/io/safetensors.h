// safetensors: reading and writing the tensor file format of Hugging Face's `safetensors`.
//
//   SafetensorsReader file("resnet50.safetensors");           // maps the file, parses the header
//   torch::Tensor w = file.get("conv1.weight", torch::kFloat);  // f16/bf16 converted to f32
//   save_safetensors("out.safetensors", {{"grid", grid}});
//
// The format (https://huggingface.co/docs/safetensors): 8 bytes little-endian u64 N, then N bytes
// of UTF-8 JSON `{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"key": "value"}}` (may be padded with spaces), then the data section; offsets
// are relative to the start of the data section, little-endian, row-major.
//
// The reader memory-maps the file privately (copy-on-write): a tensor whose stored dtype is the one
// asked for is a view into the mapping and costs no copy; the mapping lives as long as the reader
// or any such view. Writing into a view never changes the file. Every offset and size in the header
// is checked against the file size, so a truncated or lying file is a std::runtime_error naming the
// file, never a crash. Dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL (LibTorch 1.13 has no
// U16/U32/U64). This library links torch; saccade_io itself stays torch-free.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace saccade {

// One tensor's entry in a safetensors header.
struct SafetensorsEntry {
  std::string name;            // the key
  std::string dtype;           // as written in the file: "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;  // [] for a scalar
  uint64_t begin = 0;          // byte offset of the first element within the data section
  uint64_t end = 0;            // one past the last byte
};

// The torch dtype for a safetensors dtype string ("F16" -> kHalf); throws std::runtime_error
// for an unknown or unsupported string.
torch::Dtype safetensors_scalar_type(const std::string& dtype);

// The safetensors dtype string for a torch dtype (kBFloat16 -> "BF16"); throws
// std::invalid_argument for a dtype the format cannot hold (complex, quantized).
std::string safetensors_dtype_name(torch::Dtype type);

namespace detail {
struct SafetensorsMapping;  // the mapped file, shared by the reader and its zero-copy views
}

// A safetensors file opened for reading. Cheap to copy (copies share the mapping).
class SafetensorsReader {
 public:
  // Maps `path` and parses and validates its header. Throws std::runtime_error naming the file
  // when it cannot be opened, is shorter than its header says, has malformed header JSON, an
  // unknown dtype, or a tensor whose offsets fall outside the data section or disagree with its
  // shape and dtype.
  explicit SafetensorsReader(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }

  // Tensor names in data-offset order (the order they were written in).
  std::vector<std::string> keys() const;
  bool contains(const std::string& key) const;
  size_t size() const { return entries_.size(); }

  // The header entry for `key`; throws std::invalid_argument naming the key and file if absent.
  const SafetensorsEntry& entry(const std::string& key) const;

  // The tensor `key` on CPU, converted to `dtype` when given (e.g. F16 -> kFloat). Without a
  // conversion it is a zero-copy view into the mapping (a copy when its bytes are misaligned).
  torch::Tensor get(const std::string& key, std::optional<torch::Dtype> dtype = std::nullopt) const;

  // The free-form string map under "__metadata__" (empty if none).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::filesystem::path path_;
  std::shared_ptr<detail::SafetensorsMapping> mapping_;
  std::vector<SafetensorsEntry> entries_;  // in data-offset order
  std::map<std::string, size_t> index_;    // name -> position in entries_
  std::map<std::string, std::string> metadata_;
  uint64_t data_offset_ = 0;  // file offset of the data section: 8 + header length
};

// Every tensor of a file, in file order, converted to `dtype` when given.
std::vector<std::pair<std::string, torch::Tensor>> load_safetensors(
    const std::filesystem::path& path, std::optional<torch::Dtype> dtype = std::nullopt);

// Writes `tensors` (name, tensor) in the order given, each in its own dtype (convert before
// calling to store f16 or bf16), plus optional "__metadata__". The header is padded with spaces to
// a multiple of 8 bytes so that every tensor's data starts 8-byte aligned when its offset is.
// The file is written under a temporary name and renamed, so readers never see a torn file.
// Throws std::invalid_argument for duplicate or empty names or an unsupported dtype, and
// std::runtime_error when the file cannot be written.
void save_safetensors(
    const std::filesystem::path& path,
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata = {});

}  // namespace saccade
