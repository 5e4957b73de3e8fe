#include "checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "layout/layout.h"
#include "ops/dlpack.h"
#include "ops/ops.h"
#include "util/errors.h"
#include "views/views.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

// A safetensors file: the 8-byte little-endian length, the header, the data.
std::string FileBytes(const std::string& header, const std::string& data) {
  return SafetensorsLengthPrefix(header.size()) + header + data;
}

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/", name);
}

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string RandomBytes(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xFF);
  return out;
}

const SafetensorsTensor* Find(const Safetensors& s, const std::string& name) {
  for (const SafetensorsTensor& t : s.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<std::string> Names(const Safetensors& s) {
  std::vector<std::string> out;
  for (const SafetensorsTensor& t : s.tensors) out.push_back(t.name);
  return out;
}

// Scenario: plain tensors import in header order as compact row-major
// one-level Tensors over read-only mapped carriers holding the file's bytes.
TEST(ReadSafetensorsTest, PlainTensorsInHeaderOrderOverMappedCarriers) {
  const std::string data = RandomBytes(24 + 3 + 2 + 1, 1);
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("__metadata__":{"format":"pt","b":"x"},)"
      R"("a":{"dtype":"F4","shape":[5],"data_offsets":[24,27]},)"
      R"("s":{"dtype":"I16","shape":[],"data_offsets":[27,29]},)"
      R"("e":{"dtype":"BF16","shape":[0,4],"data_offsets":[29,29]},)"
      R"("flag":{"dtype":"BOOL","shape":[1],"data_offsets":[29,30]}})";
  const std::string bytes = FileBytes(header, data);
  const std::string path = WriteFile("plain.safetensors", bytes);
  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  EXPECT_EQ(Names(*read),
            (std::vector<std::string>{"w", "a", "s", "e", "flag"}));
  EXPECT_EQ(read->metadata, (std::vector<std::pair<std::string, std::string>>{
                                {"format", "pt"}, {"b", "x"}}));
  const int64_t data_start = 8 + header.size();
  struct Want {
    std::string name;
    const SimpleDType* dtype;
    std::vector<int64_t> shape;
    int64_t begin, bytes;
  };
  const Want wants[] = {{"w", dtypes::Float32(), {2, 3}, 0, 24},
                        {"a", dtypes::Float4E2M1FN(), {5}, 24, 3},
                        {"s", dtypes::Int16(), {}, 27, 2},
                        {"e", dtypes::BFloat16(), {0, 4}, 29, 0},
                        {"flag", dtypes::Bool(), {1}, 29, 1}};
  for (const Want& want : wants) {
    SCOPED_TRACE(want.name);
    const SafetensorsTensor* t = Find(*read, want.name);
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->tensor.ok()) << FormatError(t->tensor.status());
    const Tensor& tensor = *t->tensor;
    EXPECT_EQ(&tensor.dtype(), want.dtype);
    EXPECT_EQ(tensor.shape(), want.shape);
    EXPECT_EQ(tensor.num_subtensors(), 1);
    EXPECT_EQ(tensor.offset(), 0);
    EXPECT_EQ(tensor.layout(), *Layout::RowMajor(IntTuple::Flat(want.shape)));
    const auto* m = dynamic_cast<const MappedCarrier*>(tensor.carrier().get());
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->class_name(), "mapped");
    EXPECT_TRUE(m->read_only());
    EXPECT_EQ(m->file(), path);
    EXPECT_EQ(m->file_offset(), data_start + want.begin);
    EXPECT_EQ(m->size_in_bytes(), want.bytes);
    EXPECT_EQ(m->version(), 0u);
    EXPECT_EQ(tensor.carrier()->mutable_data(), nullptr);
    const std::string held(static_cast<const char*>(m->data()), want.bytes);
    EXPECT_EQ(held, bytes.substr(data_start + want.begin, want.bytes));
  }
  // The float32 values read back through an op (no copy was made on import).
  auto w = Find(*read, "w")->tensor;
  float first;
  std::memcpy(&first, data.data(), 4);
  auto item = GetItem(*w, IntTuple::Tuple({0, 0}));
  ASSERT_TRUE(item.ok());
  if (first == first) {
    EXPECT_EQ(item->as_double(), first);
  }
}

// The mxfp4 bytes of one element: nibble `value` of the packed blocks.
uint8_t Nibble(const std::string& bytes, int64_t offset, int64_t value) {
  const uint8_t byte = static_cast<uint8_t>(bytes[offset + value / 2]);
  return value % 2 == 0 ? byte & 0xF : byte >> 4;
}

