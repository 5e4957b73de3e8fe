#include "proto/codec.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "core/representation.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "layout/layout.h"
#include "layout/random_layouts.h"
#include "proto/examples.h"
#include "util/errors.h"

namespace strata {
namespace {

proto::RepresentationProto Text(const std::string& text) {
  auto proto = ParseText(text);
  EXPECT_TRUE(proto.ok()) << proto.status();
  return proto.ok() ? *proto : proto::RepresentationProto();
}

constexpr char kMx[] = R"txt(
logical_dtype: "mxfp8_e4m3"
carriers { id: "v" carrier_class: "host" dtype: "float8_e4m3fn" size: 256 version: 3 }
carriers { id: "s" carrier_class: "host" dtype: "float8_e8m0fnu" size: 8 version: 5 }
subtensors { storage_dtype: "float8_e4m3fn" carrier: "v" offset: 0 placement: "(4,(32,2)):(64,(1,32))" }
subtensors { storage_dtype: "float8_e8m0fnu" carrier: "s" offset: 0 placement: "(4,2):(2,1)" }
adjacent_layouts: "(4,(32,2)):(1,(0,4))"
)txt";

absl::Status ReplayStatus(const std::string& text) {
  return Replay(Text(text)).status();
}

std::string Replace(std::string text, const std::string& from,
                    const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// A mapped Tensor dumps with its file and file_offset and no data; replay maps
// the file again; dump -> replay -> dump is stable. With data it is a host
// carrier holding a copy.
TEST(CodecTest, MappedCarriersDumpTheirFileAndReplayByMappingIt) {
  const std::string path = WriteTemp("codec_mapped.bin", "0123456789abcdef");
  auto carrier = MappedCarrier::Open(*dtypes::UInt8(), 8, path, 5);
  ASSERT_TRUE(carrier.ok()) << carrier.status();
  auto tensor =
      Tensor::Create(*carrier, 0, *Layout::RowMajor(IntTuple::Flat({2, 4})));
  ASSERT_TRUE(tensor.ok());
  const proto::RepresentationProto dumped = ToProto(*tensor);
  ASSERT_EQ(dumped.carriers_size(), 1);
  EXPECT_EQ(dumped.carriers(0).carrier_class(), "mapped");
  EXPECT_EQ(dumped.carriers(0).file(), path);
  EXPECT_EQ(dumped.carriers(0).file_offset(), 5);
  EXPECT_TRUE(dumped.carriers(0).data().empty());
  const std::string text = ToText(dumped);
  EXPECT_NE(text.find("file: \"" + path + "\"\n  file_offset: 5"),
            std::string::npos)
      << text;
  auto replayed = Replay(Text(text));
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ(replayed->carrier()->class_name(), "mapped");
  EXPECT_NE(replayed->carrier(), tensor->carrier());
  EXPECT_EQ(
      std::string(static_cast<const char*>(replayed->carrier()->data()), 8),
      "56789abc");
  EXPECT_EQ(ToText(ToProto(*replayed)), text);
  const proto::RepresentationProto with_data = ToProto(*tensor, {true});
  EXPECT_EQ(with_data.carriers(0).carrier_class(), "host");
  EXPECT_EQ(with_data.carriers(0).data(), "56789abc");
  EXPECT_TRUE(with_data.carriers(0).file().empty());
  auto copy = Replay(with_data);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->carrier()->class_name(), "host");
}

// The contract's rules for "mapped" carriers of a text.
TEST(CodecTest, MappedCarrierTextFaults) {
  const std::string path = WriteTemp("codec_short.bin", "0123456789");
  const std::string good = absl::StrCat(R"txt(
    logical_dtype: "uint8"
    carriers { id: "m" carrier_class: "mapped" dtype: "uint8" size: 8 file: ")txt",
                                        path, R"txt(" file_offset: 2 }
    subtensors { storage_dtype: "uint8" carrier: "m" placement: "8:1" }
  )txt");
  EXPECT_TRUE(Replay(Text(good)).ok());
  const absl::Status short_file =
      ReplayStatus(Replace(good, "file_offset: 2", "file_offset: 3"));
  EXPECT_TRUE(IsValueError(short_file)) << short_file;
  EXPECT_NE(short_file.message().find("carrier \"m\""),
            absl::string_view::npos);
  EXPECT_NE(short_file.message().find(path + "\" holds 10 bytes, shorter than "
                                             "the 11"),
            absl::string_view::npos)
      << short_file;
  const absl::Status missing =
      ReplayStatus(Replace(good, "codec_short.bin", "codec_none.bin"));
  EXPECT_TRUE(IsValueError(missing)) << missing;
  EXPECT_NE(missing.message().find("carrier \"m\""), absl::string_view::npos);
  EXPECT_NE(missing.message().find("codec_none.bin"), absl::string_view::npos);
  const absl::Status no_file = ReplayStatus(
      Replace(good, absl::StrCat("file: \"", path, "\""), "file: \"\""));
  EXPECT_TRUE(IsValueError(no_file)) << no_file;
  const absl::Status negative_offset =
      ReplayStatus(Replace(good, "file_offset: 2", "file_offset: -2"));
  EXPECT_TRUE(IsValueError(negative_offset)) << negative_offset;
  const absl::Status data = ReplayStatus(
      Replace(good, "file_offset: 2", "file_offset: 2 data: \"abcdefgh\""));
  EXPECT_TRUE(IsValueError(data));
  EXPECT_NE(data.message().find("a mapped carrier of a file never holds data"),
            absl::string_view::npos);
  // With no file, a mapped carrier is an anonymous mapping holding its data
  // (NOTE [ Anonymous mapped carriers ]); without data it has no bytes.
  const std::string anonymous = R"txt(
    logical_dtype: "uint8"
    carriers { id: "c0" carrier_class: "mapped" dtype: "uint8" size: 4
               data: "wxyz" }
    subtensors { storage_dtype: "uint8" carrier: "c0" placement: "4:1" }
  )txt";
  auto mapped = Replay(Text(anonymous));
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(mapped->carrier()->class_name(), "mapped");
  EXPECT_EQ(std::string(static_cast<const char*>(mapped->carrier()->data()), 4),
            "wxyz");
  EXPECT_EQ(ToText(ToProto(*mapped)), ToText(Text(anonymous)));
  const absl::Status short_data =
      ReplayStatus(Replace(anonymous, "\"wxyz\"", "\"wxy\""));
  EXPECT_TRUE(IsValueError(short_data)) << short_data;
  const absl::Status no_bytes =
      ReplayStatus(Replace(anonymous, "data: \"wxyz\"", ""));
  EXPECT_TRUE(IsValueError(no_bytes)) << no_bytes;
  EXPECT_NE(no_bytes.message().find("anonymous mapping"),
            absl::string_view::npos)
      << no_bytes;
  // A file on a host carrier is meaningless.
  EXPECT_TRUE(
      IsValueError(ReplayStatus(Replace(good, "\"mapped\"", "\"host\""))));
  // A non-simple dtype or a negative size: built as "recorded", so universal
  // validation reports it (the file is not opened).
  const absl::Status negative =
      ReplayStatus(Replace(Replace(good, "size: 8", "size: -8"),
                           "codec_short.bin", "codec_none.bin"));
  EXPECT_TRUE(IsValueError(negative)) << negative;
  EXPECT_NE(negative.message().find("negative"), absl::string_view::npos)
      << negative;
  const absl::Status compound = ReplayStatus(
      Replace(good, "dtype: \"uint8\" size", "dtype: \"mxfp4\" size"));
  EXPECT_TRUE(IsValueError(compound)) << compound;
  EXPECT_NE(compound.message().find("mxfp4"), absl::string_view::npos);
  // Unused mapped carriers are never opened.
  EXPECT_TRUE(
      Replay(Text(absl::StrCat(
                 good, R"txt(carriers { id: "u" carrier_class: "mapped" )txt",
                 R"txt(dtype: "uint8" size: 9 file: "/nonexistent" })txt")))
          .ok());
}

