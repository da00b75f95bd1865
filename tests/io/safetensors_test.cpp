// safetensors reader/writer: round trips per dtype, a file written byte by byte from the format
// spec with hand-worked values, zero-copy views, and every kind of bad file as a clear error.
#include "io/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <string>

#include "test_util.h"

namespace saccade {
namespace {

using saccade::testing::read_file;
using saccade::testing::TempDir;
using saccade::testing::write_file;
using ::testing::HasSubstr;

// The 8-byte little-endian length, the header text, the data bytes.
std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
  return bytes + header + data;
}

std::string raw(std::initializer_list<int> values) {
  std::string bytes;
  for (const int v : values) bytes += static_cast<char>(v);
  return bytes;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  SafetensorsTest() { torch::manual_seed(0); }
  TempDir dir_;
};

TEST_F(SafetensorsTest, RoundTripKeepsEveryDtypeAndValue) {
  const std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"f32", torch::randn({3, 4})},
      {"f16", torch::randn({5}).to(torch::kHalf)},
      {"bf16", torch::randn({2, 3}).to(torch::kBFloat16)},
      {"f64", torch::randn({2}, torch::kDouble)},
      {"i64", torch::tensor({int64_t{-3}, int64_t{1} << 40})},
      {"u8", torch::tensor({0, 7, 255}, torch::kUInt8)},
      {"flag", torch::tensor({true, false, true})},
      {"scalar", torch::tensor(2.5f)},
      {"empty", torch::zeros({0, 3})},
      {"strided", torch::arange(12, torch::kFloat).view({3, 4}).t()},  // non-contiguous input
  };
  const auto path = dir_ / "all.safetensors";
  save_safetensors(path, tensors, {{"format", "pt"}, {"note", "quote \" and é"}});

  const SafetensorsReader reader(path);
  EXPECT_EQ(reader.size(), tensors.size());
  EXPECT_EQ(reader.metadata().at("format"), "pt");
  EXPECT_EQ(reader.metadata().at("note"), "quote \" and é");
  for (const auto& [name, expected] : tensors) {
    const torch::Tensor got = reader.get(name);
    EXPECT_EQ(got.scalar_type(), expected.scalar_type()) << name;
    EXPECT_EQ(got.sizes(), expected.sizes()) << name;
    EXPECT_TRUE(torch::equal(got, expected)) << name;
  }
  EXPECT_EQ(reader.entry("bf16").dtype, "BF16");
  EXPECT_EQ(reader.entry("scalar").shape, std::vector<int64_t>{});
  // Widest elements first, so every tensor starts aligned to its element size.
  for (const auto& key : reader.keys()) {
    const auto& entry = reader.entry(key);
    EXPECT_EQ(entry.begin % torch::elementSize(safetensors_scalar_type(entry.dtype)), 0u) << key;
  }
  // The header length is a multiple of 8.
  const std::string bytes = read_file(path);
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  EXPECT_EQ(header_length % 8, 0u);
}

TEST_F(SafetensorsTest, ConvertsHalfAndBfloatToTheRequestedDtype) {
  const torch::Tensor values = torch::tensor({1.0f, -0.5f, 3.25f, 1024.0f});  // exact in f16 and bf16
  const auto path = dir_ / "halves.safetensors";
  save_safetensors(path, {{"h", values.to(torch::kHalf)}, {"b", values.to(torch::kBFloat16)}});
  const SafetensorsReader reader(path);
  EXPECT_TRUE(torch::equal(reader.get("h", torch::kFloat), values));
  EXPECT_TRUE(torch::equal(reader.get("b", torch::kFloat), values));
  EXPECT_EQ(reader.get("h", torch::kFloat).scalar_type(), torch::kFloat);
  const auto all = load_safetensors(path, torch::kFloat);
  ASSERT_EQ(all.size(), 2u);
  for (const auto& [name, tensor] : all) EXPECT_TRUE(torch::equal(tensor, values)) << name;
}