// The header of an MXFP4 pair P of E experts, R rows, G groups.
std::string PairHeader(const std::string& p, char sep, int64_t e, int64_t r,
                       int64_t g, bool scales_first = false) {
  const int64_t blocks = e * r * g * 16, scales = e * r * g;
  const std::string b = absl::StrCat(
      "\"", p, std::string(1, sep), "blocks\":{\"dtype\":\"U8\",\"shape\":[", e,
      ",", r, ",", g, ",16],\"data_offsets\":[0,", blocks, "]}");
  const std::string s =
      absl::StrCat("\"", p, std::string(1, sep),
                   "scales\":{\"dtype\":\"U8\",\"shape\":[", e, ",", r, ",", g,
                   "],\"data_offsets\":[", blocks, ",", blocks + scales, "]}");
  return scales_first ? absl::StrCat("{", s, ",", b, "}")
                      : absl::StrCat("{", b, ",", s, "}");
}

// Scenario: an MXFP4 pair imports as one mxfp4 Tensor whose every element
// code and scale, reached through L_0, S_0 and L_1, equals the file's bytes.
TEST(ReadSafetensorsTest, Mxfp4PairReachesEveryFileByteThroughTheLevels) {
  for (const char sep : {'.', '_'}) {
    for (const bool scales_first : {false, true}) {
      SCOPED_TRACE(absl::StrCat("separator ", std::string(1, sep),
                                scales_first ? ", scales first" : ""));
      const int64_t E = 2, R = 3, G = 2;
      const std::string header =
          PairHeader("mlp.experts.down", sep, E, R, G, scales_first);
      const std::string data = RandomBytes(E * R * G * 17, 7);
      const std::string bytes = FileBytes(header, data);
      const std::string path = WriteFile("pair.safetensors", bytes);
      auto read = ReadSafetensors(path);
      ASSERT_TRUE(read.ok()) << FormatError(read.status());
      ASSERT_EQ(Names(*read), std::vector<std::string>{"mlp.experts.down"});
      ASSERT_TRUE(read->tensors[0].tensor.ok())
          << FormatError(read->tensors[0].tensor.status());
      const Tensor& t = *read->tensors[0].tensor;
      EXPECT_EQ(&t.dtype(), dtypes::MXFP4());
      EXPECT_EQ(t.shape(), (std::vector<int64_t>{E, R, G * 32}));
      const Representation& rep = TensorAccess::representation(t);
      ASSERT_EQ(rep.num_levels(), 2);
      const Subtensor& v = rep.subtensor(0);
      const Subtensor& s = rep.subtensor(1);
      EXPECT_EQ(v.carrier->class_name(), "mapped");
      EXPECT_EQ(s.carrier->class_name(), "mapped");
      const int64_t start = 8 + header.size();
      const int64_t scale_start = start + E * R * G * 16;
      const Layout& l0 = v.placement;
      const Layout& l1 = s.placement;
      const Layout& s0 = rep.adjacent_layouts()[0];
      const auto* values = static_cast<const uint8_t*>(v.carrier->data());
      const auto* scales = static_cast<const uint8_t*>(s.carrier->data());
      int checked = 0;
      for (int64_t e = 0; e < E; ++e) {
        for (int64_t r = 0; r < R; ++r) {
          for (int64_t c = 0; c < G * 32; ++c) {
            const IntTuple coord =
                IntTuple::Tuple({e, r, IntTuple::Tuple({c % 32, c / 32})});
            const int64_t vi = v.offset + *l0.Crd2Idx(coord);
            const int64_t row = e * R + r, g = c / 32, t32 = c % 32;
            // Element 2i is the low nibble of byte i of the block.
            const int64_t file_value = (row * G + g) * 32 + t32;
            ASSERT_EQ(ReadPacked(values, 4, vi),
                      Nibble(bytes, start, file_value))
                << e << "," << r << "," << c;
            const int64_t si = s.offset + l1(*s0.Crd2Idx(coord));
            ASSERT_EQ(scales[si],
                      static_cast<uint8_t>(bytes[scale_start + row * G + g]));
            ++checked;
          }
        }
      }
      EXPECT_EQ(checked, E * R * G * 32);
    }
  }
}

// Scenario: one expert of an imported pair is a view (Slice along dim 0), and
// its dump still names the two regions of the file.
TEST(ReadSafetensorsTest, OneExpertOfAPairIsAView) {
  const std::string header = PairHeader("w", '.', 4, 2, 3);
  const std::string path = WriteFile(
      "experts.safetensors", FileBytes(header, RandomBytes(4 * 2 * 3 * 17, 3)));
  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok());
  auto expert = Slice(*read->tensors[0].tensor, 0, 2, 3);
  ASSERT_TRUE(expert.ok()) << FormatError(expert.status());
  EXPECT_EQ(expert->shape(), (std::vector<int64_t>{1, 2, 96}));
  EXPECT_EQ(expert->carrier(), read->tensors[0].tensor->carrier());
  // The mapping outlives the Safetensors result.
  read = absl::InternalError("dropped");
  auto squeezed = Squeeze(*expert, {0});
  ASSERT_TRUE(squeezed.ok());
  const auto* values = static_cast<const uint8_t*>(expert->carrier()->data());
  EXPECT_NE(values, nullptr);
  EXPECT_EQ(ReadPacked(values, 4, expert->offset()),
            ReadPacked(values, 4, expert->offset()));
}

