#include "dtype/dtype.h"

#include <string>

#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "util/errors.h"

namespace strata {
namespace {

TEST(DTypeTest, BuiltInsAreSingletonsFoundByName) {
  EXPECT_EQ(*DTypeRegistry::Global().Lookup("float32"), dtypes::Float32());
  EXPECT_EQ(dtypes::Float32(), dtypes::Float32());
  EXPECT_EQ(dtypes::Float32()->bits(), 32);
  EXPECT_TRUE(dtypes::Float32()->is_floating());
  EXPECT_EQ(dtypes::Float4E2M1FN()->bits(), 4);
  EXPECT_FALSE(dtypes::UInt8()->is_signed());
  EXPECT_TRUE(dtypes::Bool()->is_bool());
  for (const std::string name :
       {"bool",           "int8",          "int16",         "int32",
        "int64",          "uint8",         "float16",       "bfloat16",
        "float32",        "float64",       "float8_e4m3fn", "float8_e5m2",
        "float8_e8m0fnu", "float4_e2m1fn", "mxfp8_e4m3",    "mxfp4",
        "nvfp4",          "Any",           "Floating",      "Integer"}) {
    auto d = DTypeRegistry::Global().Lookup(name);
    ASSERT_TRUE(d.ok()) << name;
    EXPECT_EQ((*d)->name(), name);
  }
}

TEST(DTypeTest, ASecondDescriptorNamedFloat32IsNotTheBuiltIn) {
  auto other = SimpleDType::Create(
      {"float32", 32, NumericClass::kFloating, true, 8, 23});
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, dtypes::Float32());
  EXPECT_EQ((*other)->name(), "float32");
  // And it cannot take the built-in's name in the registry.
  absl::Status clash = DTypeRegistry::Global().Register(*other);
  EXPECT_TRUE(IsValueError(clash)) << clash;
  EXPECT_EQ(*DTypeRegistry::Global().Lookup("float32"), dtypes::Float32());
}

TEST(DTypeTest, UnknownNameIsAValueError) {
  EXPECT_TRUE(IsValueError(DTypeRegistry::Global().Lookup("float31").status()));
}

TEST(DTypeTest, StorageSchemas) {
  auto simple = StorageSchema(*dtypes::Float32());
  ASSERT_TRUE(simple.ok());
  ASSERT_EQ(simple->size(), 1u);
  EXPECT_EQ((*simple)[0], dtypes::Float32());

  auto compound = StorageSchema(*dtypes::MXFP8E4M3());
  ASSERT_TRUE(compound.ok());
  ASSERT_EQ(compound->size(), 2u);
  EXPECT_EQ((*compound)[0], dtypes::Float8E4M3FN());
  EXPECT_EQ((*compound)[1], dtypes::Float8E8M0FNU());
  EXPECT_EQ(dtypes::NVFP4()->simple_types()[1], dtypes::Float8E4M3FN());

  for (const DType* category : {static_cast<const DType*>(dtypes::Any()),
                                static_cast<const DType*>(dtypes::Floating()),
                                static_cast<const DType*>(dtypes::Integer())}) {
    auto none = StorageSchema(*category);
    EXPECT_TRUE(IsValueError(none.status()));
    EXPECT_NE(none.status().message().find("no Tensor storage schema"),
              absl::string_view::npos);
  }
}

TEST(DTypeTest, CategoryMembership) {
  EXPECT_TRUE(dtypes::Any()->Contains(*dtypes::Int8()));
  EXPECT_TRUE(dtypes::Any()->Contains(*dtypes::MXFP4()));
  EXPECT_TRUE(dtypes::Any()->Contains(*dtypes::Floating()));
  EXPECT_TRUE(dtypes::Floating()->Contains(*dtypes::BFloat16()));
  EXPECT_TRUE(dtypes::Floating()->Contains(*dtypes::MXFP8E4M3()));
  EXPECT_FALSE(dtypes::Floating()->Contains(*dtypes::Int32()));
  EXPECT_TRUE(dtypes::Integer()->Contains(*dtypes::UInt8()));
  EXPECT_FALSE(dtypes::Integer()->Contains(*dtypes::Bool()));
  EXPECT_FALSE(dtypes::Integer()->Contains(*dtypes::Float16()));
}

TEST(DTypeTest, ExtensionCategoryRegistersOnceAndClashesAreErrors) {
  auto wide = DTypeCategory::Create("Wide", [](const DType& d) {
    const SimpleDType* s = d.AsSimple();
    return s != nullptr && s->bits() >= 32;
  });
  ASSERT_TRUE(wide.ok());
  EXPECT_TRUE((*wide)->Contains(*dtypes::Float64()));
  EXPECT_FALSE((*wide)->Contains(*dtypes::Int8()));
  ASSERT_TRUE(DTypeRegistry::Global().Register(*wide).ok());
  EXPECT_EQ(*DTypeRegistry::Global().Lookup("Wide"), *wide);
  auto again =
      DTypeCategory::Create("Wide", [](const DType&) { return false; });
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(IsValueError(DTypeRegistry::Global().Register(*again)));
  EXPECT_EQ(*DTypeRegistry::Global().Lookup("Wide"), *wide);
}

TEST(DTypeTest, KindsAndDowncasts) {
  EXPECT_EQ(dtypes::Float32()->kind(), DType::Kind::kSimple);
  EXPECT_EQ(dtypes::MXFP4()->kind(), DType::Kind::kCompound);
  EXPECT_EQ(dtypes::Any()->kind(), DType::Kind::kCategory);
  EXPECT_NE(dtypes::MXFP4()->AsCompound(), nullptr);
  EXPECT_EQ(dtypes::MXFP4()->AsSimple(), nullptr);
  EXPECT_EQ(dtypes::Any()->AsCompound(), nullptr);
}

TEST(DTypeTest, InvalidDescriptorsAreValueErrors) {
  EXPECT_TRUE(IsValueError(
      SimpleDType::Create({"odd", 3, NumericClass::kInteger, true}).status()));
  EXPECT_TRUE(IsValueError(
      SimpleDType::Create({"", 8, NumericClass::kInteger, true}).status()));
  EXPECT_TRUE(IsValueError(
      SimpleDType::Create({"f", 8, NumericClass::kFloating, true, 6, 4})
          .status()));
  EXPECT_TRUE(IsValueError(CompoundDType::Create("empty", {}).status()));
  EXPECT_TRUE(IsValueError(CompoundDType::Create("nul", {nullptr}).status()));
  EXPECT_TRUE(IsValueError(DTypeCategory::Create("none", nullptr).status()));
}

}  // namespace
}  // namespace strata
