// The block-scaled family of ../shared/design/formats.md: every built-in
// validates, quantizes, and views exactly (NOTE [ The view invariant ],
// checked at every level, the tensor-scale level included), and the rule
// refuses what is not the format's blocks.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "layout/random_layouts.h"
#include "ops/ops.h"
#include "ops/quantize.h"
#include "proto/codec.h"
#include "tests/test_util.h"
#include "util/errors.h"
#include "util/status_macros.h"
#include "views/view_paths.h"
#include "views/views.h"

namespace strata {
namespace {

using testing::Coord;
using testing::ExpectInvariant;
using testing::FrozenContext;
using testing::L;

Tensor Floats(const std::vector<int64_t>& shape, uint64_t seed) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), n);
  float* f = static_cast<float*>(carrier->mutable_data());
  testing::RandomLayouts gen(seed);
  for (int64_t i = 0; i < n; ++i) {
    f[i] = static_cast<float>(gen.Uniform(-1000, 1000)) / 64.0f;
  }
  return *Tensor::Create(carrier, 0, *Layout::RowMajor(IntTuple::Flat(shape)));
}

// The scale index (row-major over the block grid) of value coordinate c.
struct Format {
  const CompoundDType* dtype;
  std::vector<int64_t> blocks;  // per mode of the test shape: b, 1 or 0
  int64_t blocked_dim;          // or kBlocksOfTheFormat
};

TEST(BlockScaledFamilyTest, EveryNameOfTheContractIsRegistered) {
  struct Row {
    const char* name;
    std::vector<const char*> schema;
  };
  for (const Row& row : std::vector<Row>{
           {"nvfp4_ts", {"float4_e2m1fn", "float8_e4m3fn", "float32"}},
           {"nvfp4_ts_recip", {"float4_e2m1fn", "float8_e4m3fn", "float32"}},
           {"fp8_e4m3_tensorwise", {"float8_e4m3fn", "float32"}},
           {"fp8_e4m3_rowwise", {"float8_e4m3fn", "float32"}},
           {"fp8_e4m3_block1x128", {"float8_e4m3fn", "float32"}},
           {"fp8_e4m3_block128x128", {"float8_e4m3fn", "float32"}},
           {"q8_0", {"int8", "float16"}},
           {"q4_0", {"uint4", "float16"}},
           {"mxfp8_e4m3", {"float8_e4m3fn", "float8_e8m0fnu"}},
           {"mxfp4", {"float4_e2m1fn", "float8_e8m0fnu"}},
           {"nvfp4", {"float4_e2m1fn", "float8_e4m3fn"}}}) {
    auto d = DTypeRegistry::Global().Lookup(row.name);
    ASSERT_TRUE(d.ok()) << row.name;
    const CompoundDType* c = (*d)->AsCompound();
    ASSERT_NE(c, nullptr) << row.name;
    ASSERT_EQ(c->simple_types().size(), row.schema.size()) << row.name;
    for (size_t i = 0; i < row.schema.size(); ++i) {
      EXPECT_EQ(c->simple_types()[i]->name(), row.schema[i]) << row.name;
    }
    ASSERT_NE(FindBlockScaleRule(*c), nullptr) << row.name;
  }
  const SimpleDType* u4 = dtypes::UInt4();
  EXPECT_EQ(u4->bits(), 4);
  EXPECT_TRUE(u4->is_integer());
  EXPECT_FALSE(u4->is_signed());
}

TEST(BlockScaledFamilyTest, Uint4IsAStorageIntegerPackedLowNibbleFirst) {
  auto carrier = *HostCarrier::Create(*dtypes::UInt4(), 5);
  const Tensor t = *Tensor::Create(carrier, 0, L("5:1"));
  ASSERT_TRUE(SetItem(t, IntTuple::Flat({1}), Scalar::Int(13)).ok());
  ASSERT_TRUE(SetItem(t, IntTuple::Flat({4}), Scalar::Int(18)).ok());  // Wraps.
  const auto* bytes = static_cast<const uint8_t*>(carrier->data());
  EXPECT_EQ(bytes[0], 0xD0);  // Element 1 in the high nibble of byte 0.
  EXPECT_EQ(bytes[2], 0x02);
  EXPECT_EQ(GetItem(t, IntTuple::Flat({1}))->as_int(), 13);
  auto f = Cast(t, *dtypes::Float32());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(GetItem(*f, IntTuple::Flat({1}))->as_double(), 13.0);
  // Arithmetic computes in wider types only: uint4 is storage.
  EXPECT_FALSE(Add(t, t).ok());
}

