#include "core/representation.h"

#include <cxxabi.h>

#include <cassert>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/internal/block_cache.h"
#include "util/status_macros.h"

namespace strata {
namespace {

std::string SchemaText(absl::Span<const SimpleDType* const> schema) {
  return absl::StrCat("(",
                      absl::StrJoin(schema, ", ",
                                    [](std::string* out, const SimpleDType* d) {
                                      absl::StrAppend(out, d->name());
                                    }),
                      ")");
}

// "host (strata::HostCarrier)": the registered name and the C++ class.
std::string ClassText(const Carrier& carrier) {
  // A foreign class's C++ type is its binding's, the same for all of them.
  if (carrier.foreign_class()) return std::string(carrier.class_name());
  const char* mangled = typeid(carrier).name();
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, nullptr);
  std::string text = absl::StrCat(carrier.class_name(), " (",
                                  demangled ? demangled : mangled, ")");
  std::free(demangled);
  return text;
}

// NOTE [ Placement bounds ]
// L_i reaches the carrier indices
//   [offset + min_index(L_i), offset + cosize(L_i) - 1],
// computed in O(1) from the bounds Layout caches (NOTE [ Layout bounds ] in
// layout/layout.cc); an empty placement reaches none, and its offset + cosize
// (= offset) must still not exceed the carrier size.
absl::Status CheckPlacementFits(int i, const Carrier& carrier, int64_t offset,
                                const Layout& placement) {
  if (offset < 0) {
    return ValueErrorCat("subtensor ", i, ": Tensor offset ", offset,
                         " is negative; Tensor offsets must be non-negative");
  }
  if (carrier.size() < 0) {
    return ValueErrorCat("subtensor ", i, ": carrier reports negative size ",
                         carrier.size());
  }
  if (placement.size() == 0) {
    // cosize is 0: the offset itself must still lie within the carrier.
    if (offset > carrier.size()) {
      return ValueErrorCat(
          "subtensor ", i, ": empty placement ", placement.ToString(),
          " at offset ", offset, " lies past the end of the carrier (size ",
          carrier.size(), "; the placement exceeds the carrier size)");
    }
    return absl::OkStatus();
  }
  int64_t needed;
  if (!CheckedAdd(offset, placement.cosize(), &needed)) {
    return ValueErrorCat("subtensor ", i, ": placement ", placement.ToString(),
                         " at offset ", offset,
                         " overflows 64-bit index arithmetic");
  }
  if (needed > carrier.size()) {
    return ValueErrorCat("subtensor ", i, ": placement ", placement.ToString(),
                         " at offset ", offset, " needs ", needed,
                         " carrier values, carrier has ", carrier.size(),
                         " (the placement exceeds the carrier size)");
  }
  // offset >= 0 and min_index <= 0: the sum cannot overflow.
  if (offset + placement.min_index() < 0) {
    return ValueErrorCat("subtensor ", i, ": placement ", placement.ToString(),
                         " at offset ", offset, " reaches carrier index ",
                         offset + placement.min_index(), ", below 0");
  }
  return absl::OkStatus();
}

// Whether a placement passes CheckPlacementFits, without building a message
// (the views' success path).
inline bool PlacementFits(const Carrier& carrier, int64_t offset,
                          const Layout& placement) {
  const int64_t size = carrier.size();
  if (offset < 0 || size < 0) return false;
  if (placement.size() == 0) return offset <= size;
  // offset >= 0 and cosize >= 1: the sum overflows exactly when it wraps
  // negative, and offset + min_index cannot overflow.
  int64_t needed;
  return CheckedAdd(offset, placement.cosize(), &needed) && needed <= size &&
         offset + placement.min_index() >= 0;
}

// Whether an adjacent layout passes CheckAdjacent, without a message.
inline bool AdjacentFits(const Layout& adjacent, const Layout& source,
                         const Layout& target) {
  if (adjacent.shape() != source.shape()) return false;
  return adjacent.size() == 0 ||
         (adjacent.min_index() >= 0 && adjacent.max_index() < target.size());
}

// A T built in place on first use: std::optional<T>, less its default
// constructor's cost. GCC 12 zeroes an empty optional's whole payload when
// it constructs one, and RunRulesOf's two contexts (904 bytes each, their
// sequences inline) cost every sliced block-scaled view two memsets.
template <typename T>
class LazyValue {
 public:
  LazyValue() {}
  LazyValue(const LazyValue&) = delete;
  LazyValue& operator=(const LazyValue&) = delete;
  ~LazyValue() {
    if (engaged_) get().~T();
  }
  // Precondition: !has_value() (each is built once, on first use).
  template <typename... Args>
  T& emplace(Args&&... args) {
    assert(!engaged_);
    new (storage_) T(std::forward<Args>(args)...);
    engaged_ = true;
    return get();
  }
  bool has_value() const { return engaged_; }
  T& operator*() { return get(); }

