// TensorBoard event files: TFRecord framing and just enough protobuf wire format for
// tensorflow.Event (tensorflow/core/util/event.proto, tensorflow/core/framework/summary.proto).
#include "io/tensorboard_events.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "io/host_name.h"

namespace saccade {
namespace {

struct Crc32cTable {
  uint32_t entries[256];

  Crc32cTable() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t crc = i;
      for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
      entries[i] = crc;
    }
  }
};

// Protobuf wire types.
constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLengthDelimited = 2;
constexpr int kFixed32 = 5;

// tensorflow.DataType DT_STRING (tensorflow/core/framework/types.proto).
constexpr int kDtString = 7;

void put_little_endian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void put_key(std::string& out, int field, int wire_type) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

// int32 and int64 fields: negative values take ten bytes, as protobuf writes them.
void put_varint_field(std::string& out, int field, int64_t value) {
  put_key(out, field, kVarint);
  put_varint(out, static_cast<uint64_t>(value));
}

// Strings, bytes and nested messages.
void put_bytes_field(std::string& out, int field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

void put_double_field(std::string& out, int field, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  put_key(out, field, kFixed64);
  put_little_endian(out, bits, 8);
}

void put_float_field(std::string& out, int field, float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  put_key(out, field, kFixed32);
  put_little_endian(out, bits, 4);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Event fields 1 (wall_time) and 2 (step); a zero step is left out, as proto3 does.
std::string event_start(int64_t step) {
  std::string event;
  put_double_field(event, 1, now_seconds());
  if (step != 0) put_varint_field(event, 2, step);
  return event;
}

// An Event whose Summary (field 5) holds the one serialized Summary.Value `value`.
std::string summary_event(int64_t step, const std::string& value) {
  std::string summary;
  put_bytes_field(summary, 1, value);
  std::string event = event_start(step);
  put_bytes_field(event, 5, summary);
  return event;
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
  static const Crc32cTable table;
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) crc = table.entries[(crc ^ bytes[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord_frame(std::string_view payload) {
  std::string record;
  record.reserve(payload.size() + 16);
  put_little_endian(record, payload.size(), 8);
  put_little_endian(record, masked_crc32c(record.data(), 8), 4);
  record.append(payload.data(), payload.size());
  put_little_endian(record, masked_crc32c(payload.data(), payload.size()), 4);
  return record;
}

EventWriter::EventWriter(const std::filesystem::path& log_dir) {
  std::error_code error;
  std::filesystem::create_directories(log_dir, error);
  if (error) {
    throw std::runtime_error(
        "Could not create TensorBoard log folder " + log_dir.string() + ": " + error.message());
  }
  // O_EXCL: two writers started in the same second must not share (and corrupt) one file.
  const std::string base =
      "events.out.tfevents." + std::to_string(static_cast<int64_t>(now_seconds())) + "." + host_name();
  for (int attempt = 0; fd_ < 0; ++attempt) {
    path_ = log_dir / (attempt == 0 ? base : base + "." + std::to_string(attempt));
    fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno != EEXIST || attempt >= 1000)) {
      throw std::runtime_error("Could not create " + path_.string() + ": " + std::strerror(errno));
    }
  }
  std::string event = event_start(0);
  put_bytes_field(event, 3, "brain.Event:2");
  write_event(event);
}

EventWriter::~EventWriter() {
  if (fd_ >= 0) close(fd_);
}

void EventWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  std::string summary_value;
  put_bytes_field(summary_value, 1, tag);
  put_float_field(summary_value, 2, static_cast<float>(value));
  write_event(summary_event(step, summary_value));
}

void EventWriter::add_image(
    const std::string& tag,
    const std::string& encoded_png,
    int height,
    int width,
    int channels,
    int64_t step) {
  if (height < 1 || width < 1 || channels < 1 || channels > 4) {
    throw std::invalid_argument(
        "TensorBoard image '" + tag + "' is " + std::to_string(height) + "x" + std::to_string(width) + "x" +
        std::to_string(channels) + "; expected a positive size and 1 to 4 channels");
  }
  std::string image;
  put_varint_field(image, 1, height);
  put_varint_field(image, 2, width);
  put_varint_field(image, 3, channels);  // colorspace: 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA
  put_bytes_field(image, 4, encoded_png);
  std::string summary_value;
  put_bytes_field(summary_value, 1, tag);
  put_bytes_field(summary_value, 4, image);
  write_event(summary_event(step, summary_value));
}

void EventWriter::add_text(const std::string& tag, const std::string& markdown, int64_t step) {
  std::string tensor;
  put_varint_field(tensor, 1, kDtString);
  put_bytes_field(tensor, 2, "");  // an empty TensorShapeProto: a scalar
  put_bytes_field(tensor, 8, markdown);
  std::string plugin_data;
  put_bytes_field(plugin_data, 1, "text");
  std::string metadata;
  put_bytes_field(metadata, 1, plugin_data);
  std::string summary_value;
  put_bytes_field(summary_value, 1, tag);
  put_bytes_field(summary_value, 8, tensor);
  put_bytes_field(summary_value, 9, metadata);
  write_event(summary_event(step, summary_value));
}

void EventWriter::flush() {
  if (fsync(fd_) != 0) {
    throw std::runtime_error("Could not flush " + path_.string() + ": " + std::strerror(errno));
  }
}

// Straight to the file descriptor: no user-space buffer to lose when the process is killed.
void EventWriter::write_event(const std::string& event) {
  const std::string record = tfrecord_frame(event);
  size_t written = 0;
  while (written < record.size()) {
    const ssize_t count = write(fd_, record.data() + written, record.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) {
      throw std::runtime_error("Could not write " + path_.string() + ": " + std::strerror(errno));
    }
    written += static_cast<size_t>(count);
  }
}

}  // namespace saccade