// api_fuzzer crash f2e26065: a rank-0 source read out of range (and q8_0's
// 32-value block would have read past a scalar).
TEST(BlockScaledFamilyTest, ScalarSourcesQuantizeOrAreRefused) {
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), 1);
  *static_cast<float*>(carrier->mutable_data()) = -3.5f;
  const Tensor scalar =
      *Tensor::Create(carrier, 0, *Layout::RowMajor(IntTuple::Tuple({})));
  auto tw = QuantizeBlockScaled(scalar, *dtypes::FP8E4M3Tensorwise(),
                                kBlocksOfTheFormat);
  ASSERT_TRUE(tw.ok()) << tw.status();
  EXPECT_EQ(tw->shape(), std::vector<int64_t>{});
  for (const CompoundDType* d : {dtypes::Q8_0(), dtypes::Q4_0()}) {
    auto q = QuantizeBlockScaled(scalar, *d, kBlocksOfTheFormat);
    EXPECT_TRUE(IsValueError(q.status())) << q.status();
  }
  EXPECT_TRUE(QuantizeBlockScaled(scalar, *dtypes::FP8E4M3Block128x128(),
                                  kBlocksOfTheFormat)
                  .ok());
  EXPECT_TRUE(IsValueError(
      QuantizeBlockScaled(scalar, *dtypes::NVFP4TS(), 0).status()));
}

// api_fuzzer crash 09e9d808: an empty Tensor quantized tensorwise or
// rowwise gave L_1 one scale over a carrier of none, and the refusal came
// after the carriers were made.
TEST(BlockScaledFamilyTest, EmptySourcesOfEveryFormatQuantize) {
  auto carrier = *HostCarrier::Create(*dtypes::Float16(), 2);
  const Tensor empty = *Tensor::Create(carrier, 0, L("0:-2"));
  for (const char* name : {"fp8_e4m3_tensorwise", "fp8_e4m3_rowwise",
                           "fp8_e4m3_block128x128", "q8_0", "q4_0"}) {
    const CompoundDType* d =
        (*DTypeRegistry::Global().Lookup(name))->AsCompound();
    auto q = QuantizeBlockScaled(empty, *d, kBlocksOfTheFormat);
    ASSERT_TRUE(q.ok()) << name << ": " << q.status();
    EXPECT_EQ(q->size(), 0);
  }
  for (const CompoundDType* d :
       {dtypes::NVFP4TS(), dtypes::FP8E4M3Block1x128(), dtypes::MXFP8E4M3()}) {
    EXPECT_TRUE(QuantizeBlockScaled(empty, *d, 0).ok()) << d->name();
    const auto no_dim = QuantizeBlockScaled(empty, *d, kBlocksOfTheFormat);
    EXPECT_TRUE(IsValueError(no_dim.status()));
    EXPECT_NE(no_dim.status().message().find("needs the dim"),
              std::string::npos);
  }
}

TEST(BlockScaledFamilyTest, TheFactoryMakesMembersAndRefusesNonsense) {
  auto mine = MakeBlockScaledDType("my_fp8_64x64", dtypes::Float8E4M3FN(),
                                   {dtypes::Float32()},
                                   BlockScaling{{64, 64}, 1, true, false});
  ASSERT_TRUE(mine.ok()) << mine.status();
  // A user-made fp8 x float32 member quantizes through the fp8 recipe.
  auto q =
      QuantizeBlockScaled(Floats({100, 130}, 1), **mine, kBlocksOfTheFormat);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(TensorAccess::representation(*q).subtensor(1).carrier->size(),
            2 * 3);
  for (auto bad :
       {BlockScaling{{}, 1, false, false}, BlockScaling{{-3}, 1, false, false},
        BlockScaling{{32}, 7, false, false},
        BlockScaling{{32, 32}, 1, false, true}}) {
    EXPECT_TRUE(IsValueError(
        MakeBlockScaledDType("bad", dtypes::Int8(), {dtypes::Float16()}, bad)
            .status()));
  }
  EXPECT_TRUE(
      IsValueError(MakeBlockScaledDType("bad", dtypes::Int8(),
                                        {dtypes::Float16(), dtypes::Float16()},
                                        BlockScaling{{32}, 1, false, false})
                       .status()));
}

absl::Status Judge(const CompoundDType* d, const std::string& l0,
                   const std::string& l1, const std::string& s0) {
  return FindBlockScaleRule(*d)->Validate(
      FrozenContext(*d, {L(l0), L(l1)}, {L(s0)}));
}