Safetensors MustRead(const std::string& name, const std::string& header,
                     const std::string& data) {
  auto read = ReadSafetensors(WriteFile(name, FileBytes(header, data)));
  EXPECT_TRUE(read.ok()) << FormatError(read.status());
  return read.ok() ? *std::move(read) : Safetensors{};
}

std::string EntryError(const Safetensors& s, const std::string& name) {
  const SafetensorsTensor* t = Find(s, name);
  if (t == nullptr) return "<absent>";
  if (t->tensor.ok()) return "<ok>";
  EXPECT_TRUE(IsValueError(t->tensor.status())) << t->tensor.status();
  return std::string(t->tensor.status().message());
}

// Scenario: an inconsistent pair is a ValueError for P (never bytes); a lone
// half is a plain U8 Tensor; the two spellings do not mix.
TEST(ReadSafetensorsTest, InconsistentPairsAreValueErrorsForP) {
  auto pair = [](const std::string& bdtype, const std::string& bshape,
                 int64_t bbytes, const std::string& sdtype,
                 const std::string& sshape, int64_t sbytes) {
    return absl::StrCat(R"({"p.blocks":{"dtype":")", bdtype, R"(","shape":)",
                        bshape, R"(,"data_offsets":[0,)", bbytes,
                        R"(]},"p.scales":{"dtype":")", sdtype, R"(","shape":)",
                        sshape, R"(,"data_offsets":[)", bbytes, ",",
                        bbytes + sbytes, R"(]},"x":{"dtype":"U8","shape":[1],)",
                        R"("data_offsets":[)", bbytes + sbytes, ",",
                        bbytes + sbytes + 1, "]}}");
  };
  struct Case {
    std::string header;
    int64_t data;
    std::string message;
  };
  const Case cases[] = {
      {pair("I8", "[2,16]", 32, "U8", "[2]", 2), 35,
       "must be U8; got I8 and U8"},
      {pair("U8", "[2,16]", 32, "F8_E8M0", "[2]", 2), 35,
       "must be U8; got U8 and F8_E8M0"},
      {pair("U8", "[2,15]", 30, "U8", "[2]", 2), 33, "(..., G, 16)"},
      {pair("U8", "[2,16]", 32, "U8", "[3]", 3), 36,
       "got blocks (2,16) and scales (3)"},
      {pair("U8", "[32]", 32, "U8", "[2]", 2), 35, "(..., G, 16)"},
      {pair("U8", "[2,16]", 32, "U8", "[2,1]", 2), 35, "(..., G, 16)"},
      {pair("U8", "[2,16]", 30, "U8", "[2]", 2), 33, "needs 32 bytes"},
      {pair("U9", "[2,16]", 32, "U8", "[2]", 2), 35, "unknown dtype \"U9\""},
      // The blocks' strides fit; the values' (twice as many) do not.
      {pair("U8", "[0,288230376151711744,1,16]", 0, "U8",
            "[0,288230376151711744,1]", 0),
       1, "the logical shape (0,288230376151711744,32) overflows int64"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.header);
    Safetensors s =
        MustRead("bad_pair.safetensors", c.header, std::string(c.data, '\0'));
    EXPECT_EQ(Names(s), (std::vector<std::string>{"p", "x"}));
    EXPECT_THAT(EntryError(s, "p"), HasSubstr("MXFP4 pair \"p\""));
    EXPECT_THAT(EntryError(s, "p"), HasSubstr(c.message));
    EXPECT_EQ(EntryError(s, "x"), "<ok>");
  }
  // Lone halves and mixed spellings are plain U8 Tensors.
  Safetensors lone = MustRead(
      "lone.safetensors",
      R"({"a.blocks":{"dtype":"U8","shape":[1,16],"data_offsets":[0,16]},)"
      R"("b.blocks":{"dtype":"U8","shape":[1,16],"data_offsets":[16,32]},)"
      R"("b_scales":{"dtype":"U8","shape":[1],"data_offsets":[32,33]}})",
      std::string(33, '\1'));
  EXPECT_EQ(Names(lone),
            (std::vector<std::string>{"a.blocks", "b.blocks", "b_scales"}));
  for (const auto& t : lone.tensors) {
    ASSERT_TRUE(t.tensor.ok());
    EXPECT_EQ(&t.tensor->dtype(), dtypes::UInt8());
  }
  // A pair named like another entry is refused; the other entry imports.
  Safetensors clash = MustRead(
      "clash.safetensors",
      R"({"p":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
      R"("p.blocks":{"dtype":"U8","shape":[1,16],"data_offsets":[1,17]},)"
      R"("p.scales":{"dtype":"U8","shape":[1],"data_offsets":[17,18]}})",
      std::string(18, '\0'));
  ASSERT_EQ(clash.tensors.size(), 2u);
  EXPECT_TRUE(clash.tensors[0].tensor.ok());
  EXPECT_THAT(std::string(clash.tensors[1].tensor.status().message()),
              HasSubstr("another entry named \"p\""));
}

