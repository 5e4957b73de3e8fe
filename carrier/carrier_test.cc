#include "carrier/carrier.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "carrier/carrier_registry.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "util/errors.h"

namespace strata {
namespace {

TEST(HostCarrierTest, AlignedZeroFilledAndSizedInValues) {
  auto c = HostCarrier::Create(*dtypes::Float32(), 10);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->size(), 10);
  EXPECT_EQ((*c)->size_in_bytes(), 40);
  EXPECT_EQ(&(*c)->dtype(), dtypes::Float32());
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*c)->data()) % 64, 0u);
  const auto* bytes = static_cast<const uint8_t*>((*c)->data());
  for (int i = 0; i < 40; ++i) EXPECT_EQ(bytes[i], 0);
  EXPECT_EQ((*c)->class_name(), "host");
  EXPECT_EQ((*c)->type(), std::type_index(typeid(HostCarrier)));
}

TEST(HostCarrierTest, SubByteValuesPackTwoPerByteLowNibbleFirst) {
  auto c = HostCarrier::Create(*dtypes::Float4E2M1FN(), 5);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->size(), 5);
  EXPECT_EQ((*c)->size_in_bytes(), 3);
  auto* bytes = static_cast<uint8_t*>((*c)->mutable_data());
  WritePacked(bytes, 4, 0, 0x3);
  WritePacked(bytes, 4, 1, 0xA);
  WritePacked(bytes, 4, 4, 0xF);
  EXPECT_EQ(bytes[0], 0xA3);
  EXPECT_EQ(bytes[2], 0x0F);
  EXPECT_EQ(ReadPacked(bytes, 4, 1), 0xAu);
  EXPECT_EQ(ReadPacked(bytes, 4, 2), 0u);
}

TEST(HostCarrierTest, BadInputIsAValueErrorAndAllocatesNothing) {
  EXPECT_TRUE(
      IsValueError(HostCarrier::Create(*dtypes::Float32(), -1).status()));
  EXPECT_TRUE(IsValueError(HostCarrier::Create(*dtypes::MXFP4(), 4).status()));
  EXPECT_TRUE(IsValueError(HostCarrier::Create(*dtypes::Any(), 4).status()));
  EXPECT_TRUE(IsValueError(
      HostCarrier::Create(*dtypes::Float64(), INT64_MAX).status()));
  EXPECT_TRUE(IsValueError(
      HostCarrier::Create(*dtypes::Float32(), int64_t{1} << 50).status()));
}

// The address space this process has mapped now, in bytes.
int64_t MappedBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  statm >> pages;
  return pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// Issue 16 item 6: memory the kernel refuses is a ResourceExhaustedError (kind