// A file assembled byte by byte per the spec, with values worked out by hand:
//   F32  1.5 = 0x3FC00000, -2.0 = 0xC0000000
//   F16  1.0 = 0x3C00, 0.5 = 0x3800, -65504 = 0xFBFF
//   BF16 1.0 = 0x3F80, -3.0 = 0xC040, 0.15625 = 0x3E20
//   I64  -2 = 0xFFFFFFFFFFFFFFFE
TEST_F(SafetensorsTest, ReadsAFileWrittenByteByByteFromTheSpec) {
  const std::string header =
      R"({"__metadata__":{"who":"caf\u00e9"},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("n":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
      R"("b":{"dtype":"F16","shape":[3],"data_offsets":[16,22]},)"
      R"("c":{"dtype":"BF16","shape":[1,3],"data_offsets":[22,28]}}   )";  // trailing spaces are allowed
  const std::string data = raw({0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0x00, 0xC0,  // a
                                0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,  // n
                                0x00, 0x3C, 0x00, 0x38, 0xFF, 0xFB,              // b
                                0x80, 0x3F, 0x40, 0xC0, 0x20, 0x3E});            // c
  const auto path = dir_ / "spec.safetensors";
  write_file(path, safetensors_bytes(header, data));

  const SafetensorsReader reader(path);
  EXPECT_EQ(reader.keys(), (std::vector<std::string>{"a", "n", "b", "c"}));
  EXPECT_EQ(reader.metadata().at("who"), "caf\xC3\xA9");

  const torch::Tensor a = reader.get("a");
  ASSERT_EQ(a.scalar_type(), torch::kFloat);
  EXPECT_EQ(a[0].item<float>(), 1.5f);
  EXPECT_EQ(a[1].item<float>(), -2.0f);

  const torch::Tensor n = reader.get("n");
  EXPECT_EQ(n.dim(), 0);
  EXPECT_EQ(n.item<int64_t>(), -2);

  const torch::Tensor b = reader.get("b", torch::kFloat);
  ASSERT_EQ(b.sizes(), torch::IntArrayRef({3}));
  EXPECT_EQ(b[0].item<float>(), 1.0f);
  EXPECT_EQ(b[1].item<float>(), 0.5f);
  EXPECT_EQ(b[2].item<float>(), -65504.0f);
  EXPECT_EQ(reader.get("b").scalar_type(), torch::kHalf);

  // "c" starts at byte 22 of the data: not 4-aligned, but 2-aligned for bf16.
  const torch::Tensor c = reader.get("c", torch::kFloat);
  ASSERT_EQ(c.sizes(), torch::IntArrayRef({1, 3}));
  EXPECT_EQ(c[0][0].item<float>(), 1.0f);
  EXPECT_EQ(c[0][1].item<float>(), -3.0f);
  EXPECT_EQ(c[0][2].item<float>(), 0.15625f);
}

TEST_F(SafetensorsTest, MisalignedDataIsCopiedWithCorrectValues) {
  // A 5-byte header puts the f32 data at file offset 13: the reader must copy, not view.
  const std::string header =
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[1,9]},"p":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  const std::string data = raw({0x07, 0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0x00, 0xC0});
  const auto path = dir_ / "misaligned.safetensors";
  write_file(path, safetensors_bytes(header, data));
  const SafetensorsReader reader(path);
  EXPECT_EQ(reader.keys(), (std::vector<std::string>{"p", "x"}));
  EXPECT_TRUE(torch::equal(reader.get("x"), torch::tensor({1.5f, -2.0f})));
  EXPECT_EQ(reader.get("p").item<uint8_t>(), 7);
}

TEST_F(SafetensorsTest, ViewsOutliveTheReaderAndNeverWriteTheFile) {
  const auto path = dir_ / "view.safetensors";
  const torch::Tensor original = torch::arange(16, torch::kFloat);
  save_safetensors(path, {{"x", original}});
  const std::string before = read_file(path);
  torch::Tensor view;
  {
    const SafetensorsReader reader(path);
    view = reader.get("x");
  }
  EXPECT_TRUE(torch::equal(view, original));  // the mapping is alive through the view
  view.mul_(-1);                              // private mapping: a copy-on-write page
  EXPECT_TRUE(torch::equal(view, -original));
  EXPECT_EQ(read_file(path), before);
  EXPECT_TRUE(torch::equal(SafetensorsReader(path).get("x"), original));
}

TEST_F(SafetensorsTest, MissingKeyIsAnInvalidArgumentNamingIt) {
  const auto path = dir_ / "one.safetensors";
  save_safetensors(path, {{"x", torch::ones({1})}});
  const SafetensorsReader reader(path);
  EXPECT_FALSE(reader.contains("y"));
  try {
    reader.get("y");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), HasSubstr("No tensor 'y'"));
  }
}