// Scenario: errors of one tensor are that tensor's ValueError naming it and
// the field; the other tensors still import.
TEST(ReadSafetensorsTest, TensorErrorsNameTheTensorAndTheField) {
  auto one = [](const std::string& info) {
    return absl::StrCat(
        R"({"ok":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)",
        R"("bad":)", info, "}");
  };
  struct Case {
    std::string info;
    std::string message;
  };
  const Case cases[] = {
      {R"({"dtype":"U16","shape":[1],"data_offsets":[2,4]})",
       "unknown dtype \"U16\""},
      {R"({"dtype":"F8_E4M3FNUZ","shape":[2],"data_offsets":[2,4]})",
       "unknown dtype \"F8_E4M3FNUZ\""},
      {R"({"dtype":7,"shape":[2],"data_offsets":[2,4]})",
       "\"dtype\" is not a string: 7"},
      {R"({"shape":[2],"data_offsets":[2,4]})", "no \"dtype\""},
      {R"({"dtype":"U8","data_offsets":[2,4]})", "no \"shape\""},
      {R"({"dtype":"U8","shape":2,"data_offsets":[2,4]})",
       "\"shape\" is not an array: 2"},
      {R"({"dtype":"F32","shape":[1],"data_offsets":[2,4]})",
       "shape (1) of F32 needs 4 bytes; data_offsets [2, 4] hold 2"},
      {R"({"dtype":"F4","shape":[3],"data_offsets":[2,4]})", "<ok>"},
      {R"({"dtype":"F4","shape":[5],"data_offsets":[2,4]})",
       "shape (5) of F4 needs 3 bytes"},
      {R"({"dtype":"U8","shape":[-2],"data_offsets":[2,4]})",
       "extent 0 of \"shape\" is -2, negative"},
      {R"({"dtype":"U8","shape":[2,-1,-1],"data_offsets":[2,4]})",
       "extent 1 of \"shape\" is -1, negative"},
      {R"({"dtype":"U8","shape":[9223372036854775808],"data_offsets":[2,4]})",
       "9223372036854775808, overflows int64"},
      {R"({"dtype":"U8","shape":[99999999999999999999],"data_offsets":[2,4]})",
       "overflows int64"},
      {R"({"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[2,4]})",
       "has more values than int64 holds"},
      {R"({"dtype":"U8","shape":[0,4294967296,4294967296],"data_offsets":[4,4]})",
       "overflows int64"},
      {R"({"dtype":"F64","shape":[2305843009213693952],"data_offsets":[2,4]})",
       "needs more bytes than int64 holds"},
      {R"({"dtype":"U8","shape":[1.5],"data_offsets":[2,4]})",
       "is not an integer"},
      {R"({"dtype":"U8","shape":["2"],"data_offsets":[2,4]})",
       "extent 0 of \"shape\" is not an integer: \"2\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.info);
    const std::string header = one(c.info);
    // A zero-length bad tensor leaves bytes [2, 4) to "pad".
    std::string h = header;
    int64_t data = 4;
    if (c.info.find("[4,4]") != std::string::npos) {
      h = absl::StrCat(
          header.substr(0, header.size() - 1),
          R"(,"pad":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})");
    }
    Safetensors s =
        MustRead("tensor_error.safetensors", h, std::string(data, 0));
    EXPECT_EQ(EntryError(s, "ok"), "<ok>");
    const std::string got = EntryError(s, "bad");
    if (c.message == "<ok>") {
      EXPECT_EQ(got, "<ok>");
    } else {
      EXPECT_THAT(got, HasSubstr("tensor \"bad\""));
      EXPECT_THAT(got, HasSubstr(c.message));
    }
  }
}

absl::Status ReadError(const std::string& bytes) {
  auto read = ReadSafetensors(WriteFile("hostile.safetensors", bytes));
  return read.ok() ? absl::OkStatus() : read.status();
}

