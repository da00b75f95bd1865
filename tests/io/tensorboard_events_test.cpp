// TensorBoard event files: CRC32C against published vectors, TFRecord framing re-checked with an
// independent bitwise CRC, and event contents decoded by protoc rather than by our own code.
#include "io/tensorboard_events.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.h"

namespace saccade::testing {
namespace {

// CRC-32C one bit at a time, straight from the definition (no table), to check the writer with.
uint32_t bitwise_crc32c(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

uint32_t bitwise_masked_crc32c(const std::string& bytes) {
  const uint32_t crc = bitwise_crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

uint64_t read_little_endian(const std::string& bytes, size_t offset, int count) {
  uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return value;
}

// Splits a TFRecord file into its payloads, checking every length and CRC on the way.
void read_records(const std::filesystem::path& path, std::vector<std::string>* payloads) {
  const std::string data = read_file(path);
  size_t offset = 0;
  while (offset < data.size()) {
    ASSERT_LE(offset + 12, data.size()) << "truncated record header at byte " << offset;
    const uint64_t length = read_little_endian(data, offset, 8);
    EXPECT_EQ(read_little_endian(data, offset + 8, 4), bitwise_masked_crc32c(data.substr(offset, 8)))
        << "length CRC at byte " << offset;
    ASSERT_LE(offset + 12 + length + 4, data.size()) << "truncated record at byte " << offset;
    const std::string payload = data.substr(offset + 12, length);
    EXPECT_EQ(read_little_endian(data, offset + 12 + length, 4), bitwise_masked_crc32c(payload))
        << "payload CRC at byte " << offset;
    payloads->push_back(payload);
    offset += 12 + length + 4;
  }
  EXPECT_EQ(offset, data.size());
}

bool have_protoc() {
  return std::system("command -v protoc >/dev/null 2>&1") == 0;
}

// What `protoc --decode_raw` prints for one serialized message.
std::string decode_raw(const std::string& payload) {
  TempDir dir;
  write_file(dir / "event.bin", payload);
  const std::string command = "protoc --decode_raw < '" + (dir / "event.bin").string() + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("Could not run " + command);
  std::string text;
  char buffer[4096];
  size_t count = 0;
  while ((count = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) text.append(buffer, count);
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << text;
  return text;
}

// decode_raw prints fixed32 fields as 0x%08x of their bits.
std::string float_hex(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", bits);
  return text;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr const char* kNoProtoc =
    "protoc not found (Debian package protobuf-compiler); "
    "event contents are checked with protoc --decode_raw";

TEST(Crc32c, MatchesPublishedVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the CRC catalogue's check value
  // RFC 3720 (iSCSI), appendix B.4.
  unsigned char bytes[32];
  std::memset(bytes, 0x00, sizeof(bytes));
  EXPECT_EQ(crc32c(bytes, sizeof(bytes)), 0x8A9136AAu);
  std::memset(bytes, 0xFF, sizeof(bytes));
  EXPECT_EQ(crc32c(bytes, sizeof(bytes)), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) bytes[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(bytes, sizeof(bytes)), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) bytes[i] = static_cast<unsigned char>(31 - i);
  EXPECT_EQ(crc32c(bytes, sizeof(bytes)), 0x113FDB5Cu);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(Crc32c, MaskedMatchesHandComputedValue) {
  // crc("123456789") = 0xE3069283. Rotated right by 15: 0xE3069283 >> 15 = 0x0001C60D, and its low
  // 15 bits 0x1283 << 17 = 0x25060000, together 0x2507C60D. Plus 0xA282EAD8: 0xC78AB0E5.
  EXPECT_EQ(masked_crc32c("123456789", 9), 0xC78AB0E5u);
}

TEST(TfrecordFrame, LaysOutLengthPayloadAndChecksums) {
  const std::string payload = "abc";
  const std::string record = tfrecord_frame(payload);
  ASSERT_EQ(record.size(), 8u + 4u + 3u + 4u);
  EXPECT_EQ(record.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(read_little_endian(record, 8, 4), bitwise_masked_crc32c(record.substr(0, 8)));
  EXPECT_EQ(record.substr(12, 3), payload);
  EXPECT_EQ(read_little_endian(record, 15, 4), bitwise_masked_crc32c(payload));
}

TEST(EventWriter, NamesFileLikeTensorFlow) {
  TempDir dir;
  const double before = now_seconds();
  EventWriter events(dir / "logs/tb");  // missing folders are created
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const std::string name = events.path().filename().string();
  EXPECT_EQ(events.path().parent_path(), dir / "logs/tb");
  ASSERT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  const std::string rest = name.substr(std::strlen("events.out.tfevents."));
  const long long seconds = std::atoll(rest.c_str());
  EXPECT_GE(seconds, static_cast<long long>(before));
  EXPECT_LE(seconds, static_cast<long long>(now_seconds()));
  EXPECT_EQ(rest.substr(rest.find('.') + 1), host) << name;
}

TEST(EventWriter, SecondWriterInSameFolderGetsItsOwnFile) {
  TempDir dir;
  EventWriter first(dir.path());
  EventWriter second(dir.path());
  EXPECT_NE(first.path(), second.path());
  first.add_scalar("a", 1.0, 1);
  second.add_scalar("b", 2.0, 1);
  std::vector<std::string> records;
  ASSERT_NO_FATAL_FAILURE(read_records(first.path(), &records));
  EXPECT_EQ(records.size(), 2u);
  records.clear();
  ASSERT_NO_FATAL_FAILURE(read_records(second.path(), &records));
  EXPECT_EQ(records.size(), 2u);
}

TEST(EventWriter, EveryRecordIsFramedWithValidChecksums) {
  TempDir dir;
  EventWriter events(dir.path());
  events.add_scalar("train/loss", 2.31, 7);
  events.add_image("val/attention", std::string(300, 'G'), 4, 5, 3, 7);  // a length over 127
  events.add_text("val/captions", "Generated: a red circle", 8);
  events.flush();
  std::vector<std::string> records;
  ASSERT_NO_FATAL_FAILURE(read_records(events.path(), &records));
  EXPECT_EQ(records.size(), 4u);  // file_version, then one per add
}

TEST(EventWriter, FirstEventHoldsFileVersionAndWallTime) {
  if (!have_protoc()) GTEST_SKIP() << kNoProtoc;
  TempDir dir;
  const double before = now_seconds();
  EventWriter events(dir.path());
  const double after = now_seconds();
  std::vector<std::string> records;
  ASSERT_NO_FATAL_FAILURE(read_records(events.path(), &records));
  ASSERT_EQ(records.size(), 1u);
  const std::string text = decode_raw(records[0]);
  EXPECT_TRUE(contains(text, "3: \"brain.Event:2\"\n")) << text;
  const size_t at = text.find("1: 0x");
  ASSERT_NE(at, std::string::npos) << text;
  const uint64_t bits = std::strtoull(text.c_str() + at + 5, nullptr, 16);
  double wall_time = 0;
  std::memcpy(&wall_time, &bits, sizeof(wall_time));
  EXPECT_GE(wall_time, before - 1e-3);
  EXPECT_LE(wall_time, after + 1e-3);
}

TEST(EventWriter, ScalarEventDecodes) {
  if (!have_protoc()) GTEST_SKIP() << kNoProtoc;
  TempDir dir;
  EventWriter events(dir.path());
  events.add_scalar("train/loss", 2.31, 7);
  std::vector<std::string> records;
  ASSERT_NO_FATAL_FAILURE(read_records(events.path(), &records));
  ASSERT_EQ(records.size(), 2u);
  const std::string text = decode_raw(records[1]);
  EXPECT_TRUE(contains(text, "1: 0x")) << text;
  EXPECT_TRUE(contains(text, "\n2: 7\n")) << text;
  // Event.summary (5) > Summary.value (1) > tag (1) and simple_value (2).
  EXPECT_TRUE(contains(text, "5 {\n  1 {\n    1: \"train/loss\"\n    2: " + float_hex(2.31f) + "\n")) << text;
}

TEST(EventWriter, ImageEventDecodes) {
  if (!have_protoc()) GTEST_SKIP() << kNoProtoc;
  TempDir dir;
  EventWriter events(dir.path());
  // Stand-in bytes that decode_raw cannot mistake for a nested message ('G' is an invalid key),
  // so it prints them whole; the closing quote shows the length came through.
  const std::string png = "GIF-like stand-in " + std::string(200, 'x');
  events.add_image("val/attention", png, 24, 32, 3, 12);
  std::vector<std::string> records;
  ASSERT_NO_FATAL_FAILURE(read_records(events.path(), &records));
  ASSERT_EQ(records.size(), 2u);
  const std::string text = decode_raw(records[1]);
  EXPECT_TRUE(contains(text, "\n2: 12\n")) << text;
  EXPECT_TRUE(contains(text, "    1: \"val/attention\"\n")) << text;
  // Summary.Value.image (4): height 1, width 2, colorspace 3, encoded_image_string 4.
  EXPECT_TRUE(contains(text, "    4 {\n      1: 24\n      2: 32\n      3: 3\n      4: \"" + png + "\"\n"))
      << text;
}

TEST(EventWriter, TextEventDecodesForTextPlugin) {
  if (!have_protoc()) GTEST_SKIP() << kNoProtoc;
  TempDir dir;
  EventWriter events(dir.path());
  const std::string markdown = "Generated caption: a red circle";
  events.add_text("val/captions", markdown, 3);
  std::vector<std::string> records;
  ASSERT_NO_FATAL_FAILURE(read_records(events.path(), &records));
  ASSERT_EQ(records.size(), 2u);
  const std::string text = decode_raw(records[1]);
  EXPECT_TRUE(contains(text, "\n2: 3\n")) << text;
  EXPECT_TRUE(contains(text, "    1: \"val/captions\"\n")) << text;
  // Summary.Value.tensor (8): dtype DT_STRING (7), empty shape (2), string_val (8).
  EXPECT_TRUE(contains(text, "    8 {\n      1: 7\n      2: \"\"\n      8: \"" + markdown + "\"\n    }\n"))
      << text;
  // Summary.Value.metadata (9) > plugin_data (1) > plugin_name (1).
  EXPECT_TRUE(contains(text, "    9 {\n      1 {\n        1: \"text\"\n      }\n    }\n")) << text;
}

TEST(EventWriter, RejectsImpossibleImageShape) {
  TempDir dir;
  EventWriter events(dir.path());
  EXPECT_THROW(events.add_image("a", "png", 4, 4, 5, 0), std::invalid_argument);
  EXPECT_THROW(events.add_image("a", "png", 0, 4, 3, 0), std::invalid_argument);
}

TEST(EventWriter, FolderUnderRegularFileThrowsNamingIt) {
  TempDir dir;
  write_file(dir / "plain_file", "not a folder");
  const auto log_dir = dir / "plain_file" / "tb";
  try {
    EventWriter events(log_dir);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_TRUE(contains(error.what(), log_dir.string())) << error.what();
    EXPECT_FALSE(contains(error.what(), "\n")) << error.what();
  }
}

}  // namespace
}  // namespace saccade::testing