TEST(BlockScaledFamilyTest, RaggedBlocksAreJudgedThroughLevelOne) {
  const CompoundDType* d = dtypes::FP8E4M3Block128x128();
  // formats.md: 576 rows = (64,9), S_0 (64,9):(0,1) into a level-1 mode
  // (2,5):(0,W): row r reaches scale row floor(r/128).
  EXPECT_TRUE(Judge(d, "((64,9),(128,2)):((256,16384),(1,128))",
                    "((2,5),2):((0,2),1)", "((64,9),(128,2)):((0,1),(0,10))")
                  .ok());
  // The same S_0 into a level 1 that does not merge: blocks of 64 rows.
  const absl::Status blocks64 =
      Judge(d, "((64,9),(128,2)):((256,16384),(1,128))", "(9,2):(2,1)",
            "((64,9),(128,2)):((0,1),(0,9))");
  EXPECT_TRUE(IsValueError(blocks64)) << blocks64;
  EXPECT_NE(blocks64.message().find("fp8_e4m3_block128x128 needs"),
            std::string::npos);
  EXPECT_NE(blocks64.message().find("one scale per 64 values"),
            std::string::npos)
      << blocks64;
  // A merging leaf that no mode's block absorbs gives two blocks one scale.
  EXPECT_TRUE(
      IsValueError(Judge(d, "(128,(128,2)):(256,(1,128))",
                         "((2,2),1):((0,1),0)", "(128,(128,2)):(0,(0,1))")));
  // A ragged format that is not: 200 rows in blocks of 128 for a format that
  // needs whole blocks (q8_0, 32 along the last mode).
  EXPECT_TRUE(
      IsValueError(Judge(dtypes::Q8_0(), "(4,(16,3)):(48,(1,16))",
                         "(4,(2,2)):(2,(0,1))", "(4,(16,3)):(1,(0,4))")));
}

TEST(BlockScaledFamilyTest, WholeModesAndDistinctBlocks) {
  // Rowwise: one scale per row, constant along the last mode.
  EXPECT_TRUE(Judge(dtypes::FP8E4M3Rowwise(), "(4,64):(64,1)", "(4,1):(1,0)",
                    "(4,64):(1,0)")
                  .ok());
  // A scale that varies along the row is refused.
  EXPECT_TRUE(IsValueError(Judge(dtypes::FP8E4M3Rowwise(), "(4,64):(64,1)",
                                 "(4,2):(2,1)", "(4,(32,2)):(1,(0,4))")));
  // Tensorwise: every mode whole.
  EXPECT_TRUE(
      Judge(dtypes::FP8E4M3Tensorwise(), "(4,64):(64,1)", "1:0", "(4,64):(0,0)")
          .ok());
  EXPECT_TRUE(IsValueError(Judge(dtypes::FP8E4M3Tensorwise(), "(4,64):(64,1)",
                                 "4:1", "(4,64):(1,0)")));
  // Two rows that share a scale are distinct blocks reaching one scale.
  const absl::Status shared =
      Judge(dtypes::FP8E4M3Block1x128(), "(4,(128,2)):(256,(1,128))",
            "(2,2):(2,1)", "(4,(128,2)):(1,(0,2))");
  EXPECT_TRUE(IsValueError(shared)) << shared;
  // q8_0 along the first mode after a permute is still one block mode.
  EXPECT_TRUE(Judge(dtypes::Q8_0(), "((32,2),4):((1,32),64)", "(4,2):(2,1)",
                    "((32,2),4):((0,4),1)")
                  .ok());
}

// Review: pieces sorted by stride must each step past everything the smaller
// ones reach together, not only past the one before (block (0,0,1) and block
// (1,1,0) both reached scale 4).
TEST(BlockScaledFamilyTest,
     BlocksThatShareAScaleThroughSeveralPiecesAreRefused) {
  const absl::Status shared =
      Judge(dtypes::MXFP8E4M3(), "(2,2,(32,2)):(128,64,(1,32))", "9:1",
            "(2,2,(32,2)):(1,3,(0,4))");
  EXPECT_TRUE(IsValueError(shared)) << shared;
  EXPECT_NE(shared.message().find("two blocks reach one scale"),
            std::string::npos)
      << shared;
  // L_1 (2,2,2):(1,3,4) puts two scales at carrier index 4.
  const absl::Status l1 =
      Judge(dtypes::MXFP8E4M3(), "(2,2,(32,2)):(128,64,(1,32))",
            "(2,2,2):(1,3,4)", "(2,2,(32,2)):(1,2,(0,4))");
  EXPECT_TRUE(IsValueError(l1)) << l1;
  EXPECT_NE(l1.message().find("L_1 places two scale coordinates"),
            std::string::npos)
      << l1;
}