// Scenario: errors of the file itself make it "not a safetensors file".
TEST(ReadSafetensorsTest, FileErrorsAreNotASafetensorsFile) {
  const std::string good =
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  struct Case {
    std::string bytes;
    std::string message;
  };
  std::string lying = FileBytes(good, "ab");
  lying[0] = static_cast<char>(good.size() + 3);
  std::string huge(8, '\xff');
  const Case cases[] = {
      {"", "holds 0 bytes, fewer than the 8"},
      {"1234567", "holds 7 bytes, fewer than the 8"},
      {lying, absl::StrCat("the header length ", good.size() + 3,
                           " exceeds the ", good.size() + 2)},
      {huge + "{}", "the header length 18446744073709551615 exceeds the 2"},
      {FileBytes(good, "ab").substr(0, 20), "exceeds the 12 bytes"},
      {FileBytes("{\"a\":", ""),
       "the header is not JSON: parse error at line 1, column 6"},
      {FileBytes("\x80\x81", ""), "the header is not JSON"},
      {FileBytes("{} x", ""), "the header is not JSON"},
      {FileBytes("[1,2]", ""), "the header is not a JSON object: [1,2]"},
      {FileBytes(R"({"a":[1]})", ""),
       "the value of \"a\" is not an object: [1]"},
      {FileBytes(R"({"__metadata__":{"k":1}})", ""),
       "__metadata__ \"k\" is not a string: 1"},
      {FileBytes(
           R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{}})",
           "x"),
       "the key \"a\" appears twice in the header"},
      {FileBytes(
           R"({"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
           "x"),
       "the key \"dtype\" appears twice in an object"},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[1]}})", "x"),
       "tensor \"a\" has no \"data_offsets\""},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}})",
                 "x"),
       "data_offsets [1,0] is not [BEGIN, END]"},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})",
                 "x"),
       "is not [BEGIN, END]"},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0.0,1]}})",
                 "x"),
       "is not [BEGIN, END]"},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})",
                 "x"),
       "is not [BEGIN, END]"},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                 "x"),
       "data_offsets [0, 2] lie outside the data buffer of 1 bytes"},
      {FileBytes(
           R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551615]}})",
           "x"),
       "lie outside the data buffer"},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                 R"("b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
                 "xyz"),
       "tensors \"a\" [0, 2] and \"b\" [1, 3] overlap"},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                 R"("b":{"dtype":"U8","shape":[0],"data_offsets":[1,1]}})",
                 "xy"),
       "overlap"},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                 R"("b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})",
                 "xyz"),
       "bytes [1, 2) of the data buffer belong to no tensor (a hole before "
       "\"b\")"},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                 "xy"),
       "bytes [1, 2) of the data buffer belong to no tensor (a hole at the "
       "end)"},
      {FileBytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                 "xy"),
       "bytes [0, 1) of the data buffer belong to no tensor"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.bytes);
    const absl::Status status = ReadError(c.bytes);
    EXPECT_TRUE(IsValueError(status)) << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("ReadSafetensors: not a safetensors file: "));
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
  // Unreadable files: missing, a directory.
  EXPECT_THAT(
      std::string(
          ReadSafetensors(TempPath("missing.safetensors")).status().message()),
      HasSubstr("cannot open"));
  EXPECT_THAT(
      std::string(ReadSafetensors(::testing::TempDir()).status().message()),
      HasSubstr("is not a regular file (a directory)"));
}

// The header limit: a sparse file just above 100 MB holding a header length of
// 100 MB + 1.
TEST(ReadSafetensorsTest, HeaderOverOneHundredMegabytesIsRefused) {
  const std::string path = TempPath("big_header.safetensors");
  const uint64_t n = kMaxSafetensorsHeaderBytes + 1;
  WriteFile("big_header.safetensors", SafetensorsLengthPrefix(n));
  ASSERT_EQ(truncate(path.c_str(), 8 + n), 0);
  const absl::Status status = ReadSafetensors(path).status();
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("the header length 100000001 exceeds the limit of "
                        "100000000 bytes"));
  unlink(path.c_str());
}