 private:
  T& get() { return *std::launder(reinterpret_cast<T*>(storage_)); }
  alignas(T) unsigned char storage_[sizeof(T)];
  bool engaged_ = false;
};

// The rules' context (spec: a read-only description of the universally
// validated candidate). It reads the representation it describes: the
// sequences a rule asks for that the representation does not hold
// contiguously (storage dtypes, placements, shapes) are materialized on first
// use only, so that a rule reading placement_layout(i) costs no copy (NOTE
// [ Views build in place ]). A context lives for one Create or Finish call,
// on one thread.
class FrozenContext final : public RepresentationValidationContext {
 public:
  explicit FrozenContext(const Representation& rep) : rep_(rep) {}
  const DType& logical_dtype() const override { return rep_.logical_dtype(); }
  absl::Span<const SimpleDType* const> storage_dtypes() const override {
    Sequences& s = sequences();
    if (s.storage.empty()) {
      for (const Subtensor& t : rep_.subtensors())
        s.storage.push_back(t.storage_dtype);
    }
    return s.storage;
  }
  absl::Span<const Layout> placement_layouts() const override {
    Sequences& s = sequences();
    if (s.placements.empty()) {
      for (const Subtensor& t : rep_.subtensors())
        s.placements.push_back(t.placement);
    }
    return s.placements;
  }
  absl::Span<const Layout> adjacent_layouts() const override {
    return rep_.adjacent_layouts();
  }
  absl::Span<const IntTuple> level_shapes() const override {
    Sequences& s = sequences();
    if (s.shapes.empty()) {
      for (const Subtensor& t : rep_.subtensors())
        s.shapes.push_back(t.placement.shape());
    }
    return s.shapes;
  }
  int num_levels() const override { return rep_.num_levels(); }
  const Layout& placement_layout(int i) const override {
    return rep_.subtensor(i).placement;
  }

 private:
  // Behind one LazyValue: a context whose rules read only placement_layout
  // and adjacent_layouts (every view's) neither builds nor destroys them.
  struct Sequences {
    absl::InlinedVector<const SimpleDType*, 4> storage;
    absl::InlinedVector<Layout, 2> placements;
    absl::InlinedVector<IntTuple, 2> shapes;
  };
  Sequences& sequences() const {
    if (!sequences_.has_value()) sequences_.emplace();
    return *sequences_;
  }

