// One test per Scenario of shared/spec/core-tensor-representation.md, named
// after it.
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include "core/representation.h"
#include "core/tensor_access.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "strata.h"
#include "tests/spec/test_carriers.h"
#include "tests/test_util.h"
#include "views/views.h"

namespace strata {
namespace {

using testing::ForeignClassCarrier;
using testing::LoggingRule;
using testing::RecordingCarrier;
using testing::RecordingCarrierSubclass;

using testing::L;

std::shared_ptr<Carrier> Host(const SimpleDType* dtype, int64_t size) {
  return *HostCarrier::Create(*dtype, size);
}

bool Contains(const absl::Status& s, const std::string& text) {
  return s.message().find(text) != absl::string_view::npos;
}

// A compound (values, scales) dtype with its own rules, unregistered.
struct TwoLevel {
  std::shared_ptr<std::vector<std::string>> log =
      std::make_shared<std::vector<std::string>>();
  std::vector<std::shared_ptr<const RepresentationRule>> rules;
  const CompoundDType* dtype = nullptr;

  explicit TwoLevel(std::vector<absl::Status> results = {absl::OkStatus(),
                                                         absl::OkStatus()}) {
    for (size_t i = 0; i < results.size(); ++i) {
      rules.push_back(std::make_shared<LoggingRule>(absl::StrCat("rule", i),
                                                    log, results[i]));
    }
    dtype = *CompoundDType::Create(
        "test_block_scaled", {dtypes::Float8E4M3FN(), dtypes::Float8E8M0FNU()},
        rules);
  }
};

// Values (4,64) row-major, scales (4,2) row-major, S_0 = (4,(32,2)):(1,(0,4)).
struct TwoLevelParts {
  std::shared_ptr<Carrier> values = Host(dtypes::Float8E4M3FN(), 256);
  std::shared_ptr<Carrier> scales = Host(dtypes::Float8E8M0FNU(), 8);
  Layout l0 = L("(4,(32,2)):(64,(1,32))");
  Layout l1 = L("(4,2):(2,1)");
  Layout s0 = L("(4,(32,2)):(1,(0,4))");