// Scenario: every write through a mapped carrier fails with a ValueError
// naming the carrier before any effect; its version never changes; reads,
// views, snapshots and DLPack export work as usual.
TEST(ReadSafetensorsTest,
     WritesThroughMappedCarriersAreRefusedBeforeAnyEffect) {
  const std::string data = RandomBytes(32, 5);
  std::string header =
      R"({"x":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}})";
  header.append((8 - header.size() % 8) % 8, ' ');  // Aligned values.
  Safetensors s = MustRead("readonly.safetensors", header, data);
  ASSERT_TRUE(s.tensors[0].tensor.ok());
  const Tensor x = *s.tensors[0].tensor;
  auto other = Zeros(*dtypes::Float32(), {2, 4});
  ASSERT_TRUE(other.ok());
  const auto check = [&](const absl::Status& status, const std::string& op) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(IsValueError(status)) << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(op + ": cannot write through the read-only mapped "
                               "carrier of 8 float32 values at bytes ["));
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("readonly.safetensors\""));
    EXPECT_EQ(x.carrier()->version(), 0u);
    EXPECT_EQ(std::string(static_cast<const char*>(x.carrier()->data()), 32),
              data);
  };
  check(Fill(x, Scalar::Float(1)), "Fill");
  check(SetItem(x, IntTuple::Tuple({0, 0}), Scalar::Float(1)), "SetItem");
  check(CopyFrom(x, *other), "CopyFrom");
  check(AddOut(x, *other, *other), "Add");
  check(NegOut(x, *other), "Neg");
  check(Fill(*Slice(x, 1, 0, 2), Scalar::Float(1)), "Fill");
  auto empty = Slice(x, 0, 0, 0);
  ASSERT_TRUE(empty.ok());
  check(Fill(*empty, Scalar::Float(1)), "Fill");
  EXPECT_EQ(x.carrier()->BumpVersion(), 0u);
  // Reads and copies.
  auto copy = Clone(x);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(std::string(static_cast<const char*>(copy->carrier()->data()), 32),
            data);
  ASSERT_EQ(x.Snapshot().size(), 1u);
  EXPECT_EQ(x.Snapshot()[0].version, 0u);
  auto exported = ToDLPack(x);
  ASSERT_TRUE(exported.ok()) << FormatError(exported.status());
  EXPECT_EQ((*exported)->dl_tensor.data, x.carrier()->data());
  // Imported back, the export stays read-only.
  {
    DLManagedTensor* again = *ToDLPack(x);
    auto imported = FromDLPack(again);
    ASSERT_TRUE(imported.ok()) << FormatError(imported.status());
    EXPECT_TRUE(imported->carrier()->read_only());
    EXPECT_TRUE(IsValueError(Fill(*imported, Scalar::Float(1))));
  }
  // The export pins the mapping: a Release meanwhile keeps the bytes.
  x.carrier()->Release();
  EXPECT_EQ(
      std::string(static_cast<const char*>((*exported)->dl_tensor.data), 32),
      data);
  (*exported)->deleter(*exported);
}

// Values the file does not align to their width are read by GetItem and
// refused by the kernels that read typed values.
TEST(ReadSafetensorsTest, UnalignedValuesAreRefusedByTypedKernels) {
  const std::string header =
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_NE((8 + header.size()) % 4, 0u);
  std::string data(8, '\0');
  const float one = 1;
  std::memcpy(&data[4], &one, 4);
  Safetensors s = MustRead("unaligned.safetensors", header, data);
  ASSERT_TRUE(s.tensors[0].tensor.ok());
  const Tensor& x = *s.tensors[0].tensor;
  EXPECT_EQ(GetItem(x, IntTuple::Tuple({1}))->as_double(), 1.0);
  const absl::Status sum = Sum(x).status();
  EXPECT_TRUE(IsValueError(sum)) << sum;
  EXPECT_THAT(std::string(sum.message()),
              HasSubstr("not aligned to their 4 bytes"));
}

