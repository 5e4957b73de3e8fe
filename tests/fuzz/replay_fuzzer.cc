// libFuzzer target: text replay, validation and every view with fuzzed
// arguments.
//
// Differential check: whatever Replay accepts must satisfy every spec bound
// when re-checked by a slow, independent checker that enumerates coordinates
// (small sizes only), and what the checker accepts Replay must accept unless a
// dtype rule refused it. A replayed (or viewed) representation must dump,
// replay and dump to the same bytes.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/layout.h"
#include "proto/codec.h"
#include "tests/fuzz/fuzz_check.h"
#include "util/errors.h"
#include "views/views.h"

namespace {

using namespace strata;

constexpr int64_t kSmall = 1 << 12;

enum class Verdict { kValid, kInvalid, kTooLarge };

// Independent of Representation::Create: names, counts, identities, then every
// coordinate of every level enumerated.
Verdict SlowCheck(const proto::RepresentationProto& p) {
  auto logical = DTypeRegistry::Global().Lookup(p.logical_dtype());
  if (!logical.ok() || !(*logical)->has_storage_schema())
    return Verdict::kInvalid;
  const auto schema = (*logical)->storage_schema();
  if (static_cast<size_t>(p.subtensors_size()) != schema.size() ||
      static_cast<size_t>(p.adjacent_layouts_size()) + 1 != schema.size()) {
    return Verdict::kInvalid;
  }
  std::map<std::string, const proto::CarrierProto*> carriers;
  for (const auto& c : p.carriers()) {
    if (!carriers.emplace(c.id(), &c).second) return Verdict::kInvalid;
    auto d = DTypeRegistry::Global().Lookup(c.dtype());
    if (!d.ok()) return Verdict::kInvalid;
    if (c.carrier_class() == "mapped" && !c.file().empty()) {
      return Verdict::kTooLarge;  // A file of this machine: not judged here.
    }
    const bool mapped = c.carrier_class() == "mapped";
    if (c.carrier_class() != "host" && c.carrier_class() != "external" &&
        c.carrier_class() != "recorded" && !mapped) {
      continue;  // Not a Carrier: caught when a subtensor names it.
    }
    if (!mapped && (!c.file().empty() || c.file_offset() != 0)) {
      return Verdict::kInvalid;
    }
    const bool recorded = c.carrier_class() == "recorded" ||
                          (*d)->AsSimple() == nullptr || c.size() < 0;
    if (recorded && !c.data().empty()) return Verdict::kInvalid;
    if (!recorded && !c.data().empty()) {
      auto bytes = StorageBytes(*(*d)->AsSimple(), c.size());
      if (!bytes.ok() || *bytes != static_cast<int64_t>(c.data().size())) {
        return Verdict::kInvalid;
      }
    }
    // An anonymous mapping (a mapped carrier with no file) carries its bytes.
    if (mapped && !recorded) {
      auto bytes = StorageBytes(*(*d)->AsSimple(), c.size());
      if (c.file_offset() != 0 || !bytes.ok() ||
          (*bytes > 0 && c.data().empty())) {
        return Verdict::kInvalid;
      }
    }
  }
  std::vector<Layout> placements;
  std::string first_class;
  for (size_t i = 0; i < schema.size(); ++i) {
    const auto& s = p.subtensors(i);
    auto storage = DTypeRegistry::Global().Lookup(s.storage_dtype());
    if (!storage.ok() || *storage != schema[i]) return Verdict::kInvalid;
    auto it = carriers.find(s.carrier());
    if (it == carriers.end()) return Verdict::kInvalid;
    const auto& c = *it->second;
    if (c.carrier_class() != "host" && c.carrier_class() != "external" &&
        c.carrier_class() != "recorded" && c.carrier_class() != "mapped") {
      return Verdict::kInvalid;
    }
    auto cd = DTypeRegistry::Global().Lookup(c.dtype());
    const bool recorded = c.carrier_class() == "recorded" ||
                          (*cd)->AsSimple() == nullptr || c.size() < 0;
    const std::string cls = recorded ? "recorded" : c.carrier_class();
    if (i == 0) first_class = cls;
    if (cls != first_class) return Verdict::kInvalid;
    if (*cd != schema[i]) return Verdict::kInvalid;
    auto layout = ParseLayout(s.placement());
    if (!layout.ok()) return Verdict::kInvalid;
    if (s.offset() < 0 || c.size() < 0) return Verdict::kInvalid;
    if (layout->size() > kSmall) return Verdict::kTooLarge;
    for (int64_t k = 0; k < layout->size(); ++k) {
      const int64_t index = s.offset() + (*layout)(k);
      if (index < 0 || index >= c.size()) return Verdict::kInvalid;
    }
    placements.push_back(*layout);
  }
  for (int i = 0; i < p.adjacent_layouts_size(); ++i) {
    auto adjacent = ParseLayout(p.adjacent_layouts(i));
    if (!adjacent.ok()) return Verdict::kInvalid;
    if (adjacent->shape() != placements[i].shape()) return Verdict::kInvalid;
    for (int64_t k = 0; k < adjacent->size(); ++k) {
      const int64_t x = (*adjacent)(k);
      if (x < 0 || x >= placements[i + 1].size()) return Verdict::kInvalid;
    }
  }
  return Verdict::kValid;
}

void CheckStableDump(const Tensor& t) {
  const std::string text = ToText(ToProto(t));
  auto parsed = ParseText(text);
  FUZZ_CHECK(parsed.ok());
  auto again = Replay(*parsed);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(ToText(ToProto(*again)) == text);
}

uint64_t Mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 29);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseText(input);
  if (!parsed.ok()) return 0;
  auto replayed = Replay(*parsed);
  const Verdict verdict = SlowCheck(*parsed);
  if (replayed.ok()) {
    FUZZ_CHECK(verdict != Verdict::kInvalid);
  } else if (verdict == Verdict::kValid) {
    // Only a dtype rule may refuse what the universal bounds admit, or the
    // machine: a carrier too large to allocate (representation-cli.md).
    const ErrorKind kind = GetErrorKind(replayed.status());
    FUZZ_CHECK_STATUS(kind == ErrorKind::kResourceExhausted ||
                          (kind == ErrorKind::kValueError &&
                           replayed.status().message().find("block") !=
                               absl::string_view::npos),
                      replayed.status());
  }
  if (!replayed.ok()) return 0;
  CheckStableDump(*replayed);
  // Every view with arguments drawn from the input.
  uint64_t h = Mix(size);
  for (size_t i = 0; i < size; ++i) h = Mix(h ^ data[i]);
  auto next = [&](int64_t n) -> int64_t {
    h = Mix(h + 1);
    return n <= 0 ? 0 : static_cast<int64_t>(h % static_cast<uint64_t>(n + 1));
  };
  const std::vector<int64_t> shape = replayed->shape();
  const int64_t rank = shape.size();
  std::vector<absl::StatusOr<Tensor>> views;
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = i;
  for (int64_t i = rank - 1; i > 0; --i) std::swap(perm[i], perm[next(i)]);
  views.push_back(Permute(*replayed, perm));
  if (rank > 0) {
    const int64_t dim = next(rank - 1);
    const int64_t start = next(shape[dim]);
    views.push_back(Slice(*replayed, dim, start,
                          start + next(shape[dim] - start), 1 + next(3)));
  }
  views.push_back(Unsqueeze(*replayed, next(rank)));
  views.push_back(Squeeze(*replayed));
  views.push_back(Reshape(*replayed, {replayed->size()}));
  std::vector<int64_t> wide = shape;
  wide.insert(wide.begin(), 1 + next(3));
  views.push_back(BroadcastTo(*replayed, wide));
  views.push_back(AsStrided(*replayed, replayed->layout(), replayed->offset()));
  for (const auto& v : views) {
    if (v.ok()) {
      FUZZ_CHECK(v->num_subtensors() == replayed->num_subtensors());
      CheckStableDump(*v);
    } else {
      // A Strata error, no crash.
      FUZZ_CHECK_STATUS(GetErrorKind(v.status()) != ErrorKind::kNone,
                        v.status());
    }
  }
  return 0;
}