// and code) naming the bytes, never an abort. A child process caps its address
// space just above what it has mapped, so the refusal is deterministic.
TEST(HostCarrierTest, AllocationFailureIsAResourceExhaustedError) {
  EXPECT_EXIT(
      {
        struct rlimit limit;
        if (getrlimit(RLIMIT_AS, &limit) != 0) _exit(2);
        limit.rlim_cur = MappedBytes() + (int64_t{256} << 20);
        if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
        auto c = HostCarrier::Create(*dtypes::UInt8(), int64_t{1} << 30);
        if (c.ok()) _exit(4);
        if (!IsResourceExhaustedError(c.status())) _exit(5);
        if (c.status().code() != absl::StatusCode::kResourceExhausted) _exit(6);
        const std::string text = FormatError(c.status());
        if (text.find("ResourceExhaustedError: HostCarrier::Create: cannot "
                      "map 1073741824 bytes for a host carrier of 1073741824 "
                      "uint8 values") != 0) {
          _exit(7);
        }
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(HostCarrierTest, ReleasedLargeMappingsAreReusedZeroedOrForOverwrite) {
  // NOTE [ Spare mappings ]: 3 MiB rounds up to a 4 MiB mapping.
  HostCarrier::TrimSpareMappings();
  const int64_t n = (3 << 20) / 4;
  auto first = *HostCarrier::Create(*dtypes::Float32(), n);
  const void* address = first->data();
  std::memset(first->mutable_data(), 0xAB, n * 4);
  first.reset();  // Released: its mapping becomes a spare.
  auto zeroed = *HostCarrier::Create(*dtypes::Int32(), n);
  EXPECT_EQ(zeroed->data(), address) << "the spare is reused";
  const auto* values = static_cast<const int32_t*>(zeroed->data());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(values[i], 0) << i;
  std::memset(zeroed->mutable_data(), 0xCD, n * 4);
  zeroed->Release();  // An explicit Release gives the mapping back too.
  auto overwrite = *HostCarrier::CreateForOverwrite(*dtypes::Float32(), n);
  EXPECT_EQ(overwrite->data(), address);
  EXPECT_EQ(overwrite->size(), n);
  // A different mapped size does not take it; trimming unmaps what is left.
  overwrite.reset();
  auto other = *HostCarrier::CreateForOverwrite(*dtypes::Float32(), 4 * n);
  EXPECT_NE(other->data(), address);
  EXPECT_EQ(HostCarrier::TrimSpareMappings(), int64_t{4} << 20);
  EXPECT_EQ(HostCarrier::TrimSpareMappings(), 0);
  // CreateForOverwrite refuses what Create refuses.
  EXPECT_TRUE(IsValueError(
      HostCarrier::CreateForOverwrite(*dtypes::Float32(), -1).status()));
}

TEST(HostCarrierTest, OverwriteCarriersStartWithAZeroLastByte) {
  // CreateForOverwrite leaves the data to its producer, except the last
  // byte: the free high nibble of an odd count of fp4 codes is the same on
  // every run. Each size is dirtied first, so that the heap (small) or a
  // spare mapping (3 MiB) hands back dirty bytes where it reuses them.
  HostCarrier::TrimSpareMappings();
  for (const int64_t n : {int64_t{1}, int64_t{3}, int64_t{127}, int64_t{129},
                          int64_t{(3 << 20) * 2 + 1}}) {
    for (int round = 0; round < 2; ++round) {
      auto dirty = *HostCarrier::Create(*dtypes::Float4E2M1FN(), n);
      std::memset(dirty->mutable_data(), 0xFF, dirty->size_in_bytes());
      dirty.reset();
      auto overwrite =
          *HostCarrier::CreateForOverwrite(*dtypes::Float4E2M1FN(), n);
      ASSERT_EQ(overwrite->size_in_bytes(), (n + 1) / 2);
      const auto* bytes = static_cast<const uint8_t*>(overwrite->data());
      EXPECT_EQ(bytes[overwrite->size_in_bytes() - 1], 0) << n;
    }
  }
  HostCarrier::TrimSpareMappings();
}

TEST(CarrierTest, VersionsStartAtZeroAndBump) {
  auto c = HostCarrier::Create(*dtypes::Int32(), 4);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->version(), 0u);
  EXPECT_EQ((*c)->BumpVersion(), 1u);
  EXPECT_EQ((*c)->BumpVersion(), 2u);
  EXPECT_EQ((*c)->version(), 2u);
  auto replayed = HostCarrier::Create(*dtypes::Int32(), 4, /*version=*/7);
  EXPECT_EQ((*replayed)->version(), 7u);
}

TEST(CarrierTest, ReleaseIsExplicitAndIdempotent) {
  auto c = HostCarrier::Create(*dtypes::Int8(), 4);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*c)->released());
  (*c)->Release();
  EXPECT_TRUE((*c)->released());
  EXPECT_EQ((*c)->data(), nullptr);
  (*c)->Release();
  EXPECT_TRUE((*c)->released());
}

TEST(ExternalCarrierTest, DeleterRunsExactlyOnce) {
  std::vector<float> memory(8, 1.5f);
  int deletions = 0;
  {
    auto c = ExternalCarrier::Create(*dtypes::Float32(), 8, memory.data(),
                                     [&deletions] { ++deletions; });
    ASSERT_TRUE(c.ok());
    EXPECT_EQ((*c)->data(), memory.data());
    EXPECT_EQ((*c)->class_name(), "external");
    (*c)->Release();
    EXPECT_EQ(deletions, 1);
    (*c)->Release();
    EXPECT_EQ(deletions, 1);
  }
  EXPECT_EQ(deletions, 1);
  {
    auto c = ExternalCarrier::Create(*dtypes::Float32(), 8, memory.data(),
                                     [&deletions] { ++deletions; });
    ASSERT_TRUE(c.ok());
  }
  EXPECT_EQ(deletions, 2) << "destruction runs the deleter when not released";
}

