// TensorBoard event files: scalars, images and text, written the way TensorFlow's summary writer
// writes them, without TensorFlow or a protobuf library.
//
//   EventWriter events(run_dir);   // run_dir/events.out.tfevents.<seconds>.<host>
//   events.add_scalar("train/loss", 2.31, step);
//   events.add_image("val/attention/42", png_bytes, 224, 224, 3, step);
//   events.add_text("val/captions", "| image | caption |\n|---|---|\n| 42 | a red circle |", step);
//
// The file is a sequence of TFRecords: uint64 length, masked CRC32C of the length, payload,
// masked CRC32C of the payload (integers little-endian). Each payload is one serialized
// tensorflow.Event; the first carries file_version "brain.Event:2". Scalars are legacy
// simple_value summaries (float), images legacy Summary.Image, text a scalar DT_STRING tensor
// tagged for the "text" plugin (rendered as markdown).
//
// Every event reaches the operating system as it is added, so a killed run leaves a file that
// TensorBoard reads up to the last whole event. Failures are std::runtime_error with one line
// naming the file and the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace saccade {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as in iSCSI and TFRecord.
uint32_t crc32c(const void* data, size_t size);

// The CRC TFRecord stores: rotated right by 15 bits plus 0xa282ead8, so that a CRC of data that
// itself holds CRCs is not trivially zero.
uint32_t masked_crc32c(const void* data, size_t size);

// One TFRecord holding `payload`.
std::string tfrecord_frame(std::string_view payload);

class EventWriter {
 public:
  // Creates `log_dir` if needed and a new event file in it, named as TensorFlow names them; a
  // name already taken gets a ".1", ".2", ... suffix rather than being overwritten.
  explicit EventWriter(const std::filesystem::path& log_dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // A point on the scalar chart `tag` (stored as float, as TensorBoard keeps scalars).
  void add_scalar(const std::string& tag, double value, int64_t step);

  // An encoded image (PNG) of `height` x `width` pixels with 1 (gray), 2 (gray + alpha), 3 (RGB)
  // or 4 (RGBA) channels; other shapes are std::invalid_argument.
  void add_image(
      const std::string& tag,
      const std::string& encoded_png,
      int height,
      int width,
      int channels,
      int64_t step);

  // Markdown shown by the text dashboard (tables included).
  void add_text(const std::string& tag, const std::string& markdown, int64_t step);

  // Forces the events written so far onto the disk (they already survive a killed process).
  void flush();

  const std::filesystem::path& path() const { return path_; }

 private:
  void write_event(const std::string& event);

  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace saccade
