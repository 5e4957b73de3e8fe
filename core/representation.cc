#include "core/representation.h"

#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/errors.h"
#include "core/status_macros.h"
#include "layout/checked_math.h"

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

std::string ClassText(const Carrier& carrier) {
  return absl::StrCat(carrier.class_name(), " (", typeid(carrier).name(), ")");
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

class FrozenContext final : public RepresentationValidationContext {
 public:
  FrozenContext(const DType& logical_dtype,
                absl::Span<const Subtensor> subtensors,
                absl::Span<const Layout> adjacent)
      : logical_dtype_(logical_dtype),
        adjacent_(adjacent.begin(), adjacent.end()) {
    for (const Subtensor& s : subtensors) {
      storage_.push_back(s.storage_dtype);
      placements_.push_back(s.placement);
      shapes_.push_back(s.placement.shape());
    }
  }
  const DType& logical_dtype() const override { return logical_dtype_; }
  absl::Span<const SimpleDType* const> storage_dtypes() const override {
    return storage_;
  }
  absl::Span<const Layout> placement_layouts() const override {
    return placements_;
  }
  absl::Span<const Layout> adjacent_layouts() const override {
    return adjacent_;
  }
  absl::Span<const IntTuple> level_shapes() const override { return shapes_; }

 private:
  const DType& logical_dtype_;
  const std::vector<Layout> adjacent_;
  std::vector<const SimpleDType*> storage_;
  std::vector<Layout> placements_;
  std::vector<IntTuple> shapes_;
};

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
    if (s.carrier->type() != subtensors[0].carrier->type()) {
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
    const Layout& source = *subtensors[i].placement;
    const Layout& target = *subtensors[i + 1].placement;
    if (adjacent->shape() != source.shape()) {
      return ValueErrorCat(
          "adjacent level ", i, ": shape of ", adjacent->ToString(),
          " must equal the source placement shape ", source.shape().ToString());
    }
    if (adjacent->size() == 0) continue;
    if (adjacent->min_index() < 0) {
      return ValueErrorCat("adjacent level ", i, ": ", adjacent->ToString(),
                           " reaches linear index ", adjacent->min_index(),
                           ", outside [0, ", target.size(), ")");
    }
    if (adjacent->max_index() >= target.size()) {
      return ValueErrorCat("adjacent level ", i, ": ", adjacent->ToString(),
                           " reaches linear index ", adjacent->max_index(),
                           ", but level ", i + 1, " has size(L_", i + 1,
                           ") = ", target.size());
    }
  }
  // Universally valid: build the representation the rules will see.
  auto rep = std::make_shared<Representation>(PrivateTag{});
  rep->logical_dtype_ = logical_dtype;
  for (size_t i = 0; i < n; ++i) {
    rep->subtensors_.push_back({schema[i], std::move(subtensors[i].carrier),
                                subtensors[i].offset,
                                *std::move(subtensors[i].placement)});
  }
  for (size_t i = 0; i + 1 < n; ++i) {
    rep->adjacent_layouts_.push_back(*std::move(adjacent_layouts[i]));
  }
  // 4. The dtype's rules, in order, on one frozen context.
  if (const CompoundDType* compound = logical_dtype->AsCompound();
      compound != nullptr && !compound->rules().empty()) {
    const FrozenContext context(*logical_dtype, rep->subtensors_,
                                rep->adjacent_layouts_);
    for (const auto& rule : compound->rules()) {
      STRATA_RETURN_IF_ERROR(rule->Validate(context));
    }
  }
  return std::shared_ptr<const Representation>(std::move(rep));
}

absl::StatusOr<std::shared_ptr<const Representation>>
Representation::CreateOneLevel(std::shared_ptr<Carrier> carrier, int64_t offset,
                               Layout placement) {
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
  STRATA_RETURN_IF_ERROR(CheckPlacementFits(0, *carrier, offset, placement));
  auto rep = std::make_shared<Representation>(PrivateTag{});
  rep->logical_dtype_ = dtype;
  rep->subtensors_.push_back(
      {dtype, std::move(carrier), offset, std::move(placement)});
  return std::shared_ptr<const Representation>(std::move(rep));
}

MutationSnapshot Representation::Snapshot() const {
  MutationSnapshot snapshot;
  for (const Subtensor& s : subtensors_) {
    const Carrier* carrier = s.carrier.get();
    bool seen = false;
    for (const CarrierVersion& entry : snapshot)
      seen |= entry.carrier == carrier;
    if (!seen) snapshot.push_back({carrier, carrier->version()});
  }
  return snapshot;
}

}  // namespace strata