  std::vector<SubtensorCandidate> Subtensors() const {
    return {{dtypes::Float8E4M3FN(), values, 0, l0},
            {dtypes::Float8E8M0FNU(), scales, 0, l1}};
  }
};

// --- Requirement: Conventional Tensor construction creates one subtensor ---

TEST(ConventionalConstruction, ConstructAConventionalTensor) {
  auto carrier = Host(dtypes::Float32(), 40);
  auto t = Tensor::Create(carrier, 4, L("(4,8):(8,1)"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_subtensors(), 1);
  EXPECT_EQ(t->carrier(), carrier);
  EXPECT_EQ(t->offset(), 4);
  EXPECT_EQ(t->layout(), L("(4,8):(8,1)"));
  EXPECT_EQ(&t->dtype(), dtypes::Float32());
  EXPECT_EQ(TensorAccess::representation(*t).subtensor(0).storage_dtype,
            dtypes::Float32());
  EXPECT_TRUE(TensorAccess::representation(*t).adjacent_layouts().empty());
}

TEST(ConventionalConstruction, RejectANegativeOffset) {
  auto carrier = Host(dtypes::Float32(), 40);
  auto t = Tensor::Create(carrier, -1, L("8:1"));
  EXPECT_TRUE(IsValueError(t.status()));
  EXPECT_TRUE(Contains(t.status(), "offsets must be non-negative"))
      << t.status();
  EXPECT_EQ(carrier.use_count(), 1) << "no reference retained";
}

TEST(ConventionalConstruction, RejectInsufficientCarrierStorage) {
  auto carrier = Host(dtypes::Float32(), 32);
  auto t = Tensor::Create(carrier, 4, L("(8,4):(4,1)"));
  EXPECT_TRUE(IsValueError(t.status()));
  EXPECT_EQ(t.status().message(),
            "subtensor 0: placement (8,4):(4,1) at offset 4 needs 36 carrier "
            "values, carrier has 32 (the placement exceeds the carrier size)");
  EXPECT_EQ(carrier->version(), 0u);
  EXPECT_FALSE(carrier->released());
}

TEST(ConventionalConstruction, RejectACategoryBackedConventionalTensor) {
  auto carrier = RecordingCarrier::Make(*dtypes::Floating(), 16);
  auto t = Tensor::Create(carrier, 0, L("16:1"));
  EXPECT_TRUE(IsValueError(t.status()));
  EXPECT_TRUE(Contains(t.status(), "one-subtensor storage schema"))
      << t.status();
  EXPECT_EQ(carrier->releases(), 0);
  EXPECT_EQ(carrier->version(), 0u);
  EXPECT_EQ(carrier.use_count(), 1);
  // A compound carrier dtype fails the same way.
  auto compound = RecordingCarrier::Make(*dtypes::MXFP8E4M3(), 16);
  EXPECT_TRUE(IsValueError(Tensor::Create(compound, 0, L("16:1")).status()));
}

TEST(ConventionalConstruction, NegativeStrideBelowZeroIsRejected) {
  auto carrier = Host(dtypes::Float32(), 8);
  EXPECT_TRUE(Tensor::Create(carrier, 7, L("8:-1")).ok());
  auto t = Tensor::Create(carrier, 6, L("8:-1"));
  EXPECT_TRUE(IsValueError(t.status()));
  EXPECT_TRUE(Contains(t.status(), "below 0")) << t.status();
}

// --- Requirement: Tensor state is projected from one authoritative
//     representation

TEST(ProjectedState, ReadConventionalTensorProperties) {
  auto carrier = Host(dtypes::Int16(), 100);
  const Tensor t = *Tensor::Create(carrier, 3, L("(3,(2,5)):(20,(1,2))"));
  EXPECT_EQ(t.carrier(), TensorAccess::representation(t).subtensor(0).carrier);
  EXPECT_EQ(t.offset(), 3);
  EXPECT_EQ(t.layout().ToString(), "(3,(2,5)):(20,(1,2))");
  EXPECT_EQ(&t.dtype(), dtypes::Int16());
  EXPECT_EQ(t.size(), 30);
  EXPECT_EQ(t.carrier_type(), std::type_index(typeid(HostCarrier)));
  EXPECT_EQ(carrier->version(), 0u) << "queries do not modify";
}

TEST(ProjectedState, ObserveAFrameworkProducedTensor) {
  TwoLevelParts p;
  const TwoLevel dtype;
  auto rep = Representation::Create(dtype.dtype, p.Subtensors(), {p.s0});
  ASSERT_TRUE(rep.ok()) << rep.status();
  const Tensor t = MakeTensor(*rep);
  EXPECT_EQ(&t.dtype(), dtype.dtype);
  EXPECT_EQ(t.carrier(), p.values);
  EXPECT_EQ(t.layout(), p.l0);
  EXPECT_EQ(t.size(), 256);
  EXPECT_EQ(t.num_subtensors(), 2);
  // A fresh representation derived from it reports its own state, not the
  // input's.
  std::vector<SubtensorCandidate> narrowed = {
      {dtypes::Float8E4M3FN(), p.values, 64, L("(3,(32,2)):(64,(1,32))")},
      {dtypes::Float8E8M0FNU(), p.scales, 2, L("(3,2):(2,1)")}};
  auto rep2 = Representation::Create(dtype.dtype, narrowed,
                                     {L("(3,(32,2)):(1,(0,3))")});
  ASSERT_TRUE(rep2.ok()) << rep2.status();
  const Tensor t2 = MakeTensor(*rep2);
  EXPECT_EQ(t2.offset(), 64);
  EXPECT_EQ(t2.size(), 192);
  EXPECT_EQ(t.size(), 256);
}

// --- Requirement: Tensor validates a dtype-provided ordered storage schema ---

TEST(StorageSchema, ValidateASimpleStorageSchema) {
  auto carrier = Host(dtypes::Float32(), 8);
  EXPECT_TRUE(
      Representation::Create(dtypes::Float32(),
                             {{dtypes::Float32(), carrier, 0, L("8:1")}}, {})
          .ok());
  // Two subtensors, or an adjacent layout, are rejected for a simple dtype.
  auto two = Representation::Create(dtypes::Float32(),
                                    {{dtypes::Float32(), carrier, 0, L("8:1")},
                                     {dtypes::Float32(), carrier, 0, L("8:1")}},
                                    {L("8:1")});
  EXPECT_TRUE(IsValueError(two.status()));
  auto adjacent = Representation::Create(
      dtypes::Float32(), {{dtypes::Float32(), carrier, 0, L("8:1")}},
      {L("8:1")});
  EXPECT_TRUE(IsValueError(adjacent.status()));
  EXPECT_TRUE(Contains(adjacent.status(), "needs 0 adjacent layouts"))
      << adjacent.status();
}

TEST(StorageSchema, ValidateAnOrderedStorageSchema) {
  TwoLevelParts p;
  const TwoLevel dtype;
  auto rep = Representation::Create(dtype.dtype, p.Subtensors(), {p.s0});
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ((*rep)->num_levels(), 2);
  EXPECT_EQ((*rep)->subtensor(0).storage_dtype, dtypes::Float8E4M3FN());
  EXPECT_EQ((*rep)->subtensor(1).storage_dtype, dtypes::Float8E8M0FNU());
  EXPECT_EQ((*rep)->adjacent_layouts().size(), 1u);
  EXPECT_EQ(*dtype.log, (std::vector<std::string>{"rule0", "rule1"}));
}

TEST(StorageSchema, RejectAStorageSchemaCountOrOrderMismatch) {
  TwoLevelParts p;
  const TwoLevel dtype;
  auto subtensors = p.Subtensors();
  subtensors.pop_back();
  auto count = Representation::Create(dtype.dtype, subtensors, {});
  EXPECT_TRUE(IsValueError(count.status()));
  EXPECT_TRUE(Contains(count.status(), "of 2 entries; got 1 subtensors"))
      << count.status();
  auto swapped = p.Subtensors();
  std::swap(swapped[0], swapped[1]);
  auto order = Representation::Create(dtype.dtype, swapped, {p.s0});
  EXPECT_TRUE(IsValueError(order.status()));
  EXPECT_TRUE(Contains(order.status(),
                       "subtensor 0: storage dtype float8_e8m0fnu "
                       "is not the storage-schema entry at "
                       "position 0 (float8_e4m3fn)"))
      << order.status();
  // Identity, not name: a second "float8_e4m3fn" descriptor is not the schema
  // entry.
  const SimpleDType* impostor = *SimpleDType::Create(
      {"float8_e4m3fn", 8, NumericClass::kFloating, true, 4, 3});
  auto renamed = p.Subtensors();
  renamed[0].storage_dtype = impostor;
  auto identity = Representation::Create(dtype.dtype, renamed, {p.s0});
  EXPECT_TRUE(IsValueError(identity.status()));
  EXPECT_TRUE(
      Contains(identity.status(), "different descriptor of the same name"));
  EXPECT_TRUE(dtype.log->empty()) << "no dtype-specific rule ran";
}

TEST(StorageSchema, RejectADtypeWithoutAStorageSchema) {
  auto carrier = RecordingCarrier::Make(*dtypes::Any(), 8);
  const DTypeCategory* extension = *DTypeCategory::Create(
      "TestExtension", [](const DType&) { return true; });
  for (const DType* category : {static_cast<const DType*>(dtypes::Any()),
                                static_cast<const DType*>(dtypes::Floating()),
                                static_cast<const DType*>(dtypes::Integer()),
                                static_cast<const DType*>(extension)}) {
    auto rep = Representation::Create(category,
                                      {{category, carrier, 0, L("8:1")}}, {});
    EXPECT_TRUE(IsValueError(rep.status()));
    EXPECT_TRUE(Contains(rep.status(), "has no Tensor storage schema"))
        << rep.status();
  }
  EXPECT_EQ(carrier->releases(), 0);
  EXPECT_EQ(carrier->version(), 0u);
  EXPECT_EQ(carrier.use_count(), 1);
}

// --- Requirement: Universal validation protects every subtensor ---

TEST(UniversalValidation, AcceptAUniversallyValidRepresentation) {
  TwoLevelParts p;
  const TwoLevel dtype;
  ASSERT_TRUE(Representation::Create(dtype.dtype, p.Subtensors(), {p.s0}).ok());
  EXPECT_EQ(dtype.log->size(), 2u) << "rules ran after universal validation";
}

TEST(UniversalValidation, RejectACarrierDtypeMismatch) {
  TwoLevelParts p;
  const TwoLevel dtype;
  auto subtensors = p.Subtensors();
  subtensors[1].carrier = Host(dtypes::UInt8(), 8);
  auto rep = Representation::Create(dtype.dtype, subtensors, {p.s0});
  EXPECT_TRUE(IsValueError(rep.status()));
  EXPECT_EQ(
      rep.status().message(),
      "subtensor 1: carrier dtype uint8 is not the identical storage dtype "
      "float8_e8m0fnu");
  EXPECT_TRUE(dtype.log->empty());
}

TEST(UniversalValidation, RejectMixedCarrierClasses) {
  const TwoLevel dtype;
  const Layout l0 = L("(4,(32,2)):(64,(1,32))");
  const Layout l1 = L("(4,2):(2,1)");
  const Layout s0 = L("(4,(32,2)):(1,(0,4))");
  auto base = RecordingCarrier::Make(*dtypes::Float8E4M3FN(), 256);
  auto sub = RecordingCarrierSubclass::Make(*dtypes::Float8E8M0FNU(), 8);
  auto rep = Representation::Create(dtype.dtype,
                                    {{dtypes::Float8E4M3FN(), base, 0, l0},
                                     {dtypes::Float8E8M0FNU(), sub, 0, l1}},
                                    {s0});
  EXPECT_TRUE(IsTypeError(rep.status()));
  EXPECT_TRUE(Contains(rep.status(),
                       "subtensors 0 and 1 use different carrier "
                       "classes"))
      << rep.status();
  EXPECT_TRUE(Contains(rep.status(), "RecordingCarrierSubclass"))
      << rep.status();
  auto host = Host(dtypes::Float8E8M0FNU(), 8);
  auto mixed = Representation::Create(dtype.dtype,
                                      {{dtypes::Float8E4M3FN(), base, 0, l0},
                                       {dtypes::Float8E8M0FNU(), host, 0, l1}},
                                      {s0});
  EXPECT_TRUE(IsTypeError(mixed.status()));
  EXPECT_TRUE(dtype.log->empty());
  EXPECT_EQ(base->releases() + sub->releases(), 0);
}

// Classes defined in another language share one C++ type: the foreign class
// tells them apart (python/carrier_binding.cc), and names them.
TEST(UniversalValidation, RejectMixedForeignCarrierClasses) {
  const TwoLevel dtype;
  static const char kBase[] = "mymodule.Carrier";
  static const char kSub[] = "mymodule.SubCarrier";
  const Layout l0 = L("(4,(32,2)):(64,(1,32))");
  const Layout l1 = L("(4,2):(2,1)");
  const Layout s0 = L("(4,(32,2)):(1,(0,4))");
  auto values = ForeignClassCarrier::Make(*dtypes::Float8E4M3FN(), 256, kBase);
  auto same = ForeignClassCarrier::Make(*dtypes::Float8E8M0FNU(), 8, kBase);
  auto other = ForeignClassCarrier::Make(*dtypes::Float8E8M0FNU(), 8, kSub);
  EXPECT_TRUE(Representation::Create(dtype.dtype,
                                     {{dtypes::Float8E4M3FN(), values, 0, l0},
                                      {dtypes::Float8E8M0FNU(), same, 0, l1}},
                                     {s0})
                  .ok());
  auto rep = Representation::Create(dtype.dtype,
                                    {{dtypes::Float8E4M3FN(), values, 0, l0},
                                     {dtypes::Float8E8M0FNU(), other, 0, l1}},
                                    {s0});
  EXPECT_TRUE(IsTypeError(rep.status()));
  EXPECT_EQ(rep.status().message(),
            "subtensors 0 and 1 use different carrier classes: "
            "mymodule.Carrier and mymodule.SubCarrier; one representation "
            "uses one exact carrier class");
  EXPECT_EQ(dtype.log->size(), 2u)
      << "the valid one ran its two rules, the refused one none";
}

TEST(UniversalValidation, RejectAnInvalidSubtensorField) {
  TwoLevelParts p;
  const TwoLevel dtype;
  auto no_carrier = p.Subtensors();
  no_carrier[1].carrier = nullptr;
  auto a = Representation::Create(dtype.dtype, no_carrier, {p.s0});
  EXPECT_TRUE(IsTypeError(a.status()));
  EXPECT_EQ(a.status().message(), "subtensor 1: carrier is not a Carrier");

  auto no_layout = p.Subtensors();
  no_layout[0].placement = ParseLayout("(4,8):(1,(4,1))");
  auto b = Representation::Create(dtype.dtype, no_layout, {p.s0});
  EXPECT_TRUE(IsTypeError(b.status()));
  EXPECT_TRUE(Contains(b.status(), "subtensor 0: placement is not a Layout"));

  auto negative = p.Subtensors();
  negative[1].carrier = RecordingCarrier::Make(*dtypes::Float8E8M0FNU(), -3);
  negative[0].carrier = RecordingCarrier::Make(*dtypes::Float8E4M3FN(), 256);
  auto c = Representation::Create(dtype.dtype, negative, {p.s0});
  EXPECT_TRUE(IsValueError(c.status()));
  EXPECT_EQ(c.status().message(),
            "subtensor 1: carrier reports negative size -3");
  // A non-integer offset cannot be expressed: SubtensorCandidate::offset is
  // int64_t.
  EXPECT_TRUE(dtype.log->empty());
}

TEST(UniversalValidation, RejectAnOutOfBoundsPlacement) {
  TwoLevelParts p;
  const TwoLevel dtype;
  auto negative = p.Subtensors();
  negative[1].offset = -2;
  auto a = Representation::Create(dtype.dtype, negative, {p.s0});
  EXPECT_TRUE(IsValueError(a.status()));
  EXPECT_EQ(a.status().message(),
            "subtensor 1: Tensor offset -2 is negative; Tensor offsets must be "
            "non-negative");
  auto beyond = p.Subtensors();
  beyond[1].offset = 1;
  auto b = Representation::Create(dtype.dtype, beyond, {p.s0});
  EXPECT_TRUE(IsValueError(b.status()));
  EXPECT_EQ(
      b.status().message(),
      "subtensor 1: placement (4,2):(2,1) at offset 1 needs 9 carrier values, "
      "carrier has 8 (the placement exceeds the carrier size)");
  EXPECT_TRUE(dtype.log->empty());
}

// --- Requirement: Adjacent layouts map between representation levels ---

TEST(AdjacentLayouts, AcceptAnAdjacentLevelMap) {
  TwoLevelParts p;
  const TwoLevel dtype;
  auto rep = Representation::Create(dtype.dtype, p.Subtensors(), {p.s0});
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ((*rep)->adjacent_layouts()[0], p.s0);
  // Every value coordinate reaches a scale coordinate inside L_1.
  const Layout& s0 = (*rep)->adjacent_layouts()[0];
  for (int64_t i = 0; i < s0.size(); ++i) {
    EXPECT_GE(s0(i), 0);
    EXPECT_LT(s0(i), p.l1.size());
  }
}

TEST(AdjacentLayouts, RejectTheWrongAdjacentDomain) {
  TwoLevelParts p;
  const TwoLevel dtype;
  auto rep =
      Representation::Create(dtype.dtype, p.Subtensors(), {L("(4,64):(1,0)")});
  EXPECT_TRUE(IsValueError(rep.status()));
  EXPECT_EQ(rep.status().message(),
            "adjacent level 0: shape of (4,64):(1,0) must equal the source "
            "placement shape (4,(32,2))");
  EXPECT_TRUE(dtype.log->empty());
  EXPECT_EQ(p.values->version(), 0u);
}

TEST(AdjacentLayouts, RejectAnAdjacentResultOutsideTheTargetShape) {
  TwoLevelParts p;
  const TwoLevel dtype;
  auto rep = Representation::Create(dtype.dtype, p.Subtensors(),
                                    {L("(4,(32,2)):(1,(0,5))")});
  EXPECT_TRUE(IsValueError(rep.status()));
  EXPECT_EQ(
      rep.status().message(),
      "adjacent level 0: (4,(32,2)):(1,(0,5)) reaches linear index 8, but "
      "level 1 has size(L_1) = 8");
  auto negative = Representation::Create(dtype.dtype, p.Subtensors(),
                                         {L("(4,(32,2)):(-1,(0,4))")});
  EXPECT_TRUE(IsValueError(negative.status()));
  EXPECT_TRUE(Contains(negative.status(), "reaches linear index -3"));
  EXPECT_TRUE(dtype.log->empty());
}

TEST(AdjacentLayouts, ValidationIsAnalyticAtScale) {
  // 2^30 logical values validate without enumerating (recorded carriers hold no
  // data).
  const int64_t n = int64_t{1} << 15;
  const TwoLevel dtype;
  auto values = RecordedCarrier::Create(*dtypes::Float8E4M3FN(), n * n);
  auto scales = RecordedCarrier::Create(*dtypes::Float8E8M0FNU(), n * (n / 32));
  const IntTuple shape = IntTuple::Tuple({n, IntTuple::Tuple({32, n / 32})});
  auto rep = Representation::Create(
      dtype.dtype,
      {{dtypes::Float8E4M3FN(), values, 0,
        *Layout::Create(shape, IntTuple::Tuple({n, IntTuple::Tuple({1, 32})}))},
       {dtypes::Float8E8M0FNU(), scales, 0,
        *Layout::Create(IntTuple::Tuple({n, n / 32}),
                        IntTuple::Tuple({n / 32, 1}))}},
      {*Layout::Create(shape, IntTuple::Tuple({1, IntTuple::Tuple({0, n})}))});
  ASSERT_TRUE(rep.ok()) << rep.status();
}

// --- Requirement: Dtype-provided rules receive only validated context ---

TEST(Rules, InvokeOrderedRulesWithValidatedState) {
  TwoLevelParts p;
  const TwoLevel dtype;
  ASSERT_TRUE(Representation::Create(dtype.dtype, p.Subtensors(), {p.s0}).ok());
  EXPECT_EQ(*dtype.log, (std::vector<std::string>{"rule0", "rule1"}));
  const auto* r0 = static_cast<const LoggingRule*>(dtype.rules[0].get());
  const auto* r1 = static_cast<const LoggingRule*>(dtype.rules[1].get());
  ASSERT_EQ(r0->contexts_.size(), 1u);
  ASSERT_EQ(r1->contexts_.size(), 1u);
  EXPECT_EQ(r0->contexts_[0], r1->contexts_[0]) << "the same frozen context";
}

TEST(Rules, AFailingRuleStopsLaterRulesAndPropagates) {
  TwoLevelParts p;
  const TwoLevel dtype({ValueError("rule0 says no"), absl::OkStatus()});
  auto rep = Representation::Create(dtype.dtype, p.Subtensors(), {p.s0});
  EXPECT_TRUE(IsValueError(rep.status()));
  EXPECT_EQ(rep.status().message(), "rule0 says no");
  EXPECT_EQ(*dtype.log, (std::vector<std::string>{"rule0"}));
  EXPECT_EQ(p.values->version(), 0u);
  EXPECT_FALSE(p.values->released());
  EXPECT_EQ(p.values.use_count(), 1) << "a failure keeps no reference";
}

TEST(Rules, StopBeforeRulesOnUniversalFailure) {
  TwoLevelParts p;
  const TwoLevel dtype;
  std::vector<std::vector<SubtensorCandidate>> bad(5, p.Subtensors());
  bad[0].pop_back();                             // schema count
  bad[1][1].carrier = nullptr;                   // not a Carrier
  bad[2][1].carrier = Host(dtypes::UInt8(), 8);  // carrier dtype
  bad[3][0].offset = 1;                          // placement bound
  bad[4][1].carrier =
      RecordingCarrier::Make(*dtypes::Float8E8M0FNU(), 8);  // class
  for (size_t k = 0; k < bad.size(); ++k) {
    std::vector<absl::StatusOr<Layout>> adjacent;
    if (k != 0) adjacent.push_back(p.s0);
    EXPECT_FALSE(Representation::Create(dtype.dtype, bad[k], adjacent).ok())
        << k;
  }
  EXPECT_FALSE(
      Representation::Create(dtype.dtype, p.Subtensors(), {L("(4,64):(1,0)")})
          .ok());
  EXPECT_TRUE(dtype.log->empty());
}

class ContextReader final : public RepresentationRule {
 public:
  absl::string_view name() const override { return "reader"; }
  absl::Status Validate(
      const RepresentationValidationContext& c) const override {
    // Every accessor is const and yields views of const data: a rule cannot
    // mutate.
    static_assert(std::is_same_v<decltype(c.placement_layouts()),
                                 absl::Span<const Layout>>);
    static_assert(std::is_same_v<decltype(c.storage_dtypes()),
                                 absl::Span<const SimpleDType* const>>);
    logical = &c.logical_dtype();
    storage.assign(c.storage_dtypes().begin(), c.storage_dtypes().end());
    placements.assign(c.placement_layouts().begin(),
                      c.placement_layouts().end());
    adjacent.assign(c.adjacent_layouts().begin(), c.adjacent_layouts().end());
    shapes.assign(c.level_shapes().begin(), c.level_shapes().end());
    return absl::OkStatus();
  }
  mutable const DType* logical = nullptr;
  mutable std::vector<const SimpleDType*> storage;
  mutable std::vector<Layout> placements;
  mutable std::vector<Layout> adjacent;
  mutable std::vector<IntTuple> shapes;
};

TEST(Rules, ObserveThePublicValidationProtocol) {
  TwoLevelParts p;
  auto reader = std::make_shared<ContextReader>();
  const CompoundDType* dtype = *CompoundDType::Create(
      "test_reader", {dtypes::Float8E4M3FN(), dtypes::Float8E8M0FNU()},
      {reader});
  ASSERT_TRUE(Representation::Create(dtype, p.Subtensors(), {p.s0}).ok());
  EXPECT_EQ(reader->logical, dtype);
  EXPECT_EQ(reader->storage,
            (std::vector<const SimpleDType*>{dtypes::Float8E4M3FN(),
                                             dtypes::Float8E8M0FNU()}));
  EXPECT_EQ(reader->placements, (std::vector<Layout>{p.l0, p.l1}));
  EXPECT_EQ(reader->adjacent, (std::vector<Layout>{p.s0}));
  EXPECT_EQ(reader->shapes,
            (std::vector<IntTuple>{p.l0.shape(), p.l1.shape()}));
}

// --- Requirement: Tensor representations own carriers and track all versions

TEST(Ownership, KeepCarrierStorageAlive) {
  std::weak_ptr<Carrier> watch;
  absl::StatusOr<Tensor> t = absl::UnknownError("unset");
  {
    auto carrier = Host(dtypes::Float32(), 16);
    watch = carrier;
    t = Tensor::Create(carrier, 0, L("16:1"));
    ASSERT_TRUE(t.ok());
  }
  ASSERT_FALSE(watch.expired()) << "the representation keeps the carrier alive";
  EXPECT_FALSE(watch.lock()->released());
  EXPECT_NE(t->carrier()->data(), nullptr);
}

TEST(Ownership, SharedCarriersStayValidAcrossTensors) {
  auto carrier = Host(dtypes::Float32(), 16);
  std::vector<Tensor> tensors;
  for (int k = 0; k < 4; ++k) {
    tensors.push_back(*Tensor::Create(carrier, k, L("(3,4):(4,1)")));
  }
  tensors.erase(tensors.begin(), tensors.begin() + 2);
  EXPECT_FALSE(carrier->released());
  EXPECT_EQ(carrier.use_count(), 3);
  for (const Tensor& t : tensors) EXPECT_EQ(t.carrier(), carrier);
}

TEST(Ownership, SnapshotUniqueCarrierVersionsInLevelOrder) {
  // Three levels over two carriers: A, B, A.
  const CompoundDType* dtype = *CompoundDType::Create(
      "test_three_level",
      {dtypes::Float32(), dtypes::Float32(), dtypes::Float32()});
  auto a = Host(dtypes::Float32(), 64);
  auto b = Host(dtypes::Float32(), 64);
  a->BumpVersion();
  a->BumpVersion();
  b->BumpVersion();
  auto rep = Representation::Create(dtype,
                                    {{dtypes::Float32(), b, 0, L("8:1")},
                                     {dtypes::Float32(), a, 0, L("8:1")},
                                     {dtypes::Float32(), b, 8, L("8:1")}},
                                    {L("8:1"), L("8:1")});
  ASSERT_TRUE(rep.ok()) << rep.status();
  const MutationSnapshot snapshot = (*rep)->Snapshot();
  ASSERT_EQ(snapshot.size(), 2u);
  EXPECT_EQ(snapshot[0], (CarrierVersion{b.get(), 1}));
  EXPECT_EQ(snapshot[1], (CarrierVersion{a.get(), 2}));
  EXPECT_EQ(a->version(), 2u) << "taking a snapshot modifies nothing";
}

// --- Requirement: Public multi-subtensor behavior remains narrowly bounded ---

TEST(PublicConstruction, PublicConstructionRemainsConventional) {
  // Tensor::Create takes one carrier, offset and layout and yields one
  // subtensor; a compound carrier cannot be smuggled in.
  auto t =
      Tensor::Create(Host(dtypes::Float8E4M3FN(), 64), 0, L("(2,32):(32,1)"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->num_subtensors(), 1);
  EXPECT_EQ(&t->dtype(), dtypes::Float8E4M3FN());
  auto compound = Tensor::Create(RecordingCarrier::Make(*dtypes::NVFP4(), 64),
                                 0, L("64:1"));
  EXPECT_TRUE(IsValueError(compound.status()));
}

TEST(PublicConstruction, PermitASupportedPureLayoutView) {
  TwoLevelParts p;
  const TwoLevel dtype;
  const Tensor t =
      MakeTensor(*Representation::Create(dtype.dtype, p.Subtensors(), {p.s0}));
  const std::vector<int64_t> perm = {1, 0};
  const std::vector<int64_t> dims = {0, 2};
  std::vector<std::pair<const char*, absl::StatusOr<Tensor>>> views;
  views.emplace_back("permute", Permute(t, perm));
  views.emplace_back("slice", Slice(t, 0, 1, 4, 2));
  views.emplace_back("reshape", Reshape(t, {2, 128}));
  views.emplace_back("as_strided", AsStrided(t, L("(2,64):(64,1)"), 64));
  views.emplace_back("broadcast_to", BroadcastTo(t, {3, 4, 64}));
  views.emplace_back("broadcast_in_dim", BroadcastInDim(t, {4, 5, 64}, dims));
  views.emplace_back("unsqueeze", Unsqueeze(t, 1));
  views.emplace_back("squeeze", Squeeze(*Unsqueeze(t, 1), 1));
  for (auto& [name, view] : views) {
    ASSERT_TRUE(view.ok()) << name << ": " << view.status();
    EXPECT_EQ(view->num_subtensors(), 2) << name;
    EXPECT_EQ(&view->dtype(), dtype.dtype) << name;
    EXPECT_EQ(view->carrier(), p.values) << name;
  }
  // Each view went through the factory, so the dtype's rules ran once per view.
  EXPECT_EQ(dtype.log->size(), 2u * (1 + views.size() + 1));
}

TEST(PublicConstruction,
     RejectAnUnsupportedMultiSubtensorOperationBeforeEffects) {
  TwoLevelParts p;
  const TwoLevel dtype;
  const Tensor t =
      MakeTensor(*Representation::Create(dtype.dtype, p.Subtensors(), {p.s0}));
  const int64_t carriers = HostCarrier::created();
  const std::vector<absl::Status> results = {
      GetItem(t, IntTuple::Tuple({0, 0})).status(),
      SetItem(t, 0, Scalar::Int(1)),
      Fill(t, Scalar::Int(0)),
      Add(t, t).status(),
      Neg(t).status(),
      Sum(t).status(),
      Contiguous(t).status(),
      Clone(t).status(),
      Cast(t, *dtypes::Float32()).status(),
      Scatter(t, 0, t, t)};
  for (const absl::Status& s : results) {
    EXPECT_TRUE(IsOneSubtensorRequired(s)) << s;
    EXPECT_TRUE(
        Contains(s, "requires a one-subtensor Tensor; got 2 subtensors"))
        << s;
  }
  EXPECT_EQ(HostCarrier::created(), carriers) << "no allocation";
  EXPECT_EQ(p.values->version(), 0u) << "no carrier mutation";
  EXPECT_EQ(p.scales->version(), 0u);
  EXPECT_EQ(dtype.log->size(), 2u) << "only the construction ran the rules";
}

TEST(ProjectedState, ObserveAViewProducedTensor) {
  auto carrier = Host(dtypes::Float32(), 32);
  const Tensor t = *Tensor::Create(carrier, 0, L("(4,8):(8,1)"));
  auto v = Slice(t, 1, 2, 6);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->offset(), 2);
  EXPECT_EQ(v->size(), 16);
  EXPECT_EQ(v->layout().ToString(), "(4,4):(8,1)");
  EXPECT_EQ(t.offset(), 0) << "the input keeps its own state";
}

}  // namespace
}  // namespace strata