TEST(BlockScaledFamilyTest, TheTensorScaleIsOneValue) {
  const CompoundDType* d = dtypes::NVFP4TS();
  const auto judge = [&](const std::string& l2, const std::string& s1) {
    return FindBlockScaleRule(*d)->Validate(FrozenContext(
        *d, {L("(4,(16,2)):(32,(1,16))"), L("(4,2):(2,1)"), L(l2)},
        {L("(4,(16,2)):(1,(0,4))"), L(s1)}));
  };
  EXPECT_TRUE(judge("1:0", "(4,2):(0,0)").ok());
  EXPECT_TRUE(judge("8:0", "(4,2):(1,4)").ok());  // L_2 is constant.
  const absl::Status two = judge("8:1", "(4,2):(1,4)");
  EXPECT_TRUE(IsValueError(two)) << two;
  EXPECT_NE(two.message().find("one tensor scale"), std::string::npos);
  // Two levels for a three-level format.
  EXPECT_TRUE(IsValueError(Judge(d, "(4,(16,2)):(32,(1,16))", "(4,2):(2,1)",
                                 "(4,(16,2)):(1,(0,4))")));
}

// Slices of every format over random shapes: admitted exactly where they
// keep blocks whole (a partial last block of a ragged format included),
// refused (ValueError) elsewhere; every admitted view, and permutes,
// broadcasts and unsqueezes of it, keeps the invariant at every level.
// A random rank-3 case of one of the family's formats: the format and a
// shape that its blocks tile (ragged where the format allows).
struct FamilyCase {
  Format format;
  std::vector<int64_t> shape;
};
FamilyCase RandomFamilyCase(testing::RandomLayouts& gen) {
  const int which = gen.Uniform(0, 7);
  Format f;
  std::vector<int64_t> shape;
  switch (which) {
    case 0:
      f = {dtypes::FP8E4M3Block128x128(), {1, 128, 128}, kBlocksOfTheFormat};
      shape = {gen.Uniform(1, 2), gen.Uniform(1, 300), gen.Uniform(1, 300)};
      break;
    case 1:
      f = {dtypes::FP8E4M3Block1x128(), {1, 1, 128}, 2};
      shape = {gen.Uniform(1, 2), gen.Uniform(1, 5), gen.Uniform(1, 400)};
      break;
    case 2:
      f = {dtypes::FP8E4M3Rowwise(), {1, 1, 0}, kBlocksOfTheFormat};
      shape = {gen.Uniform(1, 2), gen.Uniform(1, 5), gen.Uniform(1, 40)};
      break;
    case 3:
      f = {dtypes::FP8E4M3Tensorwise(), {0, 0, 0}, kBlocksOfTheFormat};
      shape = {gen.Uniform(1, 2), gen.Uniform(1, 5), gen.Uniform(1, 40)};
      break;
    case 4:
    case 5:
      f = {which == 4 ? dtypes::NVFP4TS() : dtypes::NVFP4TSRecip(),
           {1, 16, 1},
           1};
      shape = {gen.Uniform(1, 2), 16 * gen.Uniform(1, 6), gen.Uniform(1, 5)};
      break;
    case 6:
      f = {dtypes::Q8_0(), {1, 1, 32}, kBlocksOfTheFormat};
      shape = {gen.Uniform(1, 2), gen.Uniform(1, 5), 32 * gen.Uniform(1, 4)};
      break;
    default:
      f = {dtypes::Q4_0(), {1, 1, 32}, kBlocksOfTheFormat};
      shape = {gen.Uniform(1, 2), gen.Uniform(1, 5), 32 * gen.Uniform(1, 4)};
      break;
  }
  return {f, shape};
}

// Every level of two views holds the same offsets and functions.
void ExpectSameLevels(const Tensor& a, const Tensor& b) {
  const Representation& a_rep = TensorAccess::representation(a);
  const Representation& b_rep = TensorAccess::representation(b);
  ASSERT_EQ(a_rep.num_levels(), b_rep.num_levels());
  for (int level = 0; level < a_rep.num_levels(); ++level) {
    EXPECT_EQ(a_rep.subtensor(level).offset, b_rep.subtensor(level).offset)
        << "level " << level;
    EXPECT_TRUE(FunctionallyEqual(a_rep.subtensor(level).placement,
                                  b_rep.subtensor(level).placement))
        << a_rep.subtensor(level).placement.ToString() << " vs "
        << b_rep.subtensor(level).placement.ToString();
    if (level + 1 < a_rep.num_levels()) {
      EXPECT_TRUE(FunctionallyEqual(a_rep.adjacent_layouts()[level],
                                    b_rep.adjacent_layouts()[level]))
          << a_rep.adjacent_layouts()[level].ToString() << " vs "
          << b_rep.adjacent_layouts()[level].ToString();
    }
  }
}