TEST(CodecTest, ExamplesRoundTripByteForByte) {
  for (const std::string& name : ExampleNames()) {
    for (bool data : {false, true}) {
      auto tensor = MakeExample(name);
      ASSERT_TRUE(tensor.ok()) << name << ": " << tensor.status();
      const std::string first = ToText(ToProto(*tensor, {data}));
      auto replayed = Replay(Text(first));
      ASSERT_TRUE(replayed.ok()) << name << ": " << replayed.status();
      EXPECT_EQ(ToText(ToProto(*replayed, {data})), first) << name;
    }
  }
}

TEST(CodecTest, ReplayKeepsCarrierIdentityAndVersions) {
  auto replayed = ReplayWithIds(Text(kMx));
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  const MutationSnapshot snapshot = replayed->tensor.Snapshot();
  ASSERT_EQ(snapshot.size(), 2u);
  EXPECT_EQ(snapshot[0].version, 3u);
  EXPECT_EQ(snapshot[1].version, 5u);
  EXPECT_EQ(replayed->carrier_ids[0].second, "v");
  EXPECT_EQ(replayed->carrier_ids[1].second, "s");
  // Two subtensors naming one carrier share one object.
  auto shared = Replay(Text(R"txt(
    logical_dtype: "mxfp8_e4m3"
    carriers {
      id: "a"
      carrier_class: "recorded"
      dtype: "float8_e4m3fn"
      size: 64
    }
    subtensors { storage_dtype: "float8_e4m3fn" carrier: "a" placement: "8:1" }
    subtensors { storage_dtype: "float8_e8m0fnu" carrier: "a" placement: "8:1" }
    adjacent_layouts: "8:1"
  )txt"));
  EXPECT_TRUE(IsValueError(shared.status())) << "dtype mismatch on level 1";
}

TEST(CodecTest, TextFaultsMapOntoTheSpecClasses) {
  EXPECT_TRUE(IsValueError(ReplayStatus(Replace(
      kMx, "logical_dtype: \"mxfp8_e4m3\"", "logical_dtype: \"mxfp9\""))));
  EXPECT_TRUE(IsValueError(ReplayStatus(Replace(
      kMx, "storage_dtype: \"float8_e8m0fnu\"", "storage_dtype: \"e9\""))));
  EXPECT_TRUE(IsValueError(ReplayStatus(
      Replace(kMx, "dtype: \"float8_e4m3fn\" size", "dtype: \"x\" size"))));
  const absl::Status unknown_class = ReplayStatus(
      Replace(kMx, "carrier_class: \"host\"", "carrier_class: \"gpu\""));
  EXPECT_TRUE(IsTypeError(unknown_class));
  EXPECT_EQ(unknown_class.message(), "subtensor 0: carrier is not a Carrier");
  const absl::Status missing_id =
      ReplayStatus(Replace(kMx, "carrier: \"s\"", "carrier: \"t\""));
  EXPECT_EQ(FormatError(missing_id),
            "TypeError: subtensor 1: carrier is not a Carrier");
  EXPECT_TRUE(
      IsValueError(ReplayStatus(Replace(kMx, "id: \"s\"", "id: \"v\""))));
  const absl::Status bad_layout = ReplayStatus(
      Replace(kMx, "placement: \"(4,2):(2,1)\"", "placement: \"(4,2):1\""));
  EXPECT_TRUE(IsTypeError(bad_layout));
  EXPECT_NE(bad_layout.message().find("subtensor 1: placement is not a Layout"),
            absl::string_view::npos);
  EXPECT_TRUE(IsTypeError(
      ReplayStatus(Replace(kMx, "adjacent_layouts: \"(4,(32,2)):(1,(0,4))\"",
                           "adjacent_layouts: \"?\""))));
  const absl::Status data =
      ReplayStatus(Replace(kMx, "size: 8 version: 5", "size: 8 data: \"abc\""));
  EXPECT_TRUE(IsValueError(data));
  EXPECT_NE(data.message().find("data holds 3 bytes"), absl::string_view::npos);
  // A host carrier of a compound dtype or a negative size is built as
  // "recorded", so universal validation reports it as the spec says. Here level
  // 1 becomes "recorded" beside a "host" level 0: mixed classes.
  EXPECT_TRUE(IsTypeError(ReplayStatus(Replace(
      kMx, "dtype: \"float8_e8m0fnu\" size: 8", "dtype: \"mxfp4\" size: 8"))));
  const absl::Status one_level = ReplayStatus(R"txt(
    logical_dtype: "float32"
    carriers { id: "c0" carrier_class: "host" dtype: "mxfp4" size: 8 }
    subtensors { storage_dtype: "float32" carrier: "c0" placement: "8:1" }
  )txt");
  EXPECT_EQ(FormatError(one_level),
            "ValueError: subtensor 0: carrier dtype mxfp4 is not the identical "
            "storage "
            "dtype float32");
  const absl::Status negative =
      ReplayStatus(Replace(kMx, "size: 8 version", "size: -8 version"));
  EXPECT_TRUE(IsTypeError(negative))
      << "recorded and host classes now mix: " << negative;
}

TEST(CodecTest, FailingScenariosReplayIntoTheSameErrors) {
  // Out-of-bounds placement, wrong adjacent domain, adjacent result outside the
  // target.
  const absl::Status bounds =
      ReplayStatus(Replace(kMx, "size: 8 version", "size: 7 version"));
  EXPECT_EQ(FormatError(bounds),
            "ValueError: subtensor 1: placement (4,2):(2,1) at offset 0 needs "
            "8 carrier "
            "values, carrier has 7 (the placement exceeds the carrier size)");
  const absl::Status domain =
      ReplayStatus(Replace(kMx, "adjacent_layouts: \"(4,(32,2)):(1,(0,4))\"",
                           "adjacent_layouts: \"(4,64):(1,0)\""));
  EXPECT_TRUE(IsValueError(domain));
  EXPECT_NE(domain.message().find("adjacent level 0"), absl::string_view::npos);
  const absl::Status range =
      ReplayStatus(Replace(kMx, "adjacent_layouts: \"(4,(32,2)):(1,(0,4))\"",
                           "adjacent_layouts: \"(4,(32,2)):(1,(0,5))\""));
  EXPECT_NE(range.message().find("reaches linear index 8"),
            absl::string_view::npos);
  const absl::Status count = ReplayStatus(
      Replace(kMx, "adjacent_layouts: \"(4,(32,2)):(1,(0,4))\"", ""));
  EXPECT_TRUE(IsValueError(count));
  const absl::Status category = ReplayStatus(Replace(
      kMx, "logical_dtype: \"mxfp8_e4m3\"", "logical_dtype: \"Floating\""));
  EXPECT_NE(category.message().find("no Tensor storage schema"),
            absl::string_view::npos);
}

TEST(CodecTest, ParseErrorsNameLineAndColumn) {
  auto bad = ParseText("logical_dtype: \"float32\"\ncarriers { id: 3 ");
  EXPECT_TRUE(IsTypeError(bad.status()));
  EXPECT_NE(bad.status().message().find("line 2"), absl::string_view::npos)
      << bad.status();
  EXPECT_FALSE(ParseText("\xff\xfe garbage {{{").ok());
  EXPECT_FALSE(ParseText("offset: 99999999999999999999999").ok());
}

TEST(CodecTest, HugeRepeatedFieldsFailFast) {
  proto::RepresentationProto p = Text(kMx);
  for (int i = 0; i < 200000; ++i)
    p.add_adjacent_layouts("(4,(32,2)):(1,(0,4))");
  const absl::Status count = Replay(p).status();
  EXPECT_TRUE(IsValueError(count));
  EXPECT_NE(count.message().find("got 200001"), absl::string_view::npos)
      << count;
  proto::RepresentationProto many = Text(kMx);
  for (int i = 0; i < 100000; ++i) {
    auto* c = many.add_carriers();
    c->set_id(absl::StrCat("x", i));
    c->set_carrier_class("recorded");
    c->set_dtype("float32");
  }
  EXPECT_TRUE(Replay(many).ok()) << "unused carriers are allowed, and cheap";
}

// Issue 16 item 9: a text over kMaxTextBytes is refused before it is parsed;
// one at the limit parses.
TEST(CodecTest, ParseTextRefusesATextOverTheSizeLimit) {
  std::string text = "logical_dtype: \"float32\"\n#";
  text.resize(kMaxTextBytes, 'x');  // The rest is one comment line.
  auto at_limit = ParseText(text);
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_EQ(at_limit->logical_dtype(), "float32");
  text.push_back('x');
  const absl::Status over = ParseText(text).status();
  EXPECT_TRUE(IsResourceExhaustedError(over)) << over;
  EXPECT_EQ(FormatError(over),
            "ResourceExhaustedError: ParseText: the text holds 67108865 bytes, "
            "above the limit kMaxTextBytes = 67108864 bytes (64 MiB)");
}

// Issue 16 item 9: the numbers of subtensors and adjacent layouts are checked
// against the schema before any layout is parsed or carrier built, with
// Representation::Create's own message.
TEST(CodecTest, ReplayChecksSchemaCountsBeforeParsingOrBuilding) {
  proto::RepresentationProto p = Text(kMx);
  // Adjacent layouts that do not parse: the count, not "not a Layout", is
  // reported, so none was parsed.
  for (int i = 0; i < 1000000; ++i) p.add_adjacent_layouts("?");
  const int64_t created = HostCarrier::created();
  const absl::Status count = Replay(p).status();
  EXPECT_EQ(HostCarrier::created(), created) << "no carrier was built";
  EXPECT_EQ(FormatError(count),
            "ValueError: logical dtype mxfp8_e4m3 has the storage schema "
            "(float8_e4m3fn, float8_e8m0fnu) of 2 entries, which needs 1 "
            "adjacent layouts; got 1000001");
  // Too many subtensors: the same message as Representation::Create.
  proto::RepresentationProto q = Text(kMx);
  *q.add_subtensors() = q.subtensors(0);
  const absl::Status replayed = Replay(q).status();
  const absl::Status created_directly =
      Representation::Create(dtypes::MXFP8E4M3(),
                             std::vector<SubtensorCandidate>(3), {})
          .status();
  EXPECT_TRUE(IsValueError(replayed));
  EXPECT_EQ(replayed.message(), created_directly.message());
  EXPECT_EQ(HostCarrier::created(), created);
}

// Issue 16 item 9: carriers are built only when a subtensor names them, so
// their number costs no allocation; every carrier is still checked.
TEST(CodecTest, ReplayBuildsOnlyTheCarriersThatSubtensorsName) {
  proto::RepresentationProto p = Text(kMx);
  for (int i = 0; i < 100000; ++i) {
    auto* c = p.add_carriers();
    c->set_id(absl::StrCat("unused", i));
    c->set_carrier_class("host");
    c->set_dtype("uint8");
    c->set_size(int64_t{1} << 40);  // 1 TiB each, if it were built.
  }
  const int64_t created = HostCarrier::created();
  auto replayed = Replay(p);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ(HostCarrier::created(), created + 2) << "only \"v\" and \"s\"";
  // An unused carrier is checked all the same.
  p.mutable_carriers(7)->set_dtype("float9");
  EXPECT_EQ(FormatError(Replay(p).status()),
            "ValueError: carrier \"unused5\": unknown dtype \"float9\"");
}

// Issue 16 item 9: a host/external carrier whose bytes overflow or exceed
// HostCarrier::kMaxHostBytes is a ResourceExhaustedError naming the carrier and
// the bytes, and nothing is allocated.
TEST(CodecTest,
     ReplayOfAHugeCarrierIsAResourceExhaustedErrorWithoutAllocating) {
  const int64_t created = HostCarrier::created();
  for (const char* carrier_class : {"host", "external"}) {
    const std::string bytes_over =
        Replace(Replace(kMx, "carrier_class: \"host\"",
                        absl::StrCat("carrier_class: \"", carrier_class, "\"")),
                "size: 256", "size: 4611686018427387904");
    // v is float8: 2^62 values need 2^62 bytes, above 2^46.
    const absl::Status over = ReplayStatus(bytes_over);
    EXPECT_TRUE(IsResourceExhaustedError(over)) << over;
    EXPECT_EQ(FormatError(over),
              absl::StrCat("ResourceExhaustedError: carrier \"v\": ",
                           carrier_class == std::string("host") ? "a " : "an ",
                           carrier_class,
                           " carrier of 4611686018427387904 float8_e4m3fn "
                           "values needs 4611686018427387904 bytes, above the "
                           "limit HostCarrier::kMaxHostBytes = 70368744177664 "
                           "bytes; it cannot be allocated"));
  }
  const absl::Status overflow = ReplayStatus(R"txt(
    logical_dtype: "float32"
    carriers { id: "c0" carrier_class: "host" dtype: "float32"
               size: 4611686018427387904 }
    subtensors { storage_dtype: "float32" carrier: "c0" placement: "8:1" }
  )txt");
  EXPECT_EQ(FormatError(overflow),
            "ResourceExhaustedError: carrier \"c0\": a host carrier of "
            "4611686018427387904 float32 values needs more than "
            "9223372036854775807 bytes; it cannot be allocated");
  EXPECT_EQ(HostCarrier::created(), created);
  // With data, the text's fault (a length that cannot match) comes first.
  const absl::Status data = ReplayStatus(R"txt(
    logical_dtype: "float32"
    carriers { id: "c0" carrier_class: "host" dtype: "float32"
               size: 4611686018427387904 data: "abcd" }
    subtensors { storage_dtype: "float32" carrier: "c0" placement: "8:1" }
  )txt");
  EXPECT_TRUE(IsValueError(data)) << data;
  // Recorded carriers allocate nothing and may be that large.
  const std::string recorded =
      Replace(Replace(Replace(kMx, "carrier_class: \"host\"",
                              "carrier_class: \"recorded\""),
                      "carrier_class: \"host\"", "carrier_class: \"recorded\""),
              "size: 256", "size: 4611686018427387904");
  EXPECT_TRUE(ReplayStatus(recorded).ok()) << ReplayStatus(recorded);
  EXPECT_EQ(HostCarrier::created(), created);
}

int64_t MappedBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  statm >> pages;
  return pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// Issue 16 item 6: a carrier the kernel refuses to map is a
// ResourceExhaustedError naming the carrier and the bytes (it printed
// "RESOURCE_EXHAUSTED:"). A child caps its address space just above what it
// has mapped, so the refusal is deterministic.
TEST(CodecTest, ReplayOfAnUnallocatableCarrierIsAResourceExhaustedError) {
  const proto::RepresentationProto p = Text(R"txt(
    logical_dtype: "uint8"
    carriers { id: "big" carrier_class: "host" dtype: "uint8"
               size: 1073741824 }
    subtensors { storage_dtype: "uint8" carrier: "big" placement: "8:1" }
  )txt");
  EXPECT_EXIT(
      {
        struct rlimit limit;
        if (getrlimit(RLIMIT_AS, &limit) != 0) _exit(2);
        limit.rlim_cur = MappedBytes() + (int64_t{256} << 20);
        if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
        const absl::Status status = Replay(p).status();
        if (!IsResourceExhaustedError(status)) _exit(4);
        if (FormatError(status).find(
                "ResourceExhaustedError: carrier \"big\": HostCarrier::Create: "
                "cannot map 1073741824 bytes for a host carrier of 1073741824 "
                "uint8 values") != 0) {
          _exit(5);
        }
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CodecTest, InvalidUtf8AndBinaryGarbageNeverCrash) {
  proto::RepresentationProto p = Text(kMx);
  p.set_logical_dtype(std::string("mx\xff\xfe", 4));
  // A dtype name that is not UTF-8 is an unknown name: ValueError.
  EXPECT_TRUE(IsValueError(Replay(p).status()));
  // Protobuf may refuse such a string when serializing or parsing; if it passes
  // through the wire, replay still answers with the same error.
  std::string bytes;
  (void)p.SerializeToString(&bytes);
  proto::RepresentationProto back;
  if (back.ParseFromString(bytes)) {
    EXPECT_TRUE(IsValueError(Replay(back).status()));
  }
  EXPECT_FALSE(ParseText("logical_dtype: \"\xff\xfe\"").ok() &&
               Replay(*ParseText("logical_dtype: \"\xff\xfe\"")).ok());
  for (int n = 0; n < 2000; ++n) {
    std::string garbage(n % 97, '\0');
    for (size_t i = 0; i < garbage.size(); ++i)
      garbage[i] = static_cast<char>(n * 31 + i * 7);
    proto::RepresentationProto g;
    if (g.ParseFromString(garbage)) (void)Replay(g);
    (void)ParseText(garbage);
  }
}

TEST(CodecTest, DumpReplayDumpIsStableOverRandomRepresentations) {
  testing::RandomLayouts gen(/*seed=*/11);
  for (int n = 0; n < 500; ++n) {
    const Layout l0 = gen.Any(4, 5, 6, 2);
    const int64_t offset =
        std::max<int64_t>(-l0.min_index(), 0) + gen.Uniform(0, 3);
    const int64_t size = offset + l0.cosize() + gen.Uniform(0, 4);
    if (n % 2 == 0) {
      auto carrier =
          *HostCarrier::Create(*dtypes::Int16(), size, gen.Uniform(0, 9));
      auto t = Tensor::Create(carrier, offset, l0);
      ASSERT_TRUE(t.ok()) << l0.ToString() << ": " << t.status();
      const std::string text = ToText(ToProto(*t, {true}));
      auto replayed = Replay(*ParseText(text));
      ASSERT_TRUE(replayed.ok()) << text;
      ASSERT_EQ(ToText(ToProto(*replayed, {true})), text);
    } else {
      // Two levels: scales indexed through a random non-negative adjacent map.
      const Layout l1 = *Layout::ColumnMajor(gen.Shape(2, 4, 1));
      IntTuple s_stride = l0.shape().TransformLeaves(
          [&](size_t, int64_t) { return gen.Uniform(0, 2); });
      const Layout s0 = *Layout::Create(l0.shape(), s_stride);
      if (s0.max_index() >= l1.size()) continue;
      auto values = *HostCarrier::Create(*dtypes::Float8E4M3FN(), size);
      auto scales = *HostCarrier::Create(*dtypes::Float8E8M0FNU(), l1.cosize());
      // Registered so that replay finds it by name; no block rule, any S_0.
      static const CompoundDType* two_level = [] {
        const CompoundDType* d = *CompoundDType::Create(
            "test_two_level",
            {dtypes::Float8E4M3FN(), dtypes::Float8E8M0FNU()});
        EXPECT_TRUE(DTypeRegistry::Global().Register(d).ok());
        return d;
      }();
      auto rep =
          Representation::Create(two_level,
                                 {{dtypes::Float8E4M3FN(), values, offset, l0},
                                  {dtypes::Float8E8M0FNU(), scales, 0, l1}},
                                 {s0});
      ASSERT_TRUE(rep.ok()) << rep.status();
      const std::string text = ToText(ToProto(**rep, {true}));
      auto replayed = Replay(*ParseText(text));
      ASSERT_TRUE(replayed.ok()) << text << replayed.status();
      ASSERT_EQ(ToText(ToProto(*replayed, {true})), text);
    }
  }
}

}  // namespace
}  // namespace strata
