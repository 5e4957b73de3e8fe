#include "ops/internal/checks.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "layout/algebra.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace ops_internal {

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ","), ")");
}

namespace {

// NOTE [ Offset-table budget ]
// The kernels walk a top-level mode that does not coalesce to one stride
// through a table of its offsets (ops/internal/iterate.h). A table is allowed
// up to the larger of kModeTableBudget and the carrier's size, so it never
// costs more than O(carrier): only an aliasing mode (a hierarchical broadcast,
// say) can have more coordinates than its carrier has values, and such a walk
// is refused rather than allocated. An empty Tensor needs no table (no
// element is iterated: AlignedAccess builds none), whatever its other modes.
constexpr int64_t kModeTableBudget = int64_t{1} << 24;

absl::Status RequireIterable(const Tensor& t, absl::string_view op) {
  if (t.size() == 0) return absl::OkStatus();
  const int64_t budget = std::max(kModeTableBudget, t.carrier()->size());
  for (const Layout& mode : TopLevelModes(t.layout())) {
    if (mode.size() <= budget) continue;
    if (Coalesce(mode).shape().is_leaf()) continue;
    return ValueErrorCat(op, ": a dim of layout mode ", mode.ToString(), " of ",
                         t.layout().ToString(), " has ", mode.size(),
                         " coordinates and does not coalesce to one stride; "
                         "iterating it needs an offset table of more than ",
                         budget, " entries (the larger of ", kModeTableBudget,
                         " and the carrier size)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RequireHostData(const Tensor& t, absl::string_view op,
                             EmptyTensors empty) {
  const bool needs_data = t.size() > 0 || empty == EmptyTensors::kNeedHostData;
  if (needs_data && t.carrier()->data() == nullptr) {
    return ValueErrorCat(op, ": the ", t.carrier()->class_name(),
                         " carrier of ", t.dtype().name(),
                         " holds no host data");
  }
  return absl::OkStatus();
}

// For the kernels that walk every element. They read and write values through
// typed pointers, so the values must be aligned to their width: host memory
// always is; a mapped carrier whose values stand at a file offset that is not
// a multiple of their width (carrier/mapped_carrier.h) is refused here.
absl::Status RequireData(const Tensor& t, absl::string_view op) {
  STRATA_RETURN_IF_ERROR(RequireHostData(t, op));
  const SimpleDType* storage = t.carrier()->dtype().AsSimple();
  const void* data = t.carrier()->data();
  if (t.size() > 0 && storage != nullptr && storage->bits() > 8 &&
      storage->bits() % 8 == 0 &&
      reinterpret_cast<uintptr_t>(data) % (storage->bits() / 8) != 0) {
    return ValueErrorCat(op, ": the values of the ", t.carrier()->Describe(),
                         " are not aligned to their ", storage->bits() / 8,
                         " bytes (the file places value 0 at an offset that is "
                         "not a multiple of that); the kernels read aligned "
                         "values only, GetItem reads any");
  }
  return RequireIterable(t, op);
}

namespace {

// NOTE [ Proving a write injective ]
// A write through a layout that reaches one carrier value from two coordinates
// is ambiguous, so every write first proves that it does not, without
// allocating O(size):
//
// clang-format off
//  1. pigeonhole: more coordinates than carrier indices in the reached range
//     [min_index, max_index] cannot be injective (O(rank));
//  2. a stride-0 mode of extent > 1 is not injective (O(rank));
//  3. sorted by |stride| after coalescing, each stride beyond the span of the
//     smaller ones is injective (O(rank log rank));
//  4. otherwise the reached indices are marked in a bitmap over that range,
//     when the range is at most kInjectivityBudget indices (the write itself
//     then touches as many); beyond it the write is refused as unprovable.
// clang-format on
constexpr int64_t kInjectivityBudget = int64_t{1} << 28;

enum class Injectivity { kInjective, kNotInjective, kUnproven };

Injectivity ProveInjective(const Layout& layout) {
  if (layout.size() <= 1) return Injectivity::kInjective;
  // The range is at most the carrier size (the placement fits it).
  int64_t range;
  if (!CheckedSub(layout.max_index(), layout.min_index(), &range) ||
      !CheckedAdd(range, 1, &range)) {
    range = std::numeric_limits<int64_t>::max();
  }
  if (layout.size() > range) return Injectivity::kNotInjective;
  const Layout c = Coalesce(layout);
  std::vector<std::pair<int64_t, int64_t>> modes;  // (|stride|, extent)
  const auto extents = c.shape().leaves();
  const auto strides = c.stride().leaves();
  for (size_t k = 0; k < extents.size(); ++k) {
    if (extents[k] == 1) continue;
    if (strides[k] == 0) return Injectivity::kNotInjective;
    modes.emplace_back(strides[k] < 0 ? -strides[k] : strides[k], extents[k]);
  }
  std::sort(modes.begin(), modes.end());
  int64_t span = 0;
  bool separated = true;
  for (const auto& [stride, extent] : modes) {
    if (stride <= span) separated = false;
    span += (extent - 1) * stride;  // Bounded by the layout's index range.
  }
  if (separated) return Injectivity::kInjective;
  if (range > kInjectivityBudget) return Injectivity::kUnproven;
  std::vector<uint64_t> seen((range + 63) / 64, 0);
  const int64_t low = layout.min_index();
  for (int64_t i = 0; i < layout.size(); ++i) {
    const int64_t bit = layout(i) - low;
    uint64_t& word = seen[bit / 64];
    const uint64_t mask = uint64_t{1} << (bit % 64);
    if (word & mask) return Injectivity::kNotInjective;
    word |= mask;
  }
  return Injectivity::kInjective;
}

}  // namespace

absl::Status RequireMutableCarrier(const Tensor& t, absl::string_view op) {
  if (!t.carrier()->read_only()) return absl::OkStatus();
  return ValueErrorCat(op, ": cannot write through the read-only ",
                       t.carrier()->Describe());
}

absl::Status RequireWritable(const Tensor& t, absl::string_view op) {
  STRATA_RETURN_IF_ERROR(RequireMutableCarrier(t, op));
  STRATA_RETURN_IF_ERROR(RequireData(t, op));
  switch (ProveInjective(t.layout())) {
    case Injectivity::kInjective:
      return absl::OkStatus();
    case Injectivity::kNotInjective:
      return ValueErrorCat(
          op, ": the destination layout ", t.layout().ToString(),
          " maps several coordinates to one carrier value (e.g. a "
          "broadcast view); writing to it is ambiguous");
    case Injectivity::kUnproven:
      break;
  }
  return ValueErrorCat(op, ": cannot prove that the destination layout ",
                       t.layout().ToString(),
                       " writes each carrier value once (its strides "
                       "interleave and its index range exceeds ",
                       kInjectivityBudget, " values)");
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(
    absl::string_view op, const std::vector<int64_t>& a,
    const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t p = 0; p < rank; ++p) {
    const int64_t x = p + a.size() >= rank ? a[p + a.size() - rank] : 1;
    const int64_t y = p + b.size() >= rank ? b[p + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) {
      return ValueErrorCat(op, ": shapes ", ShapeText(a), " and ", ShapeText(b),
                           " do not broadcast (dim ", p, ": ", x, " vs ", y,
                           ")");
    }
    out[p] = x == 1 ? y : x;
  }
  return out;
}

absl::Status RequireBroadcastsTo(absl::string_view op,
                                 const std::vector<int64_t>& from,
                                 const std::vector<int64_t>& to) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> joint,
                          BroadcastShapes(op, from, to));
  if (joint != to) {
    return ValueErrorCat(op, ": shape ", ShapeText(from),
                         " does not broadcast to ", ShapeText(to));
  }
  return absl::OkStatus();
}

// Whether the two Tensors share a carrier and their reached index ranges
// intersect.
namespace {

// NOTE [ Aliasing by address ]: two carriers may share memory (a DLPack
// import of an exported Tensor, two ExternalCarriers over one buffer), so
// overlap is decided on the memory a Tensor reaches, as PyTorch's overlap
// checks compare storage addresses: the bits [lo, hi] from the first to the
// last reached value. 128-bit arithmetic: index * bits can exceed 64 bits.
struct BitSpan {
  unsigned __int128 lo = 0, hi = 0;  // Inclusive.
  unsigned __int128 start = 0;       // Bit address of linear index 0.
  int bits = 0;
};

bool ReachedBits(const Tensor& t, BitSpan* span) {
  const void* data = t.carrier()->data();
  const SimpleDType* storage = t.carrier()->dtype().AsSimple();
  if (data == nullptr || storage == nullptr || t.size() == 0) return false;
  const unsigned __int128 base =
      static_cast<unsigned __int128>(reinterpret_cast<uintptr_t>(data)) * 8;
  span->bits = storage->bits();
  span->start = base + static_cast<unsigned __int128>(t.offset()) * span->bits;
  span->lo = base + static_cast<unsigned __int128>(t.offset() +
                                                   t.layout().min_index()) *
                        span->bits;
  span->hi =
      base +
      static_cast<unsigned __int128>(t.offset() + t.layout().max_index() + 1) *
          span->bits -
      1;
  return true;
}

}  // namespace

bool MayOverlap(const Tensor& a, const Tensor& b) {
  BitSpan x, y;
  if (!ReachedBits(a, &x) || !ReachedBits(b, &y)) return false;
  return x.lo <= y.hi && y.lo <= x.hi;
}

bool SameView(const Tensor& a, const Tensor& b) {
  BitSpan x, y;
  if (!ReachedBits(a, &x) || !ReachedBits(b, &y)) {
    return a.carrier() == b.carrier() && a.offset() == b.offset() &&
           a.layout() == b.layout();
  }
  return x.start == y.start && x.bits == y.bits && a.layout() == b.layout();
}

}  // namespace ops_internal
}  // namespace strata