TEST(BlockScaledFamilyTest, RandomSlicesKeepTheInvariantAtEveryLevel) {
  testing::RandomLayouts gen(28);
  int admitted = 0, refused = 0;
  for (int n = 0; n < 400; ++n) {
    const FamilyCase c = RandomFamilyCase(gen);
    const Format f = c.format;
    const std::vector<int64_t> shape = c.shape;
    const bool ragged = FindBlockScaleRule(*f.dtype)->scaling().ragged;
    auto t = QuantizeBlockScaled(Floats(shape, n), *f.dtype, f.blocked_dim);
    ASSERT_TRUE(t.ok()) << f.dtype->name() << " " << t.status();
    SCOPED_TRACE(absl::StrCat(f.dtype->name(), " (", shape[0], ",", shape[1],
                              ",", shape[2], ")"));
    const int64_t dim = gen.Uniform(0, 2);
    const int64_t extent = shape[dim];
    const int64_t b = f.blocks[dim];
    // Aligned starts half of the time.
    int64_t start = gen.Uniform(0, extent);
    if (b > 1 && gen.Uniform(0, 1) == 0) start = start / b * b;
    int64_t stop = gen.Uniform(start, extent);
    if (b > 1 && gen.Uniform(0, 1) == 0) {
      stop = std::max(start, std::min(extent, (stop + b - 1) / b * b));
    }
    const auto v = Slice(*t, dim, start, stop);
    // NOTE [ The block-scaling rule ]: whole blocks are admitted; so is, for
    // a ragged format, a slice inside one block or one that ends in a partial
    // block, since the result is a ragged Tensor whose values reach their own
    // scales (whether a ragged stop is expressible depends on g = gcd(N, b)).
    // A slice that starts inside a block and crosses into the next is
    // refused.
    enum Expect { kAdmit, kRefuse, kEither } expect = kAdmit;
    if (b > 1 && start < stop) {
      const bool starts_aligned = start % b == 0;
      const bool ends_aligned = stop % b == 0 || stop == extent;
      const bool one_block = start / b == (stop - 1) / b;
      if (starts_aligned && ends_aligned) {
        expect = kAdmit;
      } else if (!ragged) {
        expect = kRefuse;
      } else if (one_block) {
        expect = extent % b == 0 ? kAdmit : kEither;
      } else {
        expect = starts_aligned ? kEither : kRefuse;
      }
    }
    SCOPED_TRACE(absl::StrCat("slice ", dim, " ", start, " ", stop));
    if (!v.ok()) {
      ++refused;
      EXPECT_TRUE(IsValueError(v.status())) << v.status();
      EXPECT_NE(expect, kAdmit) << v.status();
      continue;
    }
    ++admitted;
    EXPECT_NE(expect, kRefuse) << "admitted a slice that cuts a block";
    // NOTE [ Slices by whole steps of a mode's last leaf ]: what the fast
    // paths give, composition gives: the same offsets and functions at every
    // level.
    const auto general =
        views_internal::SliceByComposition(*t, dim, start, stop - start, 1);
    ASSERT_TRUE(general.ok()) << general.status();
    ExpectSameLevels(*v, *general);
    ExpectInvariant(*t, *v, [&](const Coord& c) {
      Coord old = c;
      old[dim] += start;
      return old;
    });
    const auto p = Permute(*v, {2, 0, 1});
    ASSERT_TRUE(p.ok()) << p.status();
    ExpectInvariant(*v, *p, [](const Coord& c) {
      return Coord{c[1], c[2], c[0]};
    });
    const auto u = Unsqueeze(*p, 1);
    ASSERT_TRUE(u.ok()) << u.status();
    const std::vector<int64_t> ps = p->shape();
    const auto bc = BroadcastTo(*u, {ps[0], 3, ps[1], ps[2]});
    ASSERT_TRUE(bc.ok()) << bc.status();
    ExpectInvariant(*p, *bc, [](const Coord& c) {
      return Coord{c[0], c[2], c[3]};
    });
  }
  EXPECT_GT(admitted, 200);
  EXPECT_GT(refused, 20);
}