TEST_F(SafetensorsTest, BadFilesAreClearErrors) {
  const std::string good_header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string eight(8, '\0');
  struct Case {
    std::string name;
    std::string bytes;
    std::string message;
  };
  std::string huge_length = safetensors_bytes(good_header, eight);
  huge_length[7] = static_cast<char>(0x7F);
  const std::vector<Case> cases = {
      {"empty", "", "shorter than the 8-byte header length"},
      {"short", "abc", "shorter than the 8-byte header length"},
      {"huge header length", huge_length, "exceeds the file's"},
      {"header cut short", safetensors_bytes(good_header, eight).substr(0, 30), "exceeds the file's"},
      {"data cut short", safetensors_bytes(good_header, eight).substr(0, 8 + good_header.size() + 5),
       "beyond the data section of 5 bytes"},
      {"not json", safetensors_bytes("{\"x\": nope}", ""), "Invalid safetensors header"},
      {"not an object", safetensors_bytes("[1, 2]", ""), "not a JSON object"},
      {"entry not an object", safetensors_bytes(R"({"x": 3})", ""), "tensor 'x' is not a JSON object"},
      {"no dtype", safetensors_bytes(R"({"x":{"shape":[1],"data_offsets":[0,4]}})", eight),
       "no string 'dtype'"},
      {"unknown dtype", safetensors_bytes(R"({"x":{"dtype":"U16","shape":[4],"data_offsets":[0,8]}})", eight),
       "unsupported dtype 'U16'"},
      {"offsets out of range",
       safetensors_bytes(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight),
       "beyond the data section of 8 bytes"},
      {"begin after end",
       safetensors_bytes(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", eight),
       "begin after end"},
      {"size disagrees",
       safetensors_bytes(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight), "needs 12"},
      {"negative offset",
       safetensors_bytes(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", eight),
       "must be a non-negative integer"},
      {"fractional shape",
       safetensors_bytes(R"({"x":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", eight),
       "must be a non-negative integer"},
      {"one offset", safetensors_bytes(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", eight),
       "needs 'data_offsets' as [begin, end]"},
      {"shape overflows",
       safetensors_bytes(
           R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight),
       "more than 2^64"},
      {"duplicate key",
       safetensors_bytes(
           R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
           eight),
       "Invalid safetensors header"},
      {"metadata not strings", safetensors_bytes(R"({"__metadata__":{"a":1}})", ""),
       "__metadata__ value of 'a'"},
      {"tensors overlap",
       safetensors_bytes(
           R"({"a":{"dtype":"U8","shape":[6],"data_offsets":[0,6]},"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
           eight),
       "tensor 'b' begins at byte 4 of the data, not at 6 where 'a' ends"},
      {"gap before the first",
       safetensors_bytes(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight),
       "tensor 'x' begins at byte 4 of the data, not at 0"},
  };
  for (const auto& c : cases) {
    const auto path = dir_ / "bad.safetensors";
    write_file(path, c.bytes);
    const std::string message =
        testing::message_of<std::runtime_error>([&] { SafetensorsReader reader(path); });
    EXPECT_THAT(message, HasSubstr(c.message)) << c.name;
    EXPECT_THAT(message, HasSubstr(path.string())) << c.name;
  }
  EXPECT_THAT(
      testing::message_of<std::runtime_error>([&] { SafetensorsReader reader(dir_ / "absent.safetensors"); }),
      HasSubstr("Could not open safetensors file"));
  EXPECT_THAT(
      testing::message_of<std::runtime_error>([&] { SafetensorsReader reader(dir_.path()); }),
      HasSubstr("not a regular file"));
}

TEST_F(SafetensorsTest, EveryTruncationOfAValidFileIsAnErrorNotACrash) {
  const auto path = dir_ / "whole.safetensors";
  save_safetensors(path, {{"a", torch::randn({3})}, {"b", torch::randn({2}).to(torch::kHalf)}});
  const std::string bytes = read_file(path);
  for (size_t length = 0; length < bytes.size(); ++length) {
    const auto cut = dir_ / "cut.safetensors";
    write_file(cut, bytes.substr(0, length));
    EXPECT_THROW(SafetensorsReader reader(cut), std::runtime_error) << "length " << length;
  }
}

TEST_F(SafetensorsTest, WriterRejectsBadTensorLists) {
  const auto path = dir_ / "w.safetensors";
  EXPECT_THROW(
      save_safetensors(path, {{"x", torch::ones({1})}, {"x", torch::ones({1})}}), std::invalid_argument);
  EXPECT_THROW(save_safetensors(path, {{"", torch::ones({1})}}), std::invalid_argument);
  EXPECT_THROW(save_safetensors(path, {{"__metadata__", torch::ones({1})}}), std::invalid_argument);
  EXPECT_THROW(
      save_safetensors(path, {{"c", torch::ones({1}, torch::kComplexFloat)}}), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(path));
  write_file(dir_ / "file", "not a folder");
  EXPECT_THROW(
      save_safetensors(dir_ / "file" / "x.safetensors", {{"x", torch::ones({1})}}), std::runtime_error);
}

}  // namespace
}  // namespace saccade