  const Representation& rep_;
  mutable LazyValue<Sequences> sequences_;
};

// Step 3 of Create for adjacent level i (S_i between placements source and
// target).
absl::Status CheckAdjacent(int i, const Layout& adjacent, const Layout& source,
                           const Layout& target) {
  if (adjacent.shape() != source.shape()) {
    return ValueErrorCat(
        "adjacent level ", i, ": shape of ", adjacent.ToString(),
        " must equal the source placement shape ", source.shape().ToString());
  }
  if (adjacent.size() == 0) return absl::OkStatus();
  if (adjacent.min_index() < 0) {
    return ValueErrorCat("adjacent level ", i, ": ", adjacent.ToString(),
                         " reaches linear index ", adjacent.min_index(),
                         ", outside [0, ", target.size(), ")");
  }
  if (adjacent.max_index() >= target.size()) {
    return ValueErrorCat("adjacent level ", i, ": ", adjacent.ToString(),
                         " reaches linear index ", adjacent.max_index(),
                         ", but level ", i + 1, " has size(L_", i + 1,
                         ") = ", target.size());
  }
  return absl::OkStatus();
}

// Which rules a view's representation must pass: all of them, or those that
// do not keep their verdict under the view (NOTE [ Verdicts that views keep ]
// and NOTE [ Verdicts that slices keep ] in dtype/representation_rule.h):
// for a view that only rearranges modes, or for `slice` of `source`.
struct RulesToRun {
  enum class Kind { kAll, kNotKeepingRearrangedModes, kNotKeepingSlice };
  Kind kind = Kind::kAll;
  const Representation* source = nullptr;  // kNotKeepingSlice only
  ModeSlice slice;
};

// Step 4 of Create for a compound dtype with rules.
ABSL_ATTRIBUTE_NOINLINE absl::Status RunRulesOf(const CompoundDType& compound,
                                                const Representation& rep,
                                                const RulesToRun& which) {
  // Built for the first rule that runs: a release build that trusts every
  // rule's claim builds none.
  LazyValue<FrozenContext> context, source_context;
  for (const auto& rule : compound.rules()) {
    bool kept = false;
    switch (which.kind) {
      case RulesToRun::Kind::kAll:
        break;
      case RulesToRun::Kind::kNotKeepingRearrangedModes:
        kept = rule->KeepsVerdictWhenModesRearrange();
        break;
      case RulesToRun::Kind::kNotKeepingSlice:
        if (!source_context.has_value()) source_context.emplace(*which.source);
        kept = rule->KeepsVerdictWhenSliced(*source_context, which.slice);
        break;
    }
#ifdef NDEBUG
    if (kept) continue;
#endif
    if (!context.has_value()) context.emplace(rep);
    absl::Status verdict = rule->Validate(*context);
    if (verdict.ok()) continue;
    if (kept) {
      // Builds without NDEBUG: the rule's claim, checked.
      const bool sliced = which.kind == RulesToRun::Kind::kNotKeepingSlice;
      return absl::InternalError(absl::StrCat(
          "rule ", rule->name(), " keeps its verdict ",
          sliced ? absl::StrCat("on a slice of mode ", which.slice.mode, " (",
                                which.slice.count, " coordinates from ",
                                which.slice.start, " by steps of ",
                                which.slice.step, ")")
                 : std::string("when a view rearranges modes"),
          ", yet refuses such a view of a validated Tensor: ",
          verdict.message()));
    }
    return verdict;
  }
  return absl::OkStatus();
}

// Step 4 of Create. Inline: a simple dtype (every one-level view's) has no
// rule, and costs a load and a comparison, not a call that builds a context.
inline absl::Status RunRules(const Representation& rep,
                             const RulesToRun& which = RulesToRun()) {
  const CompoundDType* compound = rep.logical_dtype().AsCompound();
  if (compound == nullptr || compound->rules().empty()) return absl::OkStatus();
  return RunRulesOf(*compound, rep, which);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Representation>> Representation::Create(
    const DType* logical_dtype, std::vector<SubtensorCandidate> subtensors,
    std::vector<absl::StatusOr<Layout>> adjacent_layouts) {
  // 1. Storage schema.
  if (logical_dtype == nullptr)
    return TypeError("the logical dtype is not a DType");
  STRATA_ASSIGN_OR_RETURN(auto schema, StorageSchema(*logical_dtype));
  const size_t n = schema.size();
  if (subtensors.size() != n) {
    return ValueErrorCat("logical dtype ", logical_dtype->name(),
                         " has the storage schema ", SchemaText(schema), " of ",
                         n, " entries; got ", subtensors.size(), " subtensors");
  }
  if (adjacent_layouts.size() != n - 1) {
    return ValueErrorCat("logical dtype ", logical_dtype->name(),
                         " has the storage schema ", SchemaText(schema), " of ",
                         n, " entries, which needs ", n - 1,
                         " adjacent layouts; got ", adjacent_layouts.size());
  }
  for (size_t i = 0; i < n; ++i) {
    if (subtensors[i].storage_dtype != schema[i]) {
      return ValueErrorCat(
          "subtensor ", i, ": storage dtype ",
          subtensors[i].storage_dtype ? subtensors[i].storage_dtype->name()
                                      : std::string("(none)"),
          " is not the storage-schema entry at position ", i, " (",
          schema[i]->name(), ") of ", logical_dtype->name(),
          subtensors[i].storage_dtype &&
                  subtensors[i].storage_dtype->name() == schema[i]->name()
              ? "; it is a different descriptor of the same name"
              : "");
    }
  }
  // 2. Universal validation of every subtensor.
  for (size_t i = 0; i < n; ++i) {
    const SubtensorCandidate& s = subtensors[i];
    if (s.carrier == nullptr) {
      return TypeErrorCat("subtensor ", i, ": carrier is not a Carrier");
    }
    if (!s.placement.ok()) {
      return TypeErrorCat("subtensor ", i, ": placement is not a Layout: ",
                          s.placement.status().message());
    }
    if (s.carrier->type() != subtensors[0].carrier->type() ||
        s.carrier->foreign_class() != subtensors[0].carrier->foreign_class()) {
      return TypeErrorCat(
          "subtensors 0 and ", i,
          " use different carrier classes: ", ClassText(*subtensors[0].carrier),
          " and ", ClassText(*s.carrier),
          "; one representation uses one exact carrier class");
    }
    if (&s.carrier->dtype() != s.storage_dtype) {
      return ValueErrorCat(
          "subtensor ", i, ": carrier dtype ", s.carrier->dtype().name(),
          " is not the identical storage dtype ", s.storage_dtype->name(),
          s.carrier->dtype().name() == s.storage_dtype->name()
              ? " (a different descriptor of the same name)"
              : "");
    }
    STRATA_RETURN_IF_ERROR(
        CheckPlacementFits(i, *s.carrier, s.offset, *s.placement));
  }
  // 3. Adjacent layouts.
  for (size_t i = 0; i + 1 < n; ++i) {
    const absl::StatusOr<Layout>& adjacent = adjacent_layouts[i];
    if (!adjacent.ok()) {
      return TypeErrorCat("adjacent level ", i,
                          ": not a Layout: ", adjacent.status().message());
    }
    STRATA_RETURN_IF_ERROR(CheckAdjacent(i, *adjacent, *subtensors[i].placement,
                                         *subtensors[i + 1].placement));
  }
  // Universally valid: build the representation the rules will see.
  std::shared_ptr<Representation> rep = Allocate(static_cast<int>(n));
  rep->logical_dtype_ = logical_dtype;
  for (size_t i = 0; i < n; ++i) {
    rep->subtensors_[i] = {schema[i], std::move(subtensors[i].carrier),
                           subtensors[i].offset,
                           *std::move(subtensors[i].placement)};
  }
  for (size_t i = 0; i + 1 < n; ++i) {
    rep->adjacent_[i] = *std::move(adjacent_layouts[i]);
  }
  // 4. The dtype's rules, in order, on one frozen context.
  STRATA_RETURN_IF_ERROR(RunRules(*rep));
  return std::shared_ptr<const Representation>(std::move(rep));
}

// NOTE [ Views build in place ]
// A view (views/views.cc) costs at most one allocation and O(rank) work:
//
// clang-format off
//  * one allocation at most: AllocateDraft places the representation, its
//    subtensors and its adjacent layouts in one allocate_shared block
//    (Storage<N> for up to 4 levels, NOTE [ Recycled representation blocks ]);
//    IntTuples keep up to 8 leaves inline, so the Layouts in it allocate
//    nothing;
//  * in place: a ViewDraft's block is constructed from the source, each
//    member once, with what the view keeps (the dtypes, the carriers, the
//    offsets, the deeper placements and adjacent layouts), and the view
//    writes its new L_0 and S_0 into it (LayoutAssembler, layout/layout.h),
//    with no candidate vectors, intermediate Layouts or StatusOr copies;
//  * validation of what a view can break: the source was validated, and a
//    draft cannot change a dtype or a carrier, so steps 1 and 2's schema,
//    carrier, class and dtype checks hold by construction. Everything a view
//    does change is checked as Create checks it and with its messages: every
//    placement's bounds against its carrier (O(1) per level from the cached
//    Layout bounds, NOTE [ Placement bounds ]), every adjacent layout's
//    domain and range (O(leaves)), and the new layouts themselves, whose
//    bounds LayoutAssembler computes as Layout::Create does (O(leaves)) or
//    derives from the validated source's.
//    A view that keeps every level's reach cannot break those checks, and
//    skips them (NOTE [ Views that keep their reach ]);
//  * the dtype's rules still run, in order, on a context that reads the
//    representation without copying it (FrozenContext above); the block rule
//    reads placement_layout(0) and S_0 in O(leaves).
// clang-format on
//
// One-level views whose placement is flat, and AsStrided of one level, skip
// the draft and build their block directly (NOTE [ One-level flat views ]).
// Representation::Create, the generic factory, stays the one path for
// candidates that nothing has validated (proto, tests, replay).
namespace {

// Level i of a view's draft of a validated source (ViewDraft): the source's,
// but level 0's placement is 1:0 until the view writes it.
Subtensor DraftSubtensor(const Subtensor& from, size_t i) {
  return Subtensor{from.storage_dtype, from.carrier, from.offset,
                   i == 0 ? Layout() : from.placement};
}

}  // namespace

template <int N>
struct Representation::Storage final : Representation {
  Storage() : Representation(PrivateTag{}) {
    subtensors_ = subtensor_storage;
    adjacent_ = adjacent_storage;
    num_levels_ = N;
  }
  // A view's draft of `source` (N levels), every member built once: S_0 is
  // 1:0 until the view writes it.
  explicit Storage(const Representation& source)
      : Storage(source, std::make_index_sequence<N>(),
                std::make_index_sequence<N - 1>()) {}
  Subtensor subtensor_storage[N];
  Layout adjacent_storage[N - 1];

 private:
  template <size_t... I, size_t... J>
  Storage(const Representation& source, std::index_sequence<I...>,
          std::index_sequence<J...>)
      : Representation(PrivateTag{}),
        subtensor_storage{DraftSubtensor(source.subtensors_[I], I)...},
        adjacent_storage{(J == 0 ? Layout() : source.adjacent_[J])...} {
    logical_dtype_ = source.logical_dtype_;
    subtensors_ = subtensor_storage;
    adjacent_ = adjacent_storage;
    num_levels_ = N;
  }
};

// One level has no adjacent layout to hold.
template <>
struct Representation::Storage<1> final : Representation {
  Storage() : Representation(PrivateTag{}) {
    subtensors_ = &subtensor_storage;
    num_levels_ = 1;
  }
  // The one subtensor built in place (CreateOneLevel): its placement is
  // copy-constructed, not built as 1:0 and then assigned.
  Storage(const SimpleDType* dtype, std::shared_ptr<Carrier> carrier,
          int64_t offset, const Layout& placement)
      : Representation(PrivateTag{}),
        subtensor_storage{dtype, std::move(carrier), offset, placement} {
    logical_dtype_ = dtype;
    subtensors_ = &subtensor_storage;
    num_levels_ = 1;
  }
  // A view's draft of the one-level `source`.
  explicit Storage(const Representation& source)
      : Representation(PrivateTag{}),
        subtensor_storage(DraftSubtensor(source.subtensors_[0], 0)) {
    logical_dtype_ = source.logical_dtype_;
    subtensors_ = &subtensor_storage;
    num_levels_ = 1;
  }
  // A view of the one-level `source` at `offset` whose placement
  // make_placement() returns: a prvalue, built in place in the block
  // (OneLevelFlatView, OneLevelViewWithPlacement).
  template <typename MakePlacement>
  Storage(const Representation& source, int64_t offset,
          MakePlacement make_placement)
      : Representation(PrivateTag{}),
        subtensor_storage{source.subtensors_[0].storage_dtype,
                          source.subtensors_[0].carrier, offset,
                          make_placement()} {
    logical_dtype_ = source.logical_dtype_;
    subtensors_ = &subtensor_storage;
    num_levels_ = 1;
  }
  Subtensor subtensor_storage;
};

struct Representation::DynamicStorage final : Representation {
  explicit DynamicStorage(int n)
      : Representation(PrivateTag{}),
        subtensor_storage(n),
        adjacent_storage(n) {
    subtensors_ = subtensor_storage.data();
    adjacent_ = adjacent_storage.data();
    num_levels_ = n;
  }
  std::vector<Subtensor> subtensor_storage;
  std::vector<Layout> adjacent_storage;
};

// NOTE [ Recycled representation blocks ]
// A view's or a Tensor's work is a few dozen nanoseconds, and operator new
// and delete of its block (glibc: malloc and free through the thread cache)
// were a quarter to a third of it. The blocks of Storage<1> to Storage<4>
// have four fixed sizes, so each size is recycled through a list of the
// releasing thread (util/internal/block_cache.h): a block released is taken
// again by the next representation of its size, and operator new is asked
// only when the thread's list is empty. Each list keeps 16 KiB of blocks (at
// least 4) and is returned to operator delete when its thread exits, so the
// memory held is bounded per thread; a view in a steady loop allocates
// nothing (the benchmarks' `allocs` counts operator new calls). Under
// AddressSanitizer nothing is recycled, so that its quarantine still reports
// a use after release. DynamicStorage (more than 4 levels) holds vectors and
// is not recycled.
template <int N, typename... Args>
std::shared_ptr<Representation> Representation::AllocateStorage(
    Args&&... args) {
  return std::allocate_shared<Storage<N>>(
      util_internal::CachedBlockAllocator<Storage<N>>(),
      std::forward<Args>(args)...);
}

std::shared_ptr<Representation> Representation::Allocate(int num_levels) {
  switch (num_levels) {
    case 1:
      return AllocateStorage<1>();
    case 2:
      return AllocateStorage<2>();
    case 3:
      return AllocateStorage<3>();
    case 4:
      return AllocateStorage<4>();
    default:
      return std::make_shared<DynamicStorage>(num_levels);
  }
}

absl::StatusOr<std::shared_ptr<const Representation>>
Representation::CreateOneLevel(std::shared_ptr<Carrier> carrier, int64_t offset,
                               const Layout& placement) {
  if (carrier == nullptr)
    return TypeError("subtensor 0: carrier is not a Carrier");
  const SimpleDType* dtype = carrier->dtype().AsSimple();
  if (dtype == nullptr) {
    return ValueErrorCat(
        "subtensor 0: carrier dtype ", carrier->dtype().name(), " is a ",
        carrier->dtype().kind_name(),
        " dtype and cannot provide the conventional one-subtensor "
        "storage schema");
  }
  if (!PlacementFits(*carrier, offset, placement)) {
    return CheckPlacementFits(0, *carrier, offset, placement);
  }
  return std::shared_ptr<const Representation>(
      AllocateStorage<1>(dtype, std::move(carrier), offset, placement));
}

std::shared_ptr<Representation> Representation::AllocateDraft(
    const Representation& source) {
  switch (source.num_levels_) {
    case 1:
      return AllocateStorage<1>(source);
    case 2:
      return AllocateStorage<2>(source);
    case 3:
      return AllocateStorage<3>(source);
    case 4:
      return AllocateStorage<4>(source);
    default:
      return nullptr;
  }
}

Representation::ViewDraft::ViewDraft(const Representation& source)
    : rep_(AllocateDraft(source)) {
  if (rep_ != nullptr) return;  // Built from the source in one pass.
  rep_ = Allocate(source.num_levels_);
  rep_->logical_dtype_ = source.logical_dtype_;
  for (int i = 0; i < source.num_levels_; ++i) {
    const Subtensor& from = source.subtensors_[i];
    Subtensor& to = rep_->subtensors_[i];
    to.storage_dtype = from.storage_dtype;
    to.carrier = from.carrier;
    to.offset = from.offset;
    if (i > 0) to.placement = from.placement;
    if (i > 0 && i + 1 < source.num_levels_)
      rep_->adjacent_[i] = source.adjacent_[i];
  }
}

namespace {

// Check()'s steps 2 and 3 on a draft (everything but the rules).
absl::Status CheckLevels(const Representation& rep) {
  for (int i = 0; i < rep.num_levels(); ++i) {
    const Subtensor& s = rep.subtensor(i);
    if (!PlacementFits(*s.carrier, s.offset, s.placement)) {
      return CheckPlacementFits(i, *s.carrier, s.offset, s.placement);
    }
  }
  for (int i = 0; i + 1 < rep.num_levels(); ++i) {
    const Layout& source = rep.subtensor(i).placement;
    const Layout& target = rep.subtensor(i + 1).placement;
    if (!AdjacentFits(rep.adjacent_layouts()[i], source, target)) {
      return CheckAdjacent(i, rep.adjacent_layouts()[i], source, target);
    }
  }
  return absl::OkStatus();
}

}  // namespace

#ifndef NDEBUG
namespace {

// Debug builds (the tests, the sanitizers, the fuzzers): whether every layout
// of a view's draft has the bounds Layout::Create computes for its leaves,
// which the views copy or derive from their source's (NOTE [ Layout bounds ]
// in layout/layout.cc); an InternalError naming the first that does not.
absl::Status CheckDerivedBounds(const Representation& rep) {
  auto bounds_hold = [](const Layout& l) {
    const absl::StatusOr<Layout> fresh = Layout::Create(l.shape(), l.stride());
    return fresh.ok() && fresh->size() == l.size() &&
           fresh->max_index() == l.max_index() &&
           fresh->min_index() == l.min_index();
  };
  for (int i = 0; i < rep.num_levels(); ++i) {
    const bool placement = bounds_hold(rep.subtensor(i).placement);
    if (!placement ||
        (i + 1 < rep.num_levels() && !bounds_hold(rep.adjacent_layouts()[i]))) {
      return absl::InternalError(absl::StrCat(
          "a view derived wrong bounds for level ", i,
          placement ? "'s adjacent layout " : "'s placement ",
          (placement ? rep.adjacent_layouts()[i] : rep.subtensor(i).placement)
              .ToString()));
    }
  }
  return absl::OkStatus();
}

// What a view that skips the level checks claims of its representation
// (`view` names it in the message): the bounds Layout::Create computes, and
// then the level checks pass; an InternalError where either fails.
absl::Status CheckSkippedLevelChecks(const Representation& rep,
                                     absl::string_view view) {
  STRATA_RETURN_IF_ERROR(CheckDerivedBounds(rep));
  if (absl::Status levels = CheckLevels(rep); !levels.ok()) {
    return absl::InternalError(
        absl::StrCat(view, " fails a level check: ", levels.message()));
  }
  return absl::OkStatus();
}

}  // namespace
#endif  // NDEBUG

absl::Status Representation::ViewDraft::Check() const {
#ifndef NDEBUG
  STRATA_RETURN_IF_ERROR(CheckDerivedBounds(*rep_));
#endif
  STRATA_RETURN_IF_ERROR(CheckLevels(*rep_));
  return RunRules(*rep_);
}
// NOTE [ Views that keep their reach ]
// Permute, Squeeze, Unsqueeze, BroadcastTo, BroadcastInDim and Reshape by
// merging modes rearrange, drop, merge or widen modes without moving an
// offset (NOTE [ Layout bounds ] in layout/layout.cc): each new L_0 and S_0
// reaches exactly the indices of the source's, and the deeper levels are the
// source's. Check()'s level checks are functions of what that keeps: a
// placement fits from its offset, the carrier's size (fixed for the
// carrier's life) and the placement's max_index and min_index (an empty one
// from the offset alone, which the source's bounds already held below the
// carrier size); an adjacent layout fits from its shape, which the view
// copied from L_i, its bounds and size(L_(i+1)). The validated source passed
// them, so the view passes them too, and only the dtype's rules, which read
// the new layouts, run. Builds without NDEBUG check the claim in full.
absl::Status Representation::ViewDraft::CheckKeepingReach() const {
#ifndef NDEBUG
  // The precondition itself: every layout of the draft has the bounds
  // Layout::Create computes for its leaves (the view copied them), and then
  // the level checks pass.
  STRATA_RETURN_IF_ERROR(
      CheckSkippedLevelChecks(*rep_, "a view that keeps its reach"));
#endif
  return RunRules(*rep_);
}

absl::Status Representation::ViewDraft::CheckRearrangingModes() const {
#ifndef NDEBUG
  STRATA_RETURN_IF_ERROR(
      CheckSkippedLevelChecks(*rep_, "a view that rearranges modes"));
#endif
  RulesToRun which;
  which.kind = RulesToRun::Kind::kNotKeepingRearrangedModes;
  return RunRules(*rep_, which);
}

// NOTE [ Slices stay inside their source ]
// A nonempty slice of a nonempty source keeps, along one mode, coordinates
// the source had: L_0 with its new offset reaches a subset of the carrier
// indices the validated source reaches (its offset, start * d from the old
// one, is itself one of them, as start < extent), and each deeper level is
// narrowed to a box of its own leaf grid (views/narrow_level.h), whose
// placement reaches a subset of the level's indices and whose adjacent
// layout, given L_i's shape, reaches inside the box. So Check()'s level
// checks, which the source passed, pass: such a slice skips them as views
// that keep their reach do, and builds without NDEBUG make them and report
// an internal error where one fails. An empty source or slice reaches no
// index, so its new offset may be any: it is checked in full.
absl::Status Representation::ViewDraft::CheckSlice(
    const Representation& source, const ModeSlice& slice) const {
  const bool inside =
      slice.count > 0 && source.subtensor(0).placement.size() > 0;
#ifndef NDEBUG
  STRATA_RETURN_IF_ERROR(inside ? CheckSkippedLevelChecks(*rep_, "a slice")
                                : CheckDerivedBounds(*rep_));
#endif
  if (!inside) STRATA_RETURN_IF_ERROR(CheckLevels(*rep_));
  RulesToRun which;
  which.kind = RulesToRun::Kind::kNotKeepingSlice;
  which.source = &source;
  which.slice = slice;
  return RunRules(*rep_, which);
}

// NOTE [ One-level flat views ]
// Most views are of one-level Tensors whose placement is flat (every mode one
// leaf), and give one. For them a draft's generality costs more than the view:
// a copy of the source built and then overwritten, gathers through tables,
// and a check that a view keeping its reach skips anyway. OneLevelFlatView
// builds the one block once, with the view's offset and the placement written
// in place from fixed-size copies (LayoutAssembler::FlatLayout), and runs the
// rules (for a simple dtype, a load and a comparison). What it does not check
// the view established, exactly as a draft's Check() would have found it: the
// modes' bounds (derived from the validated source's, or computed as
// Layout::Create computes them) and the placement's fit in the carrier. Builds
// without NDEBUG (the tests', the sanitizers', the fuzzers') check both, as
// CheckKeepingReach does for drafts.
std::shared_ptr<const Representation> Representation::OneLevelFlatView(
    const Representation& source, int64_t offset, int n, const int64_t* extents,
    const int64_t* strides, const LayoutAssembler::DerivedBounds& bounds,
    absl::Status* error) {
#ifndef NDEBUG
  if (source.num_levels_ != 1 || n < 0 || n > LayoutAssembler::kFlatBuffer) {
    *error = absl::InternalError(absl::StrCat("OneLevelFlatView of ",
                                              source.num_levels_,
                                              " levels and ", n, " modes"));
    return nullptr;
  }
#endif
  std::shared_ptr<Representation> rep = AllocateStorage<1>(source, offset, [&] {
    return LayoutAssembler::FlatLayout(n, extents, strides, bounds.size,
                                       bounds.max_index, bounds.min_index);
  });
#ifndef NDEBUG
  *error = CheckSkippedLevelChecks(*rep, "a one-level flat view");
  if (!error->ok()) return nullptr;
#endif
  *error = RunRules(*rep);
  if (!error->ok()) return nullptr;
  return rep;
}

absl::StatusOr<std::shared_ptr<const Representation>>
Representation::OneLevelViewWithPlacement(const Representation& source,
                                          int64_t offset,
                                          const Layout& placement) {
#ifndef NDEBUG
  if (source.num_levels_ != 1) {
    return absl::InternalError(absl::StrCat("OneLevelViewWithPlacement of ",
                                            source.num_levels_, " levels"));
  }
#endif
  const Carrier& carrier = *source.subtensors_[0].carrier;
  if (!PlacementFits(carrier, offset, placement)) {
    return CheckPlacementFits(0, carrier, offset, placement);
  }
  std::shared_ptr<Representation> rep =
      AllocateStorage<1>(source, offset, [&]() -> Layout { return placement; });
  STRATA_RETURN_IF_ERROR(RunRules(*rep));
  return std::shared_ptr<const Representation>(std::move(rep));
}

absl::StatusOr<std::shared_ptr<const Representation>>
Representation::ViewDraft::Finish() && {
  STRATA_RETURN_IF_ERROR(Check());
  return std::shared_ptr<const Representation>(std::move(rep_));
}

MutationSnapshot Representation::Snapshot() const {
  MutationSnapshot snapshot;
  for (const Subtensor& s : subtensors()) {
    const Carrier* carrier = s.carrier.get();
    bool seen = false;
    for (const CarrierVersion& entry : snapshot)
      seen |= entry.carrier == carrier;
    if (!seen) snapshot.push_back({carrier, carrier->version()});
  }
  return snapshot;
}

}  // namespace strata