// Slices by any step (the integer-mode path of NOTE [ The view invariant ]
// for two or more elements, whole steps or composition otherwise) give what
// composition gives at every level, and refuse where it refuses, over every
// format of the family: 2- and 3-level Tensors, hierarchical modes and
// ragged edges.
TEST(BlockScaledFamilyTest, SlicesByAnyStepEqualComposition) {
  testing::RandomLayouts gen(29);
  int admitted = 0;
  for (int n = 0; n < 600; ++n) {
    const FamilyCase c = RandomFamilyCase(gen);
    auto t = QuantizeBlockScaled(Floats(c.shape, n), *c.format.dtype,
                                 c.format.blocked_dim);
    ASSERT_TRUE(t.ok()) << c.format.dtype->name() << " " << t.status();
    const int64_t dim = gen.Uniform(0, 2);
    const int64_t extent = c.shape[dim];
    const int64_t start = gen.Uniform(0, extent);
    const int64_t stop = gen.Uniform(start, extent);
    const int64_t step = gen.Uniform(1, 4);
    SCOPED_TRACE(absl::StrCat(c.format.dtype->name(), " (", c.shape[0], ",",
                              c.shape[1], ",", c.shape[2], ") slice ", dim, " ",
                              start, " ", stop, " ", step));
    const auto fast = Slice(*t, dim, start, stop, step);
    const auto general = views_internal::SliceByComposition(
        *t, dim, start, (stop - start + step - 1) / step, step);
    ASSERT_EQ(fast.ok(), general.ok()) << fast.status() << general.status();
    if (!fast.ok()) continue;
    ++admitted;
    ExpectSameLevels(*fast, *general);
  }
  EXPECT_GT(admitted, 300);
}

// The rule's context of a Tensor, as Representation validates it.
FrozenContext ContextOf(const Tensor& t) {
  const Representation& rep = TensorAccess::representation(t);
  std::vector<Layout> placements, adjacent;
  for (const Subtensor& s : rep.subtensors()) placements.push_back(s.placement);
  for (const Layout& s : rep.adjacent_layouts()) adjacent.push_back(s);
  return FrozenContext(rep.logical_dtype(), placements, adjacent);
}

// `t` with L_0's stride set to 0 on the leading leaves of every mode whose S_0
// stride is 0 there (its block), all but the mode's last leaf: each block's
// values read one index, as a written or replayed representation may say.
// The rule's error where it refuses that.
absl::StatusOr<Tensor> BroadcastWithinBlocks(const Tensor& t) {
  const Representation& rep = TensorAccess::representation(t);
  const Layout& l0 = rep.subtensor(0).placement;
  const auto s0_strides = rep.adjacent_layouts()[0].stride().leaves();
  const IntTuple::Elements modes = l0.shape().TopElements();
  std::vector<bool> zero(l0.shape().num_leaves(), false);
  for (int m = 0; m < modes.size(); ++m) {
    for (int k = modes.leaf[m]; k + 1 < modes.leaf[m + 1] && s0_strides[k] == 0;
         ++k) {
      zero[k] = true;
    }
  }
  std::vector<SubtensorCandidate> subtensors;
  for (const Subtensor& s : rep.subtensors()) {
    subtensors.push_back({s.storage_dtype, s.carrier, s.offset,
                          absl::StatusOr<Layout>(s.placement)});
  }
  subtensors[0].placement = Layout::Create(
      l0.shape(), l0.stride().TransformLeaves([&](size_t k, int64_t d) {
        return zero[k] ? int64_t{0} : d;
      }));
  std::vector<absl::StatusOr<Layout>> adjacent(rep.adjacent_layouts().begin(),
                                               rep.adjacent_layouts().end());
  STRATA_ASSIGN_OR_RETURN(
      auto broadcast,
      Representation::Create(&rep.logical_dtype(), std::move(subtensors),
                             std::move(adjacent)));
  return MakeTensor(std::move(broadcast));
}