TEST(ExternalCarrierTest, FailedCreationDoesNotRunTheDeleter) {
  int deletions = 0;
  auto c = ExternalCarrier::Create(*dtypes::Float32(), 8, nullptr,
                                   [&deletions] { ++deletions; });
  EXPECT_TRUE(IsValueError(c.status()));
  EXPECT_EQ(deletions, 0);
  float x = 0;
  EXPECT_TRUE(IsValueError(
      ExternalCarrier::Create(*dtypes::MXFP4(), 1, &x, [&deletions] {
        ++deletions;
      }).status()));
  EXPECT_EQ(deletions, 0);
}

TEST(RecordedCarrierTest, HoldsMetadataOnlyAndMayBeInvalid) {
  auto c = RecordedCarrier::Create(*dtypes::MXFP8E4M3(), -4, 3);
  EXPECT_EQ(c->size(), -4);
  EXPECT_EQ(c->version(), 3u);
  EXPECT_EQ(&c->dtype(), dtypes::MXFP8E4M3());
  EXPECT_EQ(c->data(), nullptr);
  EXPECT_EQ(c->class_name(), "recorded");
}

TEST(CarrierRegistryTest, BuiltInClassesRebuildCarriers) {
  auto& registry = CarrierClassRegistry::Global();
  EXPECT_EQ(registry.Names(), (std::vector<std::string>{"host", "external",
                                                        "recorded", "mapped"}));
  const std::string data("\x01\x02\x03\x04", 4);
  for (const char* name : {"host", "external"}) {
    auto cls = registry.Lookup(name);
    ASSERT_TRUE(cls.ok());
    auto c = cls->factory(*dtypes::UInt8(), 4, 9, data);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c)->class_name(), name);
    EXPECT_EQ((*c)->version(), 9u);
    EXPECT_EQ(std::memcmp((*c)->data(), data.data(), 4), 0);
  }
  EXPECT_TRUE(IsTypeError(registry.Lookup("gpu").status()));
  EXPECT_TRUE(IsValueError(registry.Register({"host", typeid(int), nullptr})));
}