// Scenario: write -> read -> write is byte-identical; one-level Tensors of any
// layout are written row-major; an mxfp4 Tensor (and one expert of it) is
// written as a pair.
TEST(WriteSafetensorsTest, WriteReadWriteIsByteIdentical) {
  const std::string header = PairHeader("moe", '.', 3, 2, 2);
  Safetensors pair =
      MustRead("src_pair.safetensors", header, RandomBytes(3 * 2 * 2 * 17, 9));
  ASSERT_TRUE(pair.tensors[0].tensor.ok());
  const Tensor moe = *pair.tensors[0].tensor;
  // A float32 (3,4) Tensor and its transpose (a non-row-major layout).
  auto f = Zeros(*dtypes::Float32(), {3, 4});
  ASSERT_TRUE(f.ok());
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      ASSERT_TRUE(
          SetItem(*f, IntTuple::Tuple({i, j}), Scalar::Float(i * 4 + j)).ok());
    }
  }
  auto ft = Permute(*f, {1, 0});
  ASSERT_TRUE(ft.ok());
  auto fp4 = Zeros(*dtypes::Float4E2M1FN(), {7});
  ASSERT_TRUE(fp4.ok());
  auto* nibbles = static_cast<uint8_t*>(fp4->carrier()->mutable_data());
  for (int i = 0; i < 7; ++i) WritePacked(nibbles, 4, i, (i * 5 + 3) & 0xF);
  auto fp4_strided = Slice(*fp4, 0, 1, 7, 2);  // Values 1, 3, 5.
  ASSERT_TRUE(fp4_strided.ok());
  auto expert = Slice(moe, 0, 1, 2);
  ASSERT_TRUE(expert.ok());
  auto scalar = Zeros(*dtypes::Int64(), {});
  ASSERT_TRUE(scalar.ok());
  auto empty = Zeros(*dtypes::BFloat16(), {0, 3});
  ASSERT_TRUE(empty.ok());
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"f", *f},           {"ft", *ft},
      {"fp4", *fp4},       {"fp4_odd", *fp4_strided},
      {"moe", moe},        {"expert1", *expert},
      {"scalar", *scalar}, {"empty", *empty}};
  const std::vector<std::pair<std::string, std::string>> metadata = {
      {"format", "pt"}, {"note", "caf\xc3\xa9"}};
  const std::string first = TempPath("first.safetensors");
  ASSERT_TRUE(WriteSafetensors(first, tensors, metadata).ok());
  auto read = ReadSafetensors(first);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  EXPECT_EQ(Names(*read),
            (std::vector<std::string>{"f", "ft", "fp4", "fp4_odd", "moe",
                                      "expert1", "scalar", "empty"}));
  EXPECT_EQ(read->metadata, metadata);
  std::vector<std::pair<std::string, Tensor>> again;
  for (const SafetensorsTensor& t : read->tensors) {
    ASSERT_TRUE(t.tensor.ok())
        << t.name << ": " << FormatError(t.tensor.status());
    again.emplace_back(t.name, *t.tensor);
  }
  const std::string second = TempPath("second.safetensors");
  ASSERT_TRUE(WriteSafetensors(second, again, read->metadata).ok());
  const std::string a = ReadFile(first), b = ReadFile(second);
  EXPECT_EQ(a, b);
  // The header is padded to 8 bytes and lists the pair's halves.
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = n << 8 | static_cast<uint8_t>(a[k]);
  EXPECT_EQ(n % 8, 0u);
  const std::string head = a.substr(8, n);
  EXPECT_THAT(head,
              HasSubstr(R"("__metadata__":{"format":"pt","note":"café"})"));
  EXPECT_THAT(head,
              HasSubstr(R"("moe.blocks":{"dtype":"U8","shape":[3,2,2,16])"));
  EXPECT_THAT(head,
              HasSubstr(R"("expert1.scales":{"dtype":"U8","shape":[1,2,2])"));
  // The transpose was written row-major: ft[j][i] = i*4 + j.
  const Tensor& rt = *Find(*read, "ft")->tensor;
  EXPECT_EQ(rt.shape(), (std::vector<int64_t>{4, 3}));
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(GetItem(rt, IntTuple::Tuple({j, i}))->as_double(), i * 4 + j);
    }
  }
  // fp4_odd holds nibbles 1, 3, 5 with a zero high nibble in its last byte.
  const auto* odd = static_cast<const uint8_t*>(
      Find(*read, "fp4_odd")->tensor->carrier()->data());
  EXPECT_EQ(odd[0], ((3 * 5 + 3) & 0xF) << 4 | ((1 * 5 + 3) & 0xF));
  EXPECT_EQ(odd[1], (5 * 5 + 3) & 0xF);
  // The expert's pair holds the source pair's expert 1 bytes.
  const std::string src = ReadFile(TempPath("src_pair.safetensors"));
  const int64_t src_start = 8 + header.size();
  const auto* eb = static_cast<const char*>(
      Find(*read, "expert1")->tensor->carrier()->data());
  EXPECT_EQ(std::string(eb, 2 * 2 * 16),
            src.substr(src_start + 2 * 2 * 16, 2 * 2 * 16));
}

// Scenario: what has no safetensors form is refused before the file is
// touched.
TEST(WriteSafetensorsTest, RefusalsLeaveTheFileUntouched) {
  const std::string path = TempPath("untouched.safetensors");
  WriteFile("untouched.safetensors", "keep");
  auto f = Zeros(*dtypes::Float32(), {2});
  ASSERT_TRUE(f.ok());
  auto expect_refused = [&](std::vector<std::pair<std::string, Tensor>> t,
                            std::vector<std::pair<std::string, std::string>> m,
                            const std::string& message) {
    SCOPED_TRACE(message);
    const absl::Status status = WriteSafetensors(path, t, m);
    EXPECT_TRUE(IsValueError(status)) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(message));
    EXPECT_EQ(ReadFile(path), "keep");
  };
  expect_refused({{"a", *f}, {"a", *f}}, {},
                 "tensor \"a\": the name is written twice");
  expect_refused({{"__metadata__", *f}}, {}, "reserved");
  expect_refused({{"bad\xff", *f}}, {}, "not UTF-8");
  expect_refused({{"a", *f}}, {{"k", "\xc3"}}, "not UTF-8");
  expect_refused({{"a", *f}}, {{"k", "1"}, {"k", "2"}}, "written twice");
  const std::string header = PairHeader("p", '.', 1, 2, 1);
  Safetensors pair =
      MustRead("w_pair.safetensors", header, RandomBytes(2 * 17, 4));
  const Tensor p = *pair.tensors[0].tensor;
  expect_refused({{"p.blocks", *f}, {"p", p}}, {},
                 "tensor \"p.blocks\": the name is written twice");
  // Blocked along dim 0 after a permute: not a pair's layout.
  auto pt = Permute(p, {0, 2, 1});
  ASSERT_TRUE(pt.ok()) << FormatError(pt.status());
  expect_refused({{"pt", *pt}}, {}, "not blocked along its last dim");
  auto recorded = Tensor::Create(RecordedCarrier::Create(*dtypes::Float32(), 4),
                                 0, *Layout::RowMajor(IntTuple::Flat({4})));
  ASSERT_TRUE(recorded.ok());
  expect_refused({{"r", *recorded}}, {}, "holds no host data");
  const absl::Status unwritable =
      WriteSafetensors(TempPath("no/such/dir/x.safetensors"), {{"a", *f}});
  EXPECT_TRUE(IsValueError(unwritable));
  EXPECT_THAT(std::string(unwritable.message()), HasSubstr("cannot create"));
}