// NOTE [ Slices that keep the block-scaling verdict ] (dtype/
// block_scale_rule.h): over random slices (any start and step, aligned to
// the blocks half of the time) of every format, scale layout and a view of
// it (a permute, a broadcast, a slice), wherever the rule claims its verdict
// the slice is either refused by the narrowing before any rule (a
// ValueError) or judged valid by the rule in full; it is never the internal
// error of a wrong claim (this build runs the rule on every slice). Each
// kind of claim is made many times, and so are refusals of the rule where it
// makes none -- among them one block of a mode whose blocks L_0 broadcasts,
// a mode the judgement then skips (the replay fuzzer's find).
TEST(BlockScaledFamilyTest, SlicesTheRuleClaimsKeepTheVerdict) {
  testing::RandomLayouts gen(38);
  struct Case {
    const CompoundDType* dtype;
    int64_t blocked_dim;  // of a rank-3 source, or kBlocksOfTheFormat
    int64_t block;        // along blocked_dim (the last two for 128x128)
    ScaleLayout scales;
  };
  const std::vector<Case> cases = {
      {dtypes::MXFP8E4M3(), 2, 32, ScaleLayout::kRowMajor},
      {dtypes::MXFP8E4M3(), 2, 32, ScaleLayout::kSwizzled128x4},
      {dtypes::MXFP4(), 1, 32, ScaleLayout::kRowMajor},
      {dtypes::MXFP4(), 1, 32, ScaleLayout::kSwizzled128x4},
      {dtypes::NVFP4(), 2, 16, ScaleLayout::kRowMajor},
      {dtypes::NVFP4(), 2, 16, ScaleLayout::kSwizzled128x4},
      {dtypes::NVFP4TS(), 1, 16, ScaleLayout::kRowMajor},
      {dtypes::NVFP4TSRecip(), 2, 16, ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Block128x128(), kBlocksOfTheFormat, 128,
       ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Block1x128(), 2, 128, ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Rowwise(), kBlocksOfTheFormat, 0, ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Tensorwise(), kBlocksOfTheFormat, 0,
       ScaleLayout::kRowMajor},
      {dtypes::Q8_0(), kBlocksOfTheFormat, 32, ScaleLayout::kRowMajor},
      {dtypes::Q4_0(), kBlocksOfTheFormat, 32, ScaleLayout::kRowMajor},
  };
  int claimed = 0, claimed_and_admitted = 0, claimed_with_step = 0,
      claimed_by_blocks = 0, judged_and_refused = 0,
      broadcast_block_refused = 0;
  for (int n = 0; n < 5000; ++n) {
    const Case& c = cases[n % cases.size()];
    const bool ragged = FindBlockScaleRule(*c.dtype)->scaling().ragged;
    const bool square = c.dtype == dtypes::FP8E4M3Block128x128();
    const int64_t blocked =
        c.blocked_dim == kBlocksOfTheFormat ? 2 : c.blocked_dim;
    // Shapes of whole blocks, but for ragged formats, where the last block
    // is partial half of the time.
    std::vector<int64_t> shape = {gen.Uniform(1, 3), gen.Uniform(1, 12),
                                  gen.Uniform(1, 12)};
    if (c.block > 0) {
      for (int64_t d = 0; d < 3; ++d) {
        if (d != blocked && !(square && d == 1)) continue;
        shape[d] = c.block * gen.Uniform(1, square ? 2 : 4);
        if (ragged && gen.Uniform(0, 1))
          shape[d] -= gen.Uniform(1, c.block - 1);
      }
    }
    auto quantized = QuantizeBlockScaled(Floats(shape, n), *c.dtype,
                                         c.blocked_dim, c.scales);
    ASSERT_TRUE(quantized.ok()) << c.dtype->name() << " " << quantized.status();
    SCOPED_TRACE(absl::StrCat(c.dtype->name(), " ", ScaleLayoutName(c.scales),
                              " (", shape[0], ",", shape[1], ",", shape[2],
                              ") round ", n));
    // A view of it first, a third of the time.
    Tensor source = *quantized;
    std::vector<int64_t> blocks(3, 1);
    if (c.block > 0) blocks[blocked] = c.block;
    if (square) blocks[1] = c.block;
    switch (gen.Uniform(0, 5)) {
      case 0: {
        source = *Permute(source, {2, 0, 1});
        blocks = {blocks[2], blocks[0], blocks[1]};
        break;
      }
      case 1: {
        source = *BroadcastTo(*Unsqueeze(source, 0),
                              {3, shape[0], shape[1], shape[2]});
        blocks.insert(blocks.begin(), 1);
        break;
      }
      case 2: {
        // Whole blocks of a blocked mode, or a step along another.
        const int64_t d = gen.Uniform(0, 2);
        auto v = blocks[d] > 1
                     ? Slice(source, d, 0,
                             std::min(shape[d], blocks[d] * gen.Uniform(1, 2)))
                     : Slice(source, d, gen.Uniform(0, shape[d] - 1), shape[d],
                             gen.Uniform(1, 2));
        if (v.ok()) source = *v;
        break;
      }
      case 3: {
        auto broadcast = BroadcastWithinBlocks(source);
        if (broadcast.ok()) source = *broadcast;
        break;
      }
      default:
        break;
    }
    const std::vector<int64_t> dims = source.shape();
    const int dim = gen.Uniform(0, static_cast<int64_t>(dims.size()) - 1);
    const int64_t extent = dims[dim];
    const int64_t b = blocks[dim];
    // Steps of 2 to 4 two thirds of the time, from the first half of the
    // mode (so that they take more than one coordinate).
    int64_t step = gen.Uniform(0, 2) ? gen.Uniform(2, 4) : 1;
    int64_t start = gen.Uniform(0, step > 1 ? extent / 2 : extent);
    int64_t stop = gen.Uniform(start, extent);
    if (b > 1 && gen.Uniform(0, 1)) {
      start = start / b * b;
      stop = std::max(start, std::min(extent, (stop + b - 1) / b * b));
      // Whole blocks, or every other value of them.
      step = gen.Uniform(0, 3) ? 1 : 2;
    }
    const Representation& rep = TensorAccess::representation(source);
    SCOPED_TRACE(
        absl::StrCat("source L_0 = ", rep.subtensor(0).placement.ToString(),
                     ", S_0 = ", rep.adjacent_layouts()[0].ToString(),
                     ", L_1 = ", rep.subtensor(1).placement.ToString(),
                     "; slice ", dim, " [", start, ", ", stop, ") by ", step));
    const int64_t count = (stop - start + step - 1) / step;
    const bool claim = FindBlockScaleRule(*c.dtype)->KeepsVerdictWhenSliced(
        ContextOf(source), {dim, start, count, step});
    const auto v = Slice(source, dim, start, stop, step);
    EXPECT_NE(v.status().code(), absl::StatusCode::kInternal) << v.status();
    if (!claim) {
      if (!v.ok() && absl::StrContains(v.status().message(), "needs")) {
        ++judged_and_refused;
        if (count == b &&
            absl::StrContains(v.status().message(), "has 0 such modes")) {
          ++broadcast_block_refused;
        }
      }
      continue;
    }
    ++claimed;
    if (step > 1 && count > 1) ++claimed_with_step;
    if (b > 1 && count > 0 && count < extent) ++claimed_by_blocks;
    if (!v.ok()) {
      EXPECT_TRUE(IsValueError(v.status())) << v.status();
      continue;
    }
    ++claimed_and_admitted;
    EXPECT_TRUE(FindBlockScaleRule(*c.dtype)->Validate(ContextOf(*v)).ok())
        << FindBlockScaleRule(*c.dtype)->Validate(ContextOf(*v));
  }
  std::printf(
      "claimed %d (admitted %d, with steps %d, by blocks %d); "
      "refused by the rule %d (one broadcast block %d)\n",
      claimed, claimed_and_admitted, claimed_with_step, claimed_by_blocks,
      judged_and_refused, broadcast_block_refused);
  EXPECT_GT(claimed, 3000);
  EXPECT_GT(claimed_and_admitted, 3000);
  EXPECT_GT(claimed_with_step, 200);
  EXPECT_GT(claimed_by_blocks, 200);
  EXPECT_GT(judged_and_refused, 50);
  EXPECT_GT(broadcast_block_refused, 10);
}

TEST(BlockScaledFamilyTest, QuantizedTensorsSurviveDumpReplayDump) {
  // Row-major and swizzled scales, two and three modes, ragged row counts.
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{4, 64}, {3, 200, 160}, {130, 96}}) {
    const Tensor src = Floats(shape, 11 + shape.size());
    for (const CompoundDType* format :
         {dtypes::MXFP8E4M3(), dtypes::MXFP4(), dtypes::NVFP4()}) {
      for (ScaleLayout scales :
           {ScaleLayout::kRowMajor, ScaleLayout::kSwizzled128x4}) {
        auto q = QuantizeBlockScaled(src, *format, shape.size() - 1, scales);
        ASSERT_TRUE(q.ok()) << q.status();
        const std::string text = ToText(ToProto(*q, {true}));
        auto parsed = ParseText(text);
        ASSERT_TRUE(parsed.ok()) << parsed.status();
        auto replayed = Replay(*parsed);
        ASSERT_TRUE(replayed.ok()) << replayed.status();
        EXPECT_EQ(ToText(ToProto(*replayed, {true})), text)
            << format->name() << " " << ScaleLayoutName(scales);
      }
    }
  }
}

}  // namespace
}  // namespace strata