std::string WriteTempFile(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// A region at an offset that is not page-aligned, carriers sharing it, and the
// mapping kept alive by the last carrier.
TEST(MappedCarrierTest, ReadOnlyRegionSharedByItsCarriers) {
  const long page = sysconf(_SC_PAGESIZE);
  std::string bytes(page + 100, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  const std::string path = WriteTempFile("mapped.bin", bytes);
  auto region = MappedRegion::Map(path, page - 3, 40);
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ((*region)->length(), 40);
  EXPECT_EQ(std::memcmp((*region)->data(), bytes.data() + page - 3, 40), 0);
  auto a = MappedCarrier::Create(*dtypes::UInt8(), 8, *region, 0, 5);
  auto b = MappedCarrier::Create(*dtypes::Float4E2M1FN(), 9, *region, 10);
  ASSERT_TRUE(a.ok() && b.ok());
  region = absl::InternalError("dropped");  // The carriers keep the mapping.
  EXPECT_EQ((*a)->class_name(), "mapped");
  EXPECT_EQ((*a)->version(), 5u);
  EXPECT_EQ((*a)->file(), path);
  EXPECT_EQ((*a)->file_offset(), page - 3);
  EXPECT_EQ((*b)->file_offset(), page + 7);
  EXPECT_EQ((*b)->size_in_bytes(), 5);
  EXPECT_TRUE((*a)->read_only());
  EXPECT_EQ((*a)->mutable_data(), nullptr);
  EXPECT_EQ((*a)->BumpVersion(), 5u);
  EXPECT_EQ((*a)->version(), 5u);
  EXPECT_EQ(std::memcmp((*b)->data(), bytes.data() + page + 7, 5), 0);
  EXPECT_EQ((*b)->Describe(),
            "mapped carrier of 9 float4_e2m1fn values at bytes [" +
                std::to_string(page + 7) + ", " + std::to_string(page + 12) +
                ") of \"" + path + "\"");
  a->reset();
  EXPECT_EQ(std::memcmp((*b)->data(), bytes.data() + page + 7, 5), 0);
  (*b)->Release();
  EXPECT_EQ((*b)->data(), nullptr);
}

TEST(MappedCarrierTest, ZeroLengthRegionsAndCarriers) {
  const std::string path = WriteTempFile("empty.bin", "");
  auto region = MappedRegion::Map(path, 0, 0);
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_NE((*region)->data(), nullptr);
  auto c = MappedCarrier::Create(*dtypes::Float32(), 0, *region, 0);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NE((*c)->data(), nullptr);
  auto opened = MappedCarrier::Open(*dtypes::Float32(), 0, path, 0);
  ASSERT_TRUE(opened.ok()) << opened.status();
}

// Files shorter than the region, missing files and directories are clean
// ValueErrors naming the file (checked with fstat before mapping: no SIGBUS).
TEST(MappedCarrierTest, BadFilesAndRegionsAreValueErrors) {
  const std::string path = WriteTempFile("short.bin", std::string(10, 'x'));
  auto short_file = MappedCarrier::Open(*dtypes::Float32(), 3, path, 0);
  EXPECT_TRUE(IsValueError(short_file.status()));
  EXPECT_NE(
      short_file.status().message().find("holds 10 bytes, shorter than the 12"),
      absl::string_view::npos)
      << short_file.status();
  EXPECT_TRUE(IsValueError(
      MappedCarrier::Open(*dtypes::UInt8(), 1, path, 10).status()));
  EXPECT_TRUE(IsValueError(
      MappedCarrier::Open(*dtypes::UInt8(), 1, path, -1).status()));
  EXPECT_TRUE(IsValueError(
      MappedCarrier::Open(*dtypes::Float64(), INT64_MAX / 4, path, 0)
          .status()));
  EXPECT_TRUE(
      IsValueError(MappedCarrier::Open(*dtypes::MXFP4(), 1, path, 0).status()));
  EXPECT_TRUE(IsValueError(
      MappedCarrier::Open(*dtypes::UInt8(), -1, path, 0).status()));
  auto missing = MappedCarrier::Open(*dtypes::UInt8(), 1, path + ".none", 0);
  EXPECT_TRUE(IsValueError(missing.status()));
  EXPECT_NE(missing.status().message().find("cannot open"),
            absl::string_view::npos);
  auto directory =
      MappedCarrier::Open(*dtypes::UInt8(), 1, ::testing::TempDir(), 0);
  EXPECT_NE(directory.status().message().find("is not a regular file"),
            absl::string_view::npos);
  auto region = MappedRegion::Map(path, 2, 4);
  ASSERT_TRUE(region.ok());
  EXPECT_TRUE(IsValueError(
      MappedCarrier::Create(*dtypes::UInt8(), 5, *region, 0).status()));
  EXPECT_TRUE(IsValueError(
      MappedCarrier::Create(*dtypes::UInt8(), 1, *region, 4).status()));
  EXPECT_TRUE(IsValueError(
      MappedCarrier::Create(*dtypes::UInt8(), 1, nullptr, 0).status()));
  EXPECT_TRUE(IsValueError(MappedRegion::Map(path, INT64_MAX, 2).status()));
}

TEST(CarrierRegistryTest, MappedClassRebuildsFromAFile) {
  const std::string path = WriteTempFile("registry.bin", "abcdefgh");
  auto cls = CarrierClassRegistry::Global().Lookup("mapped");
  ASSERT_TRUE(cls.ok());
  EXPECT_EQ(cls->factory, nullptr);
  ASSERT_NE(cls->file_factory, nullptr);
  auto c = cls->file_factory(*dtypes::UInt8(), 3, 2, path, 4);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->class_name(), "mapped");
  EXPECT_EQ((*c)->version(), 2u);
  EXPECT_EQ(std::string(static_cast<const char*>((*c)->data()), 3), "efg");
}

}  // namespace
}  // namespace strata