TEST(WriteSafetensorsTest, WhatIsNotARegularFileIsNeverReplaced) {
  auto f = Zeros(*dtypes::Float32(), {2});
  ASSERT_TRUE(f.ok());
  // A directory, a device: refused, and left as they are.
  for (const std::string& path :
       {::testing::TempDir(), std::string("/dev/null")}) {
    const absl::Status status = WriteSafetensors(path, {{"a", *f}});
    EXPECT_TRUE(IsValueError(status)) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr("not a regular file"));
  }
  // A FIFO neither blocks the writer nor is replaced.
  const std::string fifo = TempPath("w_fifo");
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(IsValueError(WriteSafetensors(fifo, {{"a", *f}})));
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A symbolic link stays; the file it leads to is written.
  const std::string target = WriteFile("w_target.safetensors", "old");
  const std::string link = TempPath("w_link.safetensors");
  unlink(link.c_str());
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  ASSERT_TRUE(WriteSafetensors(link, {{"a", *f}}).ok());
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  auto read = ReadSafetensors(target);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(Names(*read), std::vector<std::string>{"a"});
}

TEST(WriteSafetensorsTest, ABroadcastOfManyValuesIsWrittenInChunks) {
  // 2^23 values (32 MiB) from one stored value: more than one chunk, the
  // last partial, every value the stored one.
  auto one = Zeros(*dtypes::Float32(), {1});
  ASSERT_TRUE(Fill(*one, Scalar::Float(1.5)).ok());
  const int64_t n = (int64_t{1} << 23) + 5;
  auto wide = BroadcastTo(*one, {n});
  ASSERT_TRUE(wide.ok());
  const std::string path = TempPath("w_wide.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {{"w", *wide}}).ok());
  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status();
  const Tensor& w = *read->tensors[0].tensor;
  ASSERT_EQ(w.size(), n);
  const float* values = static_cast<const float*>(w.carrier()->data());
  for (int64_t k :
       {int64_t{0}, (int64_t{1} << 22) - 1, int64_t{1} << 22, n - 1}) {
    EXPECT_EQ(values[w.offset() + k], 1.5f) << k;
  }
}

TEST(ReadSafetensorsTest, DeeplyNestedHeadersAreRefusedWithABoundedMessage) {
  for (const std::string& header :
       {std::string(100000, '[') + std::string(100000, ']'),
        "{\"__metadata__\":" + std::string(100000, '[') +
            std::string(100000, ']') + "}"}) {
    const std::string path = WriteFile(
        "deep.safetensors", SafetensorsLengthPrefix(header.size()) + header);
    const auto read = ReadSafetensors(path);
    EXPECT_TRUE(IsValueError(read.status())) << read.status();
    EXPECT_LT(read.status().message().size(), 400u);
  }
}

TEST(ReadSafetensorsTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = TempPath("r_fifo");
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto read = ReadSafetensors(fifo);
  EXPECT_TRUE(IsValueError(read.status()));
  EXPECT_THAT(std::string(read.status().message()),
              HasSubstr("not a regular file"));
}

TEST(ReadSafetensorsTest, AWriteThroughAMappedExportNeverReachesTheFile) {
  // NOTE [ Private writable mappings ]: what a DLPack consumer that cannot
  // be told "read-only" might do.
  auto f = Zeros(*dtypes::Float32(), {4});
  ASSERT_TRUE(f.ok());
  const std::string path = TempPath("private.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {{"a", *f}}).ok());
  const std::string before = ReadFile(path);
  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok());
  const Tensor& a = *read->tensors[0].tensor;
  EXPECT_TRUE(a.carrier()->read_only());
  float* foreign = static_cast<float*>(const_cast<void*>(a.carrier()->data()));
  foreign[a.offset()] = 7.0f;  // No fault.
  EXPECT_EQ(ReadFile(path), before);
}

}  // namespace
}  // namespace strata
