// libFuzzer target: long chains of public API calls (issue 16).
//
// The bytes choose dtypes (built-in simple ones, compound ones made by
// QuantizeBlockScaled, user SimpleDTypes of every admitted width), carriers
// (host, external over a buffer this target owns with a counted deleter,
// recorded), layouts (hierarchical, stride 0, negative strides, extreme
// integers, parsed from text or built), then up to kMaxSteps calls: every view,
// every op, autograd, DLPack round trips, quantization and the text codec.
//
// Invariants (a violation traps, so libFuzzer reports it):
// clang-format off
//  - no crash, no sanitizer report, every error carries a Strata error kind;
//  - a failed call changes no carrier version and keeps no carrier alive
//    (use_count before/after; every ExternalCarrier deleter ran exactly once
//    when the input ends; a failed import never calls the producer's deleter);
//  - a successful mutation bumps the written carrier's version exactly once;
//  - Tensor::Create admits exactly what the universal bounds admit (computed
//    here from the leaves);
//  - an admitted view satisfies NOTE [ The view invariant ]: for every new
//    coordinate the carrier index reached at every level equals the one its
//    preimage reaches in the source (a slow reference evaluating L_i + offset_i
//    and S_i here), and every level stays inside its carrier;
//  - op results agree with a slow reference (int64 / double, the promotion
//    table of ops/ops.h) where the reference is unambiguous;
//  - DLPack exports address every element where the Tensor does, and
//    import(export(t)) reads as t; dump -> text -> replay -> dump is stable.
// clang-format on
// Sizes are bounded (kSmall elements whenever data is touched); huge layouts
// only reach calls that must refuse them (or answer) in O(rank).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/dtype.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/autograd.h"
#include "ops/dequantize.h"
#include "ops/dlpack.h"
#include "ops/ops.h"
#include "ops/quantize.h"
#include "ops/relayout.h"
#include "ops/requantize.h"
#include "proto/codec.h"
#include "tests/fuzz/fuzz_check.h"
#include "util/errors.h"
#include "views/views.h"

namespace {

using namespace strata;
namespace ag = strata::autograd;

// The slow references (the view invariant's walk, the ops' evaluation) are
// this target's own code, not what it explores: libFuzzer's comparison
// tracing there cost a tenth of its time and guides nothing.
#if defined(__clang__)
#define REFERENCE __attribute__((no_sanitize("coverage")))
#else
#define REFERENCE
#endif

constexpr int64_t kSmall = 4096;  // Elements, whenever data is touched.
constexpr int kMaxSteps = 32;
constexpr size_t kMaxPool = 8;
constexpr int64_t kMaxHostBytes = int64_t{1} << 23;
constexpr int64_t kMaxExternalBytes = int64_t{1} << 20;

// ------------------------------------------------------------------- the bytes

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return size_ == 0; }
  uint8_t Byte() {
    if (size_ == 0) return 0;
    --size_;
    return *data_++;
  }
  uint64_t Bytes(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t{Byte()} << (8 * i);
    return v;
  }
  bool Bool() { return Byte() & 1; }
  // Uniform-ish in [lo, hi].
  int64_t Range(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    const int n = span < 256            ? 1
                  : span < 65536        ? 2
                  : span < (1ull << 32) ? 4
                                        : 8;
    uint64_t v = Bytes(n);
    if (span != std::numeric_limits<uint64_t>::max()) v %= span + 1;
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + v);
  }
  int64_t Extreme() {
    static const int64_t kTable[] = {
        0,
        1,
        -1,
        2,
        -2,
        3,
        7,
        8,
        16,
        31,
        32,
        33,
        64,
        1 << 20,
        int64_t{1} << 21,
        (int64_t{1} << 31) - 1,
        int64_t{1} << 31,
        int64_t{1} << 32,
        int64_t{1} << 40,
        int64_t{1} << 62,
        3037000499,
        3037000500,
        1000000000000000000,
        -1000000000000000000,
        std::numeric_limits<int64_t>::max(),
        std::numeric_limits<int64_t>::max() - 1,
        std::numeric_limits<int64_t>::min(),
        std::numeric_limits<int64_t>::min() + 1,
    };
    const int64_t n = sizeof(kTable) / sizeof(kTable[0]);
    const int64_t k = Range(0, n);
    return k == n ? static_cast<int64_t>(Bytes(8)) : kTable[k];
  }
  // Mostly in [lo, hi], sometimes extreme.
  int64_t Arg(int64_t lo, int64_t hi) {
    return (Byte() & 15) == 0 ? Extreme() : Range(lo, hi);
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

// ---------------------------------------------------------------------- dtypes

const SimpleDType* Builtin(int k) {
  switch (k) {
    case 0:
      return dtypes::Bool();
    case 1:
      return dtypes::Int8();
    case 2:
      return dtypes::Int16();
    case 3:
      return dtypes::Int32();
    case 4:
      return dtypes::Int64();
    case 5:
      return dtypes::UInt8();
    case 6:
      return dtypes::Float16();
    case 7:
      return dtypes::BFloat16();
    case 8:
      return dtypes::Float32();
    case 9:
      return dtypes::Float64();
    case 10:
      return dtypes::Float8E4M3FN();
    case 11:
      return dtypes::Float8E5M2();
    case 12:
      return dtypes::Float8E8M0FNU();
    default:
      return dtypes::Float4E2M1FN();
  }
}

// Values the slow reference reads and writes itself.
enum class Ref { kNone, kBool, kI8, kI16, kI32, kI64, kU8, kF32, kF64 };
Ref RefOf(const DType* d) {
  if (d == dtypes::Bool()) return Ref::kBool;
  if (d == dtypes::Int8()) return Ref::kI8;
  if (d == dtypes::Int16()) return Ref::kI16;
  if (d == dtypes::Int32()) return Ref::kI32;
  if (d == dtypes::Int64()) return Ref::kI64;
  if (d == dtypes::UInt8()) return Ref::kU8;
  if (d == dtypes::Float32()) return Ref::kF32;
  if (d == dtypes::Float64()) return Ref::kF64;
  return Ref::kNone;
}
int RefBytes(Ref r) {
  switch (r) {
    case Ref::kI16:
      return 2;
    case Ref::kI32:
    case Ref::kF32:
      return 4;
    case Ref::kI64:
    case Ref::kF64:
      return 8;
    default:
      return 1;
  }
}
bool RefFloat(Ref r) { return r == Ref::kF32 || r == Ref::kF64; }

// The arithmetic built-ins of the promotion table.
bool Arithmetic(const SimpleDType* d) {
  for (int k = 0; k < 10; ++k)
    if (d == Builtin(k)) return true;
  return false;
}
bool BuiltinSimple(const DType* d) {
  for (int k = 0; k < 14; ++k)
    if (d == Builtin(k)) return true;
  return false;
}

// PromoteTypes as ops/ops.h documents it, for arithmetic built-ins (nullptr
// where the table is silent or ambiguous).
const SimpleDType* RefPromote(const SimpleDType* a, const SimpleDType* b,
                              BinaryOp op) {
  if (!Arithmetic(a) || !Arithmetic(b)) return nullptr;
  const SimpleDType* r;
  auto width = [](const SimpleDType* d) { return d->bits(); };
  if (a == b) {
    r = a;
  } else if (a->is_bool()) {
    r = b;
  } else if (b->is_bool()) {
    r = a;
  } else if (a->is_integer() && b->is_integer()) {
    if (a == dtypes::UInt8() || b == dtypes::UInt8()) {
      const SimpleDType* other = a == dtypes::UInt8() ? b : a;
      r = other == dtypes::Int8() ? dtypes::Int16() : other;
    } else {
      r = width(a) >= width(b) ? a : b;
    }
  } else if (a->is_integer()) {
    r = b;
  } else if (b->is_integer()) {
    r = a;
  } else if ((a == dtypes::Float16() && b == dtypes::BFloat16()) ||
             (a == dtypes::BFloat16() && b == dtypes::Float16())) {
    r = dtypes::Float32();
  } else {
    r = width(a) >= width(b) ? a : b;
  }
  if (op == BinaryOp::kSub && (a->is_bool() || b->is_bool())) return nullptr;
  if (op == BinaryOp::kDiv && !a->is_floating() && !b->is_floating())
    r = dtypes::Float32();
  return r;
}

// The dtype a binary op computes in, as ops/ops.h documents it: a rank-0
// operand beside one of rank >= 1 counts by its category only (bool <
// integer < floating), as in PyTorch's result_type.
const SimpleDType* RefResultType(const Tensor& a, const Tensor& b,
                                 BinaryOp op) {
  const SimpleDType* sa = a.dtype().AsSimple();
  const SimpleDType* sb = b.dtype().AsSimple();
  const SimpleDType* promoted = RefPromote(sa, sb, op);
  const bool a_rank0 = a.shape().empty();
  if (promoted == nullptr || a_rank0 == b.shape().empty()) return promoted;
  const SimpleDType* dimensioned = a_rank0 ? sb : sa;
  const SimpleDType* rank0 = a_rank0 ? sa : sb;
  auto category = [](const SimpleDType* d) {
    return d->is_bool() ? 0 : d->is_floating() ? 2 : 1;
  };
  const SimpleDType* r = category(rank0) > category(dimensioned)
                             ? RefPromote(dimensioned, rank0, BinaryOp::kAdd)
                             : dimensioned;
  if (op == BinaryOp::kDiv && !r->is_floating()) r = dtypes::Float32();
  return r;
}

// The widths SimpleDType::Create admits: 1, 2, 4, or a multiple of 8 up to 64.
bool Admitted(int bits) {
  return bits == 1 || bits == 2 || bits == 4 ||
         (bits >= 8 && bits <= 64 && bits % 8 == 0);
}

// User-created simple dtypes, interned per spec so the process does not keep
// growing (descriptors live for the process).
const SimpleDType* UserDType(Reader& r) {
  SimpleDType::Spec spec;
  spec.bits = static_cast<int>(r.Range(0, 66));
  if (r.Byte() & 1) {  // Mostly admitted widths.
    static const int kWidths[] = {1, 2, 4, 8, 16, 24, 32, 40, 48, 64, 12, 7};
    spec.bits = kWidths[r.Range(0, 11)];
  }
  spec.numeric_class = static_cast<NumericClass>(r.Range(0, 2));
  spec.is_signed = r.Bool();
  if (spec.numeric_class == NumericClass::kFloating) {
    spec.exponent_bits = static_cast<int>(r.Range(0, 20));
    spec.mantissa_bits = static_cast<int>(r.Range(0, 60));
    if (r.Bool()) {  // A fitting split.
      const int avail = std::max(1, spec.bits - (spec.is_signed ? 1 : 0));
      spec.exponent_bits = static_cast<int>(r.Range(1, avail));
      spec.mantissa_bits = avail - spec.exponent_bits;
    }
  }
  const auto key =
      std::make_tuple(spec.bits, static_cast<int>(spec.numeric_class),
                      spec.is_signed, spec.exponent_bits, spec.mantissa_bits);
  static auto* cache =
      new std::map<std::tuple<int, int, bool, int, int>, const SimpleDType*>;
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  spec.name = "user" + std::to_string(cache->size());
  auto created = SimpleDType::Create(spec);
  const SimpleDType* d = nullptr;
  if (created.ok()) {
    d = *created;
    FUZZ_CHECK(d->bits() == spec.bits);
    FUZZ_CHECK(Admitted(spec.bits));
  } else {
    FUZZ_CHECK(IsValueError(created.status()));
    // Admitted widths with no exponent/mantissa to fit must be accepted.
    if (spec.numeric_class != NumericClass::kFloating && Admitted(spec.bits)) {
      FUZZ_CHECK(false && "SimpleDType::Create refused an admitted width");
    }
  }
  (*cache)[key] = d;
  return d;
}

// ----------------------------------------------------------- external carriers

int64_t g_external_live = 0;  // Buffers whose deleter has not run yet.

struct ExternalBuffer {
  std::unique_ptr<uint8_t[]> bytes;
  bool deleted = false;
};

std::shared_ptr<Carrier> MakeExternal(const SimpleDType* d, int64_t size,
                                      int64_t bytes) {
  auto* buffer = new ExternalBuffer;
  buffer->bytes.reset(new uint8_t[std::max<int64_t>(bytes, 1)]);
  std::memset(buffer->bytes.get(), 0, std::max<int64_t>(bytes, 1));
  const int64_t live_before = g_external_live;
  ++g_external_live;
  auto c = ExternalCarrier::Create(*d, size, buffer->bytes.get(), [buffer] {
    FUZZ_CHECK(!buffer->deleted);  // Exactly once.
    buffer->deleted = true;
    --g_external_live;
    delete buffer;
  });
  if (!c.ok()) {
    FUZZ_CHECK(g_external_live == live_before + 1);  // The deleter did not run.
    --g_external_live;
    delete buffer;
    return nullptr;
  }
  return *c;
}

// --------------------------------------------------------------------- layouts

// Top-level extents of a layout (an integer layout is one mode).
std::vector<int64_t> Extents(const Layout& l) {
  std::vector<int64_t> e;
  const IntTuple& s = l.shape();
  if (s.is_leaf()) return {s.value()};
  for (int i = 0; i < s.rank(); ++i) {
    __int128 p = 1;
    const IntTuple mode = s[i];
    for (int64_t x : mode.leaves()) p *= x;
    e.push_back(static_cast<int64_t>(p));
  }
  return e;
}

__int128 Product(const std::vector<int64_t>& e) {
  __int128 p = 1;
  for (int64_t x : e) {
    p *= x;
    if (p > (__int128{1} << 80)) p = __int128{1} << 80;
  }
  return p;
}

// L(linear) from the leaves, colexicographically (first leaf fastest).
REFERENCE __int128 Eval(const Layout& l, int64_t linear) {
  auto s = l.shape().leaves();
  auto d = l.stride().leaves();
  __int128 r = 0;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] <= 0) return 0;
    r += static_cast<__int128>(linear % s[k]) * d[k];
    linear /= s[k];
  }
  return r;
}

// Bounds of the layout from its leaves.
struct Bounds {
  __int128 size = 1, min = 0, max = 0;
};
REFERENCE Bounds LeafBounds(const Layout& l) {
  Bounds b;
  auto s = l.shape().leaves();
  auto d = l.stride().leaves();
  for (size_t k = 0; k < s.size(); ++k) {
    b.size *= s[k];
    if (b.size > (__int128{1} << 80)) b.size = __int128{1} << 80;
    const __int128 span = static_cast<__int128>(s[k] - 1) * d[k];
    if (span > 0)
      b.max += span;
    else
      b.min += span;
  }
  if (b.size == 0) b.min = b.max = 0;
  return b;
}

// A coordinate a view's sigma returns: on the stack up to rank 8, since the
// invariant is checked at every coordinate of a view (an allocation per
// coordinate made this target run at a third of its rate under ASAN).
using Coord = absl::InlinedVector<int64_t, 8>;

// Row-major linear index of a coordinate, and back.
REFERENCE int64_t RowMajor(const std::vector<int64_t>& e,
                           const std::vector<int64_t>& c) {
  int64_t r = 0;
  for (size_t k = 0; k < e.size(); ++k) r = r * e[k] + c[k];
  return r;
}
REFERENCE std::vector<int64_t> FromRowMajor(const std::vector<int64_t>& e,
                                            int64_t r) {
  std::vector<int64_t> c(e.size());
  for (size_t k = e.size(); k-- > 0;) {
    c[k] = r % e[k];
    r /= e[k];
  }
  return c;
}
// Colexicographic linear index over the top-level modes (what L_0 decodes).
template <typename C>
REFERENCE int64_t Colex(const std::vector<int64_t>& e, const C& c) {
  int64_t r = 0;
  for (size_t k = e.size(); k-- > 0;) r = r * e[k] + c[k];
  return r;
}

// f(c) for every coordinate c of extents e, in row-major order (one vector,
// advanced in place).
template <typename F>
REFERENCE void ForEachCoord(const std::vector<int64_t>& e, F f) {
  if (Product(e) == 0) return;
  std::vector<int64_t> c(e.size(), 0);
  while (true) {
    f(static_cast<const std::vector<int64_t>&>(c));
    size_t k = e.size();
    while (k > 0 && ++c[k - 1] == e[k - 1]) c[--k] = 0;
    if (k == 0) return;
  }
}

const char* const kLayoutTexts[] = {
    "(1048576,1048576):(1,1)",
    "(1048576,1048576):(0,1)",
    "(65536,65536,65536):(1,1,1)",
    "(2,2):(9223372036854775807,1)",
    "3:-9223372036854775808",
    "2:-9223372036854775808",
    "((2,2),4):((1,4),2)",
    "(4,(32,2)):(64,(1,32))",
    "(4,64):(64,1)",
    "(2,32):(32,1)",
    "(8,32):(-32,1)",
    "((4,2),(2,4)):((1,-8),(0,2))",
    "()",
    "():()",
    "(3,0,5):(7,9,11)",
    "0:5",
    "(1000000000000000000,10):(0,1)",
    "(3037000500,3037000500):(1,3037000500)",
    "(2,(3,(4,5))):(60,(20,(5,1)))",
    "(4,8):(-1,-4)",
    "((2,2),(2,2)):((8,4),(2,1))",
    "(64):(1)",
    "(2,3,4):(1,2,6)",
};

IntTuple SmallMode(Reader& r, int64_t* extent_out, bool nested,
                   IntTuple* stride, int64_t max_extent, int64_t max_stride) {
  if (!nested) {
    const int64_t e = r.Range(0, max_extent);
    *extent_out = e;
    *stride = IntTuple(r.Range(-max_stride, max_stride));
    return IntTuple(e);
  }
  const int64_t a = r.Range(1, 4), b = r.Range(1, 4);
  *extent_out = a * b;
  *stride = IntTuple::Tuple({IntTuple(r.Range(-max_stride, max_stride)),
                             IntTuple(r.Range(-max_stride, max_stride))});
  return IntTuple::Tuple({IntTuple(a), IntTuple(b)});
}

absl::StatusOr<Layout> MakeLayout(Reader& r) {
  switch (r.Range(0, 7)) {
    case 0:
    case 1: {  // Compact row-major (maybe with stride 0 or negated strides).
      const int rank = static_cast<int>(r.Range(0, 4));
      std::vector<int64_t> shape(rank);
      for (auto& e : shape) e = r.Range(r.Bool() ? 1 : 0, 6);
      auto l = Layout::RowMajor(IntTuple::Flat(shape));
      if (!l.ok()) return l;
      const int tweak = static_cast<int>(r.Range(0, 2));
      if (tweak == 0 || rank == 0) return l;
      std::vector<int64_t> s(l->stride().leaves().begin(),
                             l->stride().leaves().end());
      for (auto& x : s) {
        if (r.Bool()) x = tweak == 1 ? 0 : -x;
      }
      return Layout::Create(IntTuple::Flat(shape), IntTuple::Flat(s));
    }
    case 2:
    case 3: {  // Hierarchical, small strides of any sign.
      const int rank = static_cast<int>(r.Range(0, 4));
      std::vector<IntTuple> shape, stride;
      for (int i = 0; i < rank; ++i) {
        int64_t e;
        IntTuple d;
        shape.push_back(SmallMode(r, &e, r.Range(0, 3) == 0, &d, 6, 12));
        stride.push_back(d);
      }
      if (rank == 1 && r.Bool()) return Layout::Create(shape[0], stride[0]);
      return Layout::Create(IntTuple::Tuple(shape), IntTuple::Tuple(stride));
    }
    case 4: {  // Extreme integers.
      const int rank = static_cast<int>(r.Range(1, 3));
      std::vector<int64_t> shape(rank), stride(rank);
      for (int i = 0; i < rank; ++i) {
        shape[i] = r.Bool() ? r.Extreme() : r.Range(0, 5);
        stride[i] = r.Bool() ? r.Extreme() : r.Range(-3, 3);
      }
      return Layout::Create(IntTuple::Flat(shape), IntTuple::Flat(stride));
    }
    case 5: {  // Text from the table.
      const int n = sizeof(kLayoutTexts) / sizeof(kLayoutTexts[0]);
      return ParseLayout(kLayoutTexts[r.Range(0, n - 1)]);
    }
    case 6: {  // Text from the bytes.
      const int n = static_cast<int>(r.Range(0, 40));
      std::string text;
      for (int i = 0; i < n; ++i) {
        static const char kChars[] = "0123456789(),:-  9";
        const uint8_t b = r.Byte();
        text += (b & 0x80) ? static_cast<char>(b) : kChars[b % 18];
      }
      return ParseLayout(text);
    }
    default: {  // Column-major of a hierarchical shape.
      int64_t e;
      IntTuple d;
      IntTuple m = SmallMode(r, &e, true, &d, 4, 1);
      return Layout::ColumnMajor(IntTuple::Tuple({IntTuple(r.Range(1, 4)), m}));
    }
  }
}

// ------------------------------------------------------------ reference values

struct Val {
  bool fl = false;
  double d = 0;
  int64_t i = 0;
};
Val IntVal(int64_t i) { return Val{false, static_cast<double>(i), i}; }
Val FloatVal(double d) { return Val{true, d, 0}; }

bool Same(const Val& a, const Val& b) {
  if (a.fl != b.fl) return false;
  if (!a.fl) return a.i == b.i;
  if (std::isnan(a.d)) return std::isnan(b.d);
  return a.d == b.d;
}

int64_t WrapTo(Ref r, int64_t v) {
  switch (r) {
    case Ref::kI8:
      return static_cast<int8_t>(static_cast<uint64_t>(v));
    case Ref::kI16:
      return static_cast<int16_t>(static_cast<uint64_t>(v));
    case Ref::kI32:
      return static_cast<int32_t>(static_cast<uint64_t>(v));
    case Ref::kU8:
      return static_cast<uint8_t>(static_cast<uint64_t>(v));
    case Ref::kBool:
      return v != 0;
    default:
      return v;
  }
}
bool Fits(Ref r, double t) {
  switch (r) {
    case Ref::kI8:
      return t >= -128 && t <= 127;
    case Ref::kI16:
      return t >= -32768 && t <= 32767;
    case Ref::kI32:
      return t >= -2147483648.0 && t <= 2147483647.0;
    case Ref::kU8:
      return t >= 0 && t <= 255;
    case Ref::kI64:
      return t >= -9.2e18 && t <= 9.2e18;
    default:
      return true;
  }
}

// The value stored when `v` is converted to `r`; nullopt where the documented
// conversion leaves room for doubt.
std::optional<Val> Convert(Ref r, const Val& v) {
  switch (r) {
    case Ref::kNone:
      return std::nullopt;
    case Ref::kBool:
      if (v.fl && std::isnan(v.d)) return std::nullopt;
      return IntVal(v.fl ? v.d != 0 : v.i != 0);
    case Ref::kF32:
    case Ref::kF64: {
      double d = v.d;
      if (!v.fl) {
        if (v.i > (int64_t{1} << 53) || v.i < -(int64_t{1} << 53))
          return std::nullopt;
        d = static_cast<double>(v.i);
      }
      return FloatVal(
          r == Ref::kF32 ? static_cast<double>(static_cast<float>(d)) : d);
    }
    default:
      if (v.fl) {
        if (!std::isfinite(v.d)) return std::nullopt;
        const double t = std::trunc(v.d);
        if (!Fits(r, t)) return std::nullopt;
        return IntVal(static_cast<int64_t>(t));
      }
      return IntVal(WrapTo(r, v.i));
  }
}

const uint8_t* HostBytes(const Tensor& t, int level = 0) {
  const Carrier& c = *TensorAccess::representation(t).subtensor(level).carrier;
  return static_cast<const uint8_t*>(c.data());
}

// Whether the carriers of a and b share memory: they may be distinct carriers
// over one buffer (a DLPack import of an export), so identity does not decide.
bool SharesMemory(const Tensor& a, const Tensor& b) {
  const auto range = [](const Carrier& c) {
    const auto* begin = static_cast<const uint8_t*>(c.data());
    const SimpleDType* d = c.dtype().AsSimple();
    const int64_t bytes =
        d == nullptr || c.size() <= 0 ? 0 : (c.size() * d->bits() + 7) / 8;
    return std::make_pair(begin, begin == nullptr ? begin : begin + bytes);
  };
  if (a.carrier() == b.carrier()) return true;
  const auto x = range(*a.carrier()), y = range(*b.carrier());
  if (x.first == nullptr || y.first == nullptr) return false;
  return x.first < y.second && y.first < x.second;
}

// Whether the slow reference can read t's values.
bool Readable(const Tensor& t) {
  return t.num_subtensors() == 1 && RefOf(&t.dtype()) != Ref::kNone &&
         HostBytes(t) != nullptr && t.size() <= kSmall;
}

REFERENCE Val LoadIndex(Ref r, const uint8_t* base, int64_t index) {
  const uint8_t* p = base + index * RefBytes(r);
  switch (r) {
    case Ref::kBool:
      return IntVal(*p != 0);
    case Ref::kI8:
      return IntVal(static_cast<int8_t>(*p));
    case Ref::kU8:
      return IntVal(*p);
    case Ref::kI16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return IntVal(v);
    }
    case Ref::kI32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return IntVal(v);
    }
    case Ref::kI64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return IntVal(v);
    }
    case Ref::kF32: {
      float v;
      std::memcpy(&v, p, 4);
      return FloatVal(v);
    }
    case Ref::kF64: {
      double v;
      std::memcpy(&v, p, 8);
      return FloatVal(v);
    }
    default:
      return Val{};
  }
}
REFERENCE void StoreIndex(Ref r, uint8_t* base, int64_t index, int64_t small) {
  uint8_t* p = base + index * RefBytes(r);
  switch (r) {
    case Ref::kBool:
      *p = small & 1;
      break;
    case Ref::kI8:
    case Ref::kU8:
      *p = static_cast<uint8_t>(small);
      break;
    case Ref::kI16: {
      int16_t v = small;
      std::memcpy(p, &v, 2);
      break;
    }
    case Ref::kI32: {
      int32_t v = small;
      std::memcpy(p, &v, 4);
      break;
    }
    case Ref::kI64: {
      int64_t v = small;
      std::memcpy(p, &v, 8);
      break;
    }
    case Ref::kF32: {
      float v = small / 2.0f;
      std::memcpy(p, &v, 4);
      break;
    }
    case Ref::kF64: {
      double v = small / 2.0;
      std::memcpy(p, &v, 8);
      break;
    }
    default:
      break;
  }
}

// A readable Tensor's level 0, flattened once for the reference loops.
struct Flat {
  explicit Flat(const Tensor& t)
      : e(Extents(t.layout())),
        s(t.layout().shape().leaves().begin(),
          t.layout().shape().leaves().end()),
        d(t.layout().stride().leaves().begin(),
          t.layout().stride().leaves().end()),
        offset(t.offset()),
        ref(RefOf(&t.dtype())),
        base(HostBytes(t)) {}
  // The carrier index of a row-major coordinate: offset + L(colex(c)).
  int64_t Index(const std::vector<int64_t>& c) const {
    int64_t linear = Colex(e, c), r = 0;
    for (size_t k = 0; k < s.size(); ++k) {
      r += (linear % s[k]) * d[k];
      linear /= s[k];
    }
    return offset + r;
  }
  Val Load(const std::vector<int64_t>& c) const {
    return LoadIndex(ref, base, Index(c));
  }
  std::vector<int64_t> e, s, d;
  int64_t offset;
  Ref ref;
  const uint8_t* base;
};

// The value at a row-major coordinate of a readable Tensor.
REFERENCE Val Load(const Tensor& t, const std::vector<int64_t>& c) {
  return Flat(t).Load(c);
}

REFERENCE std::vector<Val> LoadAll(const Tensor& t) {
  std::vector<Val> v;
  const Flat f(t);
  ForEachCoord(f.e,
               [&](const std::vector<int64_t>& c) { v.push_back(f.Load(c)); });
  return v;
}

Val FromScalar(const Scalar& s) {
  return s.is_float() ? FloatVal(s.as_double()) : IntVal(s.as_int());
}

// Whether two coordinates of t reach one carrier value (small t only).
REFERENCE bool Injective(const Tensor& t) {
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < t.size(); ++i)
    idx.push_back(static_cast<int64_t>(Eval(t.layout(), i)));
  std::sort(idx.begin(), idx.end());
  return std::adjacent_find(idx.begin(), idx.end()) == idx.end();
}
// Non-injective for certain, in O(rank): more coordinates than indices.
REFERENCE bool SurelyNotInjective(const Tensor& t) {
  const Bounds b = LeafBounds(t.layout());
  return b.size > b.max - b.min + 1;
}

// ----------------------------------------------------------------- the session

bool Tracing() {
  static const bool on = std::getenv("API_FUZZER_TRACE") != nullptr;
  return on;
}

// A one-subtensor Tensor of a user-created dtype: every op that touches
// values refuses it with a TypeError (NOTE [ One dtype switch ]). A
// user-created descriptor is a simple dtype without a scalar type
// (RequireScalarType); a built-in outside Builtin()'s fourteen (uint4, the
// codes of q4_0 that Levels gives) is not one.
bool HasUserDType(const Tensor& t) {
  const SimpleDType* simple = t.dtype().AsSimple();
  return t.num_subtensors() == 1 && simple != nullptr &&
         !simple->scalar_type().has_value();
}
void RefusedUserDType(const absl::Status& s) {
  // (Another operand's missing host data may be reported first.)
  if (s.ok() || (!IsTypeError(s) &&
                 s.message().find("no host data") == absl::string_view::npos)) {
    std::fprintf(stderr, "api_fuzzer: a user dtype was not refused: %s\n",
                 s.ToString().c_str());
    FUZZ_CHECK(false);
  }
}

struct CarrierState {
  const Carrier* carrier;
  uint64_t version;
  long use_count;
  friend bool operator==(const CarrierState& a, const CarrierState& b) {
    return a.carrier == b.carrier && a.version == b.version &&
           a.use_count == b.use_count;
  }
};

bool StrataError(const absl::Status& s) {
  return GetErrorKind(s) != ErrorKind::kNone ||
         s.code() == absl::StatusCode::kResourceExhausted;
}

class Session {
 public:
  explicit Session(Reader& r) : r_(r) {}

  void Run() {
    for (int step = 0; step < kMaxSteps && !r_.empty(); ++step) Step();
  }

 private:
  // --- state capture
  std::vector<CarrierState> Capture() const {
    std::vector<CarrierState> v;
    auto add = [&](const Tensor& t) {
      for (const Subtensor& s : TensorAccess::representation(t).subtensors()) {
        v.push_back(
            {s.carrier.get(), s.carrier->version(), s.carrier.use_count()});
      }
    };
    for (const Tensor& t : pool_) add(t);
    for (const ag::Variable& x : vars_) add(x.value());
    std::sort(v.begin(), v.end(),
              [](const CarrierState& a, const CarrierState& b) {
                return a.carrier < b.carrier;
              });
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  }
  // A failed call: an error kind, nothing changed, nothing kept.
  void Failed(const absl::Status& s, const std::vector<CarrierState>& before) {
    FUZZ_CHECK_STATUS(StrataError(s), s);
    FUZZ_CHECK(Capture() == before);
  }
  // After a successful call: only `written` was bumped, once (or not at all
  // when `maybe_untouched`).
  void Versions(const std::vector<CarrierState>& before, const Carrier* written,
                bool maybe_untouched) {
    for (const CarrierState& s : before) {
      const uint64_t now = s.carrier->version();
      if (s.carrier == written) {
        FUZZ_CHECK(now == s.version + 1 ||
                   (maybe_untouched && now == s.version));
      } else {
        FUZZ_CHECK(now == s.version);
      }
    }
  }

  void Keep(const Tensor& t) {
    if (pool_.size() < kMaxPool) {
      pool_.push_back(t);
    } else {
      pool_[r_.Range(0, kMaxPool - 1)] = t;
    }
  }
  void KeepVar(const ag::Variable& v) {
    if (vars_.size() < kMaxPool) {
      vars_.push_back(v);
    } else {
      vars_[r_.Range(0, kMaxPool - 1)] = v;
    }
  }
  const Tensor* Pick() {
    if (pool_.empty()) return nullptr;
    return &pool_[r_.Range(0, pool_.size() - 1)];
  }

  // --- construction
  const SimpleDType* PickDType() {
    const int k = static_cast<int>(r_.Range(0, 19));
    if (k < 14) return Builtin(k);
    if (k < 17) return Builtin(static_cast<int>(r_.Range(0, 9)));
    return UserDType(r_);
  }

  void Create() {
    const SimpleDType* d = PickDType();
    if (d == nullptr) return;
    auto layout = MakeLayout(r_);
    if (!layout.ok()) {
      FUZZ_CHECK(IsValueError(layout.status()) || IsTypeError(layout.status()));
      return;
    }
    const Bounds b = LeafBounds(*layout);
    if (b.size != layout->size() ||
        (b.size != 0 &&
         (b.max + 1 != layout->cosize() || b.min != layout->min_index()))) {
      std::fprintf(
          stderr, "api_fuzzer: bounds of %s: size %lld cosize %lld min %lld\n",
          layout->ToString().c_str(), static_cast<long long>(layout->size()),
          static_cast<long long>(layout->cosize()),
          static_cast<long long>(layout->min_index()));
      FUZZ_CHECK(false);
    }
    __int128 offset = -b.min + r_.Range(0, 2);
    if ((r_.Byte() & 7) == 0) offset = r_.Arg(-2, 8);
    __int128 size = offset + (b.size == 0 ? 0 : b.max + 1) + r_.Range(0, 2);
    if ((r_.Byte() & 7) == 0) size = size + r_.Range(-3, 1);
    if ((r_.Byte() & 31) == 0) size = r_.Extreme();
    if (offset > std::numeric_limits<int64_t>::max() ||
        size > std::numeric_limits<int64_t>::max() ||
        size < std::numeric_limits<int64_t>::min()) {
      return;
    }
    const __int128 bytes = (size * d->bits() + 7) / 8;
    int kind =
        static_cast<int>(r_.Range(0, 3));  // host, host, external, recorded
    if (size < 0) kind = 3;
    if (kind <= 1 && bytes > kMaxHostBytes) kind = 3;
    if (kind == 2 && bytes > kMaxExternalBytes) kind = 3;
    std::shared_ptr<Carrier> carrier;
    if (kind <= 1) {
      auto h = HostCarrier::Create(*d, static_cast<int64_t>(size));
      if (!h.ok()) {
        FUZZ_CHECK(StrataError(h.status()));
        return;
      }
      carrier = *h;
    } else if (kind == 2) {
      carrier = MakeExternal(d, static_cast<int64_t>(size),
                             static_cast<int64_t>(bytes));
      if (carrier == nullptr) return;
    } else {
      carrier = RecordedCarrier::Create(*d, static_cast<int64_t>(size));
    }
    // Data the reference can read: small integers (halves for floats).
    if (uint8_t* data = static_cast<uint8_t*>(carrier->mutable_data())) {
      const Ref ref = RefOf(d);
      const uint8_t seed = r_.Byte();
      const int64_t n = std::min<int64_t>(carrier->size(), 1 << 16);
      for (int64_t k = 0; k < n; ++k) {
        const int64_t v =
            static_cast<int64_t>((k * (2 * seed + 1) + seed) % 17) - 8;
        if (ref != Ref::kNone) {
          StoreIndex(ref, data, k, v);
        } else if (d->bits() % 8 == 0 && (k + 1) * (d->bits() / 8) <= bytes) {
          data[k * (d->bits() / 8)] = static_cast<uint8_t>(v * 37 + seed);
        }
      }
    }
    const uint64_t version = carrier->version();
    const int64_t off = static_cast<int64_t>(offset);
    const bool admissible = off >= 0 && size >= 0 &&
                            off + (b.size == 0 ? 0 : b.max + 1) <= size &&
                            off + b.min >= 0;
    auto t = Tensor::Create(carrier, off, *layout);
    FUZZ_CHECK(carrier->version() == version);
    if (t.ok() != admissible) {
      std::fprintf(stderr,
                   "api_fuzzer: Tensor::Create(%s carrier size %lld, offset "
                   "%lld, %s) ok=%d, bounds say %d\n",
                   std::string(carrier->class_name()).c_str(),
                   static_cast<long long>(size), static_cast<long long>(off),
                   layout->ToString().c_str(), t.ok(), admissible);
      FUZZ_CHECK(false);
    }
    if (!t.ok()) {
      FUZZ_CHECK(IsValueError(t.status()));
      FUZZ_CHECK(carrier.use_count() == 1);
      return;
    }
    FUZZ_CHECK(t->size() == layout->size() && t->offset() == off &&
               t->num_subtensors() == 1 && &t->dtype() == d);
    Keep(*t);
  }

  // --- the view invariant
  using Reached = absl::InlinedVector<std::pair<const Carrier*, int64_t>, 4>;
  REFERENCE static Reached Reach(const Representation& rep, int64_t linear) {
    Reached out;
    for (int i = 0; i < rep.num_levels(); ++i) {
      const Subtensor& s = rep.subtensor(i);
      const __int128 index = s.offset + Eval(s.placement, linear);
      out.push_back({s.carrier.get(), static_cast<int64_t>(index)});
      if (i + 1 < rep.num_levels()) {
        linear = static_cast<int64_t>(Eval(rep.adjacent_layouts()[i], linear));
      }
    }
    return out;
  }
  // Every level inside its carrier, every adjacent index inside the next level.
  REFERENCE static void CheckBounds(const Representation& rep) {
    for (int i = 0; i < rep.num_levels(); ++i) {
      const Subtensor& s = rep.subtensor(i);
      const Bounds b = LeafBounds(s.placement);
      FUZZ_CHECK(s.offset >= 0);
      FUZZ_CHECK(s.offset + (b.size == 0 ? 0 : b.max + 1) <= s.carrier->size());
      FUZZ_CHECK(s.offset + b.min >= 0);
      if (i + 1 < rep.num_levels()) {
        const Layout& a = rep.adjacent_layouts()[i];
        FUZZ_CHECK(a.shape() == s.placement.shape());
        if (a.size() > kSmall) continue;
        const int64_t next = rep.subtensor(i + 1).placement.size();
        for (int64_t k = 0; k < a.size(); ++k) {
          const __int128 x = Eval(a, k);
          FUZZ_CHECK(x >= 0 && x < next);
        }
      }
    }
  }

  // sigma maps a new row-major coordinate to the source's.
  template <typename Sigma>
  REFERENCE void CheckView(const Tensor& src, const Tensor& view,
                           const std::vector<int64_t>& expected, Sigma sigma) {
    FUZZ_CHECK(&view.dtype() == &src.dtype());
    FUZZ_CHECK(view.num_subtensors() == src.num_subtensors());
    const std::vector<int64_t> got = Extents(view.layout());
    if (got != expected) {
      std::fprintf(stderr, "api_fuzzer: view of %s is %s\n",
                   src.layout().ToString().c_str(),
                   view.layout().ToString().c_str());
      FUZZ_CHECK(false);
    }
    FUZZ_CHECK(view.shape() == got);
    CheckBounds(TensorAccess::representation(view));
    if (view.size() > kSmall) return;
    const std::vector<int64_t> se = Extents(src.layout());
    ForEachCoord(got, [&](const std::vector<int64_t>& c) {
      const Coord s = sigma(c);
      const Reached a =
          Reach(TensorAccess::representation(view), Colex(got, c));
      const Reached b = Reach(TensorAccess::representation(src), Colex(se, s));
      if (a != b) {
        std::fprintf(stderr, "api_fuzzer: view invariant broken: %s of %s\n",
                     view.layout().ToString().c_str(),
                     src.layout().ToString().c_str());
        FUZZ_CHECK(false);
      }
    });
  }

  std::vector<int64_t> Shape(const Tensor& t) { return Extents(t.layout()); }

  IntTuple RandomShape(int64_t rank) {
    std::vector<int64_t> s(rank);
    for (auto& x : s) x = r_.Arg(0, 5);
    return IntTuple::Flat(s);
  }

  void View() {
    const Tensor* p = Pick();
    if (p == nullptr) return;
    const Tensor src = *p;
    const std::vector<int64_t> e = Shape(src);
    const int64_t rank = e.size();
    const auto before = Capture();
    auto finish = [&](const absl::StatusOr<Tensor>& v) {
      if (!v.ok()) {
        Failed(v.status(), before);
        return false;
      }
      Versions(before, nullptr, false);
      return true;
    };
    switch (r_.Range(0, 7)) {
      case 0: {  // Permute
        std::vector<int64_t> perm(rank);
        for (int64_t i = 0; i < rank; ++i) perm[i] = i;
        for (int64_t i = rank - 1; i > 0; --i)
          std::swap(perm[i], perm[r_.Range(0, i)]);
        if ((r_.Byte() & 7) == 0 && rank > 0)
          perm[r_.Range(0, rank - 1)] = r_.Arg(-1, rank);
        if ((r_.Byte() & 15) == 0) perm.push_back(r_.Arg(0, rank));
        std::vector<int64_t> sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        bool valid = static_cast<int64_t>(perm.size()) == rank;
        for (size_t i = 0; valid && i < sorted.size(); ++i)
          valid = sorted[i] == static_cast<int64_t>(i);
        auto v = Permute(src, perm);
        if (!valid) FUZZ_CHECK(!v.ok());
        if (!finish(v)) return;
        std::vector<int64_t> ne(rank);
        for (int64_t i = 0; i < rank; ++i) ne[i] = e[perm[i]];
        CheckView(src, *v, ne, [&](const std::vector<int64_t>& c) {
          Coord s(rank);
          for (int64_t i = 0; i < rank; ++i) s[perm[i]] = c[i];
          return s;
        });
        Keep(*v);
        return;
      }
      case 1: {  // Slice
        const int64_t dim = r_.Arg(0, rank - 1);
        const int64_t extent = dim >= 0 && dim < rank ? e[dim] : 4;
        const int64_t start = r_.Arg(0, extent);
        const int64_t stop = r_.Arg(start, extent);
        const int64_t step = r_.Bool() ? 1 : r_.Arg(1, 40);
        const bool valid = dim >= 0 && dim < rank && step > 0 && start >= 0 &&
                           start <= stop && stop <= extent;
        auto v = Slice(src, dim, start, stop, step);
        if (!valid) FUZZ_CHECK(!v.ok());
        if (!finish(v)) return;
        std::vector<int64_t> ne = e;
        ne[dim] = static_cast<int64_t>(
            (static_cast<__int128>(stop) - start + step - 1) / step);
        CheckView(src, *v, ne, [&](const std::vector<int64_t>& c) {
          Coord s(c.begin(), c.end());
          s[dim] = start + c[dim] * step;
          return s;
        });
        Keep(*v);
        return;
      }
      case 2: {  // Reshape (row-major)
        std::vector<int64_t> ne;
        int64_t rest = src.size();
        const int n = static_cast<int>(r_.Range(0, 4));
        for (int i = 0; i < n; ++i) {
          int64_t f = 1;
          for (int64_t cand = r_.Range(1, 6); cand >= 1; --cand) {
            if (rest % cand == 0) {
              f = cand;
              break;
            }
          }
          if (rest == 0) f = r_.Range(0, 3);
          if (rest != 0) rest /= f;
          ne.push_back(f);
        }
        ne.push_back(rest);
        if ((r_.Byte() & 7) == 0) ne[r_.Range(0, ne.size() - 1)] = r_.Arg(0, 8);
        // Reshape takes the dims' extents only; these bytes once chose nested
        // spellings of them and are still read so that seeds keep their
        // meaning.
        for (size_t i = 0; i < ne.size(); ++i) {
          if (ne[i] % 2 == 0 && ne[i] > 0) (void)r_.Byte();
        }
        auto v = Reshape(src, ne);
        const __int128 prod = Product(ne);
        bool negative = false;
        for (int64_t x : ne) negative |= x < 0;
        if (negative || prod != src.size()) FUZZ_CHECK(!v.ok());
        if (!finish(v)) return;
        CheckView(src, *v, ne, [&](const std::vector<int64_t>& c) {
          int64_t r = RowMajor(ne, c);
          Coord s(e.size());
          for (size_t k = e.size(); k-- > 0;) {
            s[k] = r % e[k];
            r /= e[k];
          }
          return s;
        });
        Keep(*v);
        return;
      }
      case 3: {  // AsStrided
        auto layout =
            r_.Bool() ? absl::StatusOr<Layout>(src.layout()) : MakeLayout(r_);
        if (!layout.ok()) return;
        const Bounds b = LeafBounds(*layout);
        int64_t offset = static_cast<int64_t>(std::min<__int128>(
            -b.min + r_.Range(0, 3), std::numeric_limits<int64_t>::max()));
        if (r_.Bool()) offset = src.offset() + r_.Range(-1, 1);
        if ((r_.Byte() & 15) == 0) offset = r_.Extreme();
        const int64_t csize = src.carrier()->size();
        const bool fits = offset >= 0 &&
                          offset + (b.size == 0 ? 0 : b.max + 1) <= csize &&
                          offset + b.min >= 0;
        auto v = AsStrided(src, *layout, offset);
        if (!fits) FUZZ_CHECK(!v.ok());
        if (src.num_subtensors() == 1 && fits && csize >= 0) FUZZ_CHECK(v.ok());
        if (!finish(v)) return;
        FUZZ_CHECK(v->carrier() == src.carrier());
        FUZZ_CHECK(v->num_subtensors() == src.num_subtensors());
        FUZZ_CHECK(Extents(v->layout()) == Extents(*layout));
        CheckBounds(TensorAccess::representation(*v));
        if (v->size() > kSmall || src.size() > kSmall) {
          Keep(*v);
          return;
        }
        // Level-0 index, then deeper levels through the unique preimage.
        std::map<int64_t, std::vector<int64_t>> pre;
        for (int64_t k = 0; k < src.size(); ++k) {
          pre[src.offset() + static_cast<int64_t>(Eval(src.layout(), k))]
              .push_back(k);
        }
        for (int64_t k = 0; k < v->size(); ++k) {
          const Reached a = Reach(TensorAccess::representation(*v), k);
          FUZZ_CHECK(a[0].second ==
                     offset + static_cast<int64_t>(Eval(*layout, k)));
          if (src.num_subtensors() == 1) continue;
          auto it = pre.find(a[0].second);
          FUZZ_CHECK(it != pre.end());  // Reaches only what L_0 reaches.
          if (it->second.size() != 1) continue;
          FUZZ_CHECK(Reach(TensorAccess::representation(src), it->second[0]) ==
                     a);
        }
        Keep(*v);
        return;
      }
      case 4: {  // BroadcastTo
        std::vector<int64_t> ne;
        const int64_t lead = r_.Range(0, 2);
        for (int64_t i = 0; i < lead; ++i) ne.push_back(r_.Arg(0, 4));
        for (int64_t x : e)
          ne.push_back(x == 1 && r_.Bool() ? r_.Arg(0, 5) : x);
        if ((r_.Byte() & 15) == 0 && !ne.empty()) ne.erase(ne.begin());
        auto v = BroadcastTo(src, ne);
        bool valid = ne.size() >= e.size();
        for (size_t i = 0; valid && i < ne.size(); ++i) {
          valid = ne[i] >= 0;
          if (i >= ne.size() - e.size()) {
            const int64_t x = e[i - (ne.size() - e.size())];
            valid = valid && (x == 1 || x == ne[i]);
          }
        }
        if (!valid) FUZZ_CHECK(!v.ok());
        if (!finish(v)) return;
        const size_t shift = ne.size() - e.size();
        CheckView(src, *v, ne, [&](const std::vector<int64_t>& c) {
          Coord s(e.size());
          for (size_t i = 0; i < e.size(); ++i)
            s[i] = e[i] == 1 ? 0 : c[i + shift];
          return s;
        });
        Keep(*v);
        return;
      }
      case 5: {  // BroadcastInDim
        const int64_t nrank = rank + r_.Range(0, 2);
        std::vector<int64_t> dims;
        for (int64_t i = 0;
             i < nrank && static_cast<int64_t>(dims.size()) < rank; ++i) {
          if (nrank - i == rank - static_cast<int64_t>(dims.size()) ||
              r_.Bool())
            dims.push_back(i);
        }
        std::vector<int64_t> ne(nrank);
        for (auto& x : ne) x = r_.Range(0, 4);
        for (size_t i = 0; i < dims.size(); ++i) {
          ne[dims[i]] = e[i] == 1 && r_.Bool() ? r_.Range(0, 4) : e[i];
        }
        if ((r_.Byte() & 7) == 0 && !dims.empty())
          dims[r_.Range(0, dims.size() - 1)] = r_.Arg(-1, nrank);
        bool valid = static_cast<int64_t>(dims.size()) == rank;
        for (size_t i = 0; valid && i < dims.size(); ++i) {
          valid = dims[i] >= 0 && dims[i] < nrank &&
                  (i == 0 || dims[i] > dims[i - 1]) &&
                  (e[i] == 1 || e[i] == ne[dims[i]]);
        }
        auto v = BroadcastInDim(src, ne, dims);
        if (!valid) FUZZ_CHECK(!v.ok());
        if (!finish(v)) return;
        CheckView(src, *v, ne, [&](const std::vector<int64_t>& c) {
          Coord s(e.size());
          for (size_t i = 0; i < e.size(); ++i)
            s[i] = e[i] == 1 ? 0 : c[dims[i]];
          return s;
        });
        Keep(*v);
        return;
      }
      case 6: {  // Squeeze
        std::optional<int64_t> dim;
        if (r_.Bool()) dim = r_.Arg(0, rank - 1);
        auto v = Squeeze(src, dim);
        if (dim && (*dim < 0 || *dim >= rank || e[*dim] != 1))
          FUZZ_CHECK(!v.ok());
        if (!finish(v)) return;
        std::vector<int64_t> ne, kept;
        for (int64_t i = 0; i < rank; ++i) {
          if (dim ? i != *dim : e[i] != 1) {
            ne.push_back(e[i]);
            kept.push_back(i);
          }
        }
        CheckView(src, *v, ne, [&](const std::vector<int64_t>& c) {
          Coord s(rank, 0);
          for (size_t i = 0; i < kept.size(); ++i) s[kept[i]] = c[i];
          return s;
        });
        Keep(*v);
        return;
      }
      default: {  // Unsqueeze
        const int64_t dim = r_.Arg(0, rank);
        auto v = Unsqueeze(src, dim);
        if (dim < 0 || dim > rank) FUZZ_CHECK(!v.ok());
        if (!finish(v)) return;
        std::vector<int64_t> ne = e;
        ne.insert(ne.begin() + dim, 1);
        CheckView(src, *v, ne, [&](const std::vector<int64_t>& c) {
          Coord s(c.begin(), c.end());
          s.erase(s.begin() + dim);
          return s;
        });
        Keep(*v);
        return;
      }
    }
  }

  // --- ops
  Scalar PickScalar() {
    switch (r_.Range(0, 4)) {
      case 0:
        return Scalar::Bool(r_.Bool());
      case 1:
        return Scalar::Int(r_.Range(-100, 100));
      case 2:
        return Scalar::Int(r_.Extreme());
      case 3:
        return Scalar::Float(static_cast<double>(r_.Range(-64, 64)) / 4);
      default: {
        static const double kSpecial[] = {
            std::numeric_limits<double>::quiet_NaN(),
            std::numeric_limits<double>::infinity(),
            -std::numeric_limits<double>::infinity(),
            1e300,
            -0.0,
            448.5,
            1e-40};
        return Scalar::Float(kSpecial[r_.Range(0, 6)]);
      }
    }
  }

  // Whether data ops may run on t (bounded work).
  static bool Small(const Tensor& t) {
    return t.size() <= kSmall && t.carrier()->size() <= (int64_t{1} << 20);
  }

  void ItemOps() {
    const Tensor* p = Pick();
    if (p == nullptr) return;
    const Tensor t = *p;
    const std::vector<int64_t> e = Shape(t);
    std::vector<int64_t> c(e.size());
    bool in_range = true;
    for (size_t i = 0; i < e.size(); ++i) {
      c[i] = e[i] > 0 ? r_.Range(0, e[i] - 1) : 0;
      if ((r_.Byte() & 15) == 0) c[i] = r_.Extreme();
      in_range = in_range && c[i] >= 0 && c[i] < e[i];
    }
    IntTuple coord =
        e.size() == 1 && r_.Bool() ? IntTuple(c[0]) : IntTuple::Flat(c);
    const auto before = Capture();
    if (r_.Bool()) {
      auto got = GetItem(t, coord);
      if (HasUserDType(t)) RefusedUserDType(got.status());
      if (!in_range) FUZZ_CHECK(!got.ok());
      if (!got.ok()) return Failed(got.status(), before);
      Versions(before, nullptr, false);
      if (Readable(t)) FUZZ_CHECK(Same(FromScalar(*got), Load(t, c)));
      return;
    }
    const Scalar value = PickScalar();
    auto s = SetItem(t, coord, value);
    if (HasUserDType(t)) RefusedUserDType(s);
    if (!in_range) FUZZ_CHECK(!s.ok());
    if (!s.ok()) return Failed(s, before);
    Versions(before, t.carrier().get(), false);
    if (Readable(t)) {
      if (auto want = Convert(RefOf(&t.dtype()), FromScalar(value)))
        FUZZ_CHECK(Same(*want, Load(t, c)));
    }
  }

  void FillOp() {
    const Tensor* p = Pick();
    if (p == nullptr) return;
    const Tensor t = *p;
    const bool small = Small(t);
    const bool overlapping = small ? !Injective(t) : SurelyNotInjective(t);
    if (!small && !overlapping && t.carrier()->data() != nullptr) return;
    const Scalar value = PickScalar();
    if (HasUserDType(t)) {
      const auto before = Capture();
      auto s = Fill(t, value);
      RefusedUserDType(s);
      return Failed(s, before);
    }
    const auto before = Capture();
    auto s = Fill(t, value);
    if (overlapping || (t.carrier()->data() == nullptr && t.size() > 0))
      FUZZ_CHECK(!s.ok());
    if (!s.ok()) return Failed(s, before);
    Versions(before, t.carrier().get(), t.size() == 0);
    if (Readable(t)) {
      if (auto want = Convert(RefOf(&t.dtype()), FromScalar(value))) {
        for (const Val& v : LoadAll(t)) FUZZ_CHECK(Same(*want, v));
      }
    }
  }

  // At most kSmall elements (no product overflows: it stops at kSmall).
  static bool SmallShape(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (const int64_t e : shape) {
      if (e == 0) return true;
    }
    for (const int64_t e : shape) {
      if (e > kSmall) return false;
      n *= e;
      if (n > kSmall) return false;
    }
    return true;
  }

  // NumPy broadcast of two shapes (nullopt when they do not broadcast).
  static std::optional<std::vector<int64_t>> Broadcast(
      const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> out(std::max(a.size(), b.size()));
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t x =
          i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
      const int64_t y =
          i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
      if (x != y && x != 1 && y != 1) return std::nullopt;
      out[i] = x == 1 ? y : x;
    }
    return out;
  }
  static std::vector<int64_t> Project(const std::vector<int64_t>& src,
                                      const std::vector<int64_t>& c) {
    std::vector<int64_t> s(src.size());
    const size_t shift = c.size() - src.size();
    for (size_t i = 0; i < src.size(); ++i)
      s[i] = src[i] == 1 ? 0 : c[i + shift];
    return s;
  }

  void CopyOp() {
    const Tensor* pd = Pick();
    const Tensor* ps = Pick();
    if (pd == nullptr) return;
    const Tensor dst = *pd, src = *ps;
    const bool small = Small(dst) && Small(src);
    const bool overlapping =
        Small(dst) ? !Injective(dst) : SurelyNotInjective(dst);
    if (!small && !(overlapping && !Small(dst) && Small(src))) return;
    if ((HasUserDType(dst) || HasUserDType(src)) && dst.num_subtensors() == 1 &&
        src.num_subtensors() == 1) {
      const auto before = Capture();
      auto s = CopyFrom(dst, src);
      RefusedUserDType(s);
      return Failed(s, before);
    }
    const auto bshape = Broadcast(Shape(src), Shape(dst));
    const bool broadcasts = bshape && *bshape == Shape(dst);
    std::vector<std::optional<Val>> want;
    const bool ref =
        Readable(dst) && Readable(src) && broadcasts && !overlapping;
    if (ref) {
      const Ref dr = RefOf(&dst.dtype());
      const Flat fs(src);
      ForEachCoord(Shape(dst), [&](const std::vector<int64_t>& c) {
        want.push_back(Convert(dr, fs.Load(Project(fs.e, c))));
      });
    }
    const auto before = Capture();
    auto s = CopyFrom(dst, src);
    if (overlapping || !broadcasts) FUZZ_CHECK(!s.ok());
    if (!s.ok()) return Failed(s, before);
    Versions(before, dst.carrier().get(), dst.size() == 0);
    if (ref) {
      std::vector<Val> got = LoadAll(dst);
      for (size_t i = 0; i < got.size(); ++i) {
        if (want[i]) FUZZ_CHECK(Same(*want[i], got[i]));
      }
    }
  }

  static std::optional<Val> Apply(BinaryOp op, const SimpleDType* rt,
                                  const Val& a, const Val& b) {
    const Ref r = RefOf(rt);
    if (r == Ref::kNone || r == Ref::kBool) return std::nullopt;
    if (!RefFloat(r)) {
      const uint64_t x = static_cast<uint64_t>(a.i),
                     y = static_cast<uint64_t>(b.i);
      uint64_t z = 0;
      switch (op) {
        case BinaryOp::kAdd:
          z = x + y;
          break;
        case BinaryOp::kSub:
          z = x - y;
          break;
        case BinaryOp::kMul:
          z = x * y;
          break;
        default:
          return std::nullopt;
      }
      return IntVal(WrapTo(r, static_cast<int64_t>(z)));
    }
    if ((!a.fl && std::abs(static_cast<double>(a.i)) > 9e15) ||
        (!b.fl && std::abs(static_cast<double>(b.i)) > 9e15))
      return std::nullopt;
    // Operands are converted to the compute dtype first (ops.h).
    const auto ca = Convert(r, a), cb = Convert(r, b);
    if (!ca || !cb) return std::nullopt;
    const double x = ca->d, y = cb->d;
    double z = 0;
    switch (op) {
      case BinaryOp::kAdd:
        z = x + y;
        break;
      case BinaryOp::kSub:
        z = x - y;
        break;
      case BinaryOp::kMul:
        z = x * y;
        break;
      case BinaryOp::kDiv:
        z = x / y;
        break;
    }
    return Convert(r, FloatVal(z));
  }

  void BinaryOps() {
    const Tensor* pa = Pick();
    const Tensor* pb = Pick();
    if (pa == nullptr) return;
    const Tensor a = *pa, b = *pb;
    if (!Small(a) || !Small(b)) return;
    const BinaryOp op = static_cast<BinaryOp>(r_.Range(0, 3));
    const bool neg = (r_.Byte() & 7) == 0;
    const bool out_form = r_.Bool();
    const auto* sa = a.dtype().AsSimple();
    const auto* sb = b.dtype().AsSimple();
    if ((HasUserDType(a) || (!neg && HasUserDType(b))) &&
        a.num_subtensors() == 1 && (neg || b.num_subtensors() == 1)) {
      const auto before = Capture();
      auto res = neg ? strata::Neg(a) : BinaryOpTensor(op, a, b);
      RefusedUserDType(res.status());
      return Failed(res.status(), before);
    }
    const SimpleDType* rt = (sa && sb) ? RefResultType(a, b, op) : nullptr;
    if (neg) rt = sa && Arithmetic(sa) && !sa->is_bool() ? sa : nullptr;
    const auto shape = neg ? std::optional<std::vector<int64_t>>(Shape(a))
                           : Broadcast(Shape(a), Shape(b));
    // Two small operands can broadcast to kSmall^2 elements, which a new
    // result and the reference would then touch (a 22 s unit); an *Out form
    // into a small Tensor still runs (and fails on the shape).
    const bool small_result = !shape || SmallShape(*shape);
    std::vector<Val> want;
    const bool ref = rt && shape && small_result && Readable(a) &&
                     (neg || Readable(b)) && !(rt->is_bool());
    auto compute = [&]() {
      want.clear();
      const Flat fa(a), fb(neg ? a : b);
      ForEachCoord(*shape, [&](const std::vector<int64_t>& c) {
        const Val x = fa.Load(Project(fa.e, c));
        std::optional<Val> z;
        if (neg) {
          z = Apply(BinaryOp::kSub, rt,
                    rt->is_floating() ? FloatVal(-0.0) : IntVal(0), x);
          if (rt->is_floating()) z = Convert(RefOf(rt), FloatVal(-x.d));
        } else {
          z = Apply(op, rt, x, fb.Load(Project(fb.e, c)));
        }
        want.push_back(z ? *z : Val{true, 12345.678, -1});
      });
    };
    if (ref) compute();
    auto skip = [](const Val& v) {
      return v.fl && v.d == 12345.678 && v.i == -1;
    };
    const auto before = Capture();
    const int before_created = HostCarrier::created();
    if (!out_form) {
      if (!small_result) return;
      absl::StatusOr<Tensor> res =
          neg ? strata::Neg(a) : BinaryOpTensor(op, a, b);
      if (!shape && !neg) FUZZ_CHECK(!res.ok());
      // The table refuses storage types, Sub with bool and Neg of bool.
      if (!rt && sa && sb && BuiltinSimple(sa) && BuiltinSimple(sb))
        FUZZ_CHECK(!res.ok());
      if (!res.ok()) {
        if (IsOneSubtensorRequired(res.status()))
          FUZZ_CHECK(HostCarrier::created() == before_created);
        return Failed(res.status(), before);
      }
      Versions(before, nullptr, false);
      if (rt) FUZZ_CHECK(&res->dtype() == rt);
      if (shape) FUZZ_CHECK(Shape(*res) == *shape);
      FUZZ_CHECK(IsCompactRowMajor(*res));
      if (ref) {
        std::vector<Val> got = LoadAll(*res);
        for (size_t i = 0; i < got.size(); ++i) {
          if (!skip(want[i])) FUZZ_CHECK(Same(want[i], got[i]));
        }
      }
      Keep(*res);
      return;
    }
    // The *Out forms: out is a, b, or another pool Tensor.
    const int which = static_cast<int>(r_.Range(0, 2));
    const Tensor out = which == 0 ? a : which == 1 ? b : *Pick();
    if (!Small(out)) return;
    if (!BuiltinSimple(&out.dtype())) return;
    absl::Status s;
    if (neg) {
      s = NegOut(out, a);
    } else {
      switch (op) {
        case BinaryOp::kAdd:
          s = AddOut(out, a, b);
          break;
        case BinaryOp::kSub:
          s = SubOut(out, a, b);
          break;
        case BinaryOp::kMul:
          s = MulOut(out, a, b);
          break;
        case BinaryOp::kDiv:
          s = DivOut(out, a, b);
          break;
      }
    }
    const bool out_overlaps = !Injective(out);
    if (out_overlaps && out.size() > 0) FUZZ_CHECK(!s.ok());
    if (!s.ok()) return Failed(s, before);
    Versions(before, out.carrier().get(), out.size() == 0);
    FUZZ_CHECK(shape && Shape(out) == *shape);
    const bool exact_alias = which < 2;
    const bool disjoint = !SharesMemory(out, a) && !SharesMemory(out, b);
    if (ref && Readable(out) && (exact_alias || disjoint)) {
      // Only where out is a or b exactly, or shares no carrier with them.
      const Ref orf = RefOf(&out.dtype());
      std::vector<Val> got = LoadAll(out);
      for (size_t i = 0; i < got.size(); ++i) {
        if (skip(want[i])) continue;
        auto w = Convert(orf, want[i]);
        if (w) FUZZ_CHECK(Same(*w, got[i]));
      }
    }
  }

  void SumOp() {
    const Tensor* p = Pick();
    if (p == nullptr) return;
    const Tensor t = *p;
    if (!Small(t)) return;
    if (HasUserDType(t)) {
      const auto before = Capture();
      auto res = strata::Sum(t);
      RefusedUserDType(res.status());
      return Failed(res.status(), before);
    }
    const std::vector<int64_t> e = Shape(t);
    std::vector<int64_t> modes;
    const bool all = r_.Bool();
    if (!all) {
      for (size_t i = 0; i < e.size(); ++i)
        if (r_.Bool()) modes.push_back(i);
      if ((r_.Byte() & 7) == 0) modes.push_back(r_.Arg(0, e.size()));
    }
    const auto before = Capture();
    auto res = all ? strata::Sum(t) : strata::Sum(t, modes);
    if (!res.ok()) return Failed(res.status(), before);
    Versions(before, nullptr, false);
    std::vector<int64_t> sorted = modes;
    std::sort(sorted.begin(), sorted.end());
    const bool distinct =
        std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
    if (!Readable(t) || !distinct) return;
    for (int64_t m : modes)
      FUZZ_CHECK(m >= 0 && m < static_cast<int64_t>(e.size()));
    std::vector<int64_t> oe;
    for (size_t i = 0; i < e.size(); ++i) {
      if (!all && std::find(modes.begin(), modes.end(),
                            static_cast<int64_t>(i)) == modes.end())
        oe.push_back(e[i]);
    }
    FUZZ_CHECK(Shape(*res) == oe);
    const bool fl = t.dtype().AsSimple()->is_floating();
    FUZZ_CHECK(&res->dtype() == (fl ? t.dtype().AsSimple() : dtypes::Int64()));
    if (!Readable(*res)) return;
    std::vector<uint64_t> isum(static_cast<size_t>(Product(oe)), 0);
    std::vector<double> fsum(isum.size(), 0), fabs_sum(isum.size(), 0);
    const Flat ft(t);
    ForEachCoord(e, [&](const std::vector<int64_t>& c) {
      std::vector<int64_t> oc;
      for (size_t i = 0; i < e.size(); ++i) {
        if (!all && std::find(modes.begin(), modes.end(),
                              static_cast<int64_t>(i)) == modes.end())
          oc.push_back(c[i]);
      }
      const int64_t k = RowMajor(oe, oc);
      const Val v = ft.Load(c);
      isum[k] += static_cast<uint64_t>(v.i);
      fsum[k] += v.d;
      fabs_sum[k] += std::fabs(v.d);
    });
    std::vector<Val> got = LoadAll(*res);
    for (size_t k = 0; k < got.size(); ++k) {
      if (!fl) {
        FUZZ_CHECK(got[k].i == static_cast<int64_t>(isum[k]));
      } else if (std::isfinite(fsum[k])) {
        const bool f32 = t.dtype().AsSimple()->bits() == 32;
        const double tol = (f32 ? 1e-5 : 1e-12) * fabs_sum[k] + 1e-300;
        // Sums accumulate in double and round once to the result's dtype: a
        // float32 sum at or past FLT_MAX + half an ulp is infinity of its
        // sign. Within tol of that threshold either answer holds.
        constexpr double kFloat32Overflow = 0x1.ffffffp127;
        if (f32 && std::fabs(fsum[k]) + tol >= kFloat32Overflow) {
          FUZZ_CHECK((std::isinf(got[k].d) &&
                      std::signbit(got[k].d) == std::signbit(fsum[k])) ||
                     std::fabs(got[k].d - fsum[k]) <= tol);
        } else {
          FUZZ_CHECK(std::fabs(got[k].d - fsum[k]) <= tol);
        }
      }
    }
  }

  void MoveOps() {
    const Tensor* p = Pick();
    if (p == nullptr) return;
    const Tensor t = *p;
    if (!Small(t)) return;
    if (HasUserDType(t)) {
      const auto before = Capture();
      auto res = r_.Bool() ? Clone(t) : Cast(t, *dtypes::Float32());
      RefusedUserDType(res.status());
      return Failed(res.status(), before);
    }
    const int which = static_cast<int>(r_.Range(0, 2));
    const SimpleDType* to = Builtin(static_cast<int>(r_.Range(0, 13)));
    const auto before = Capture();
    absl::StatusOr<Tensor> res = which == 0   ? Contiguous(t)
                                 : which == 1 ? Clone(t)
                                              : Cast(t, *to);
    if (!res.ok()) return Failed(res.status(), before);
    Versions(before, nullptr, false);
    FUZZ_CHECK(Shape(*res) == Shape(t));
    FUZZ_CHECK(IsCompactRowMajor(*res));
    if (which == 1) FUZZ_CHECK(res->carrier() != t.carrier());
    if (which == 2) FUZZ_CHECK(&res->dtype() == to);
    if (which < 2) FUZZ_CHECK(&res->dtype() == &t.dtype());
    if (Readable(t) && Readable(*res)) {
      const Ref rr = RefOf(&res->dtype());
      std::vector<Val> src = LoadAll(t), got = LoadAll(*res);
      for (size_t i = 0; i < got.size(); ++i) {
        if (auto w = Convert(rr, src[i])) FUZZ_CHECK(Same(*w, got[i]));
      }
    }
    Keep(*res);
  }

  void ScatterOp() {
    const Tensor* pd = Pick();
    const Tensor* ps = Pick();
    if (pd == nullptr) return;
    const Tensor dst = *pd, src = *ps;
    if (!Small(dst) || !Small(src)) return;
    if ((HasUserDType(dst) || HasUserDType(src)) && dst.num_subtensors() == 1 &&
        src.num_subtensors() == 1) {
      auto index = Zeros(*dtypes::Int64(), {1});
      const auto before = Capture();
      auto s = Scatter(dst, 0, *index, src);
      RefusedUserDType(s);
      return Failed(s, before);
    }
    const std::vector<int64_t> de = Shape(dst), se = Shape(src);
    const int64_t rank = de.size();
    const int64_t mode = r_.Arg(0, rank - 1);
    // An index Tensor of dst's rank, extents <= src's (and dst's off `mode`).
    std::vector<int64_t> ie(rank);
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t lim = i < static_cast<int64_t>(se.size())
                              ? (i == mode ? se[i] : std::min(se[i], de[i]))
                              : 1;
      ie[i] = lim > 0 ? r_.Range(0, lim) : 0;
    }
    const SimpleDType* it = r_.Bool() ? dtypes::Int64() : dtypes::Int32();
    if ((r_.Byte() & 15) == 0) it = Builtin(static_cast<int>(r_.Range(0, 9)));
    auto index = Zeros(*it, ie);
    if (!index.ok()) return;
    const int64_t dim_extent = mode >= 0 && mode < rank ? de[mode] : 0;
    bool valid_values = true;
    if (Readable(*index)) {
      uint8_t* data = static_cast<uint8_t*>(index->carrier()->mutable_data());
      for (int64_t k = 0; k < index->size(); ++k) {
        int64_t v = dim_extent > 0 ? r_.Range(0, dim_extent - 1) : 0;
        if ((r_.Byte() & 31) == 0) v = r_.Arg(-2, dim_extent + 2);
        if (it == dtypes::Int32()) v = static_cast<int32_t>(v);
        if (v < 0 || v >= dim_extent) valid_values = false;
        if (it == dtypes::Int64())
          std::memcpy(data + 8 * k, &v, 8);
        else if (it == dtypes::Int32()) {
          int32_t w = v;
          std::memcpy(data + 4 * k, &w, 4);
        }
      }
    }
    const bool overlapping = !Injective(dst);
    const auto before = Capture();
    auto s = Scatter(dst, mode, *index, src);
    if (s.ok()) {
      FUZZ_CHECK(it == dtypes::Int64() || it == dtypes::Int32());
      FUZZ_CHECK(!overlapping || index->size() == 0);
      if (index->size() > 0) FUZZ_CHECK(valid_values);
      Versions(before, dst.carrier().get(), true);
    } else {
      Failed(s, before);
    }
    if (!s.ok() || !Readable(dst) || !Readable(src) || !Readable(*index) ||
        se.size() != de.size() || SharesMemory(src, dst) ||
        SharesMemory(*index, dst)) {
      return;
    }
    // Reference: targets written once (or with equal values) must hold src.
    std::map<int64_t, std::optional<Val>> written;
    const Flat fi(*index), fs(src), fd(dst);
    const Ref dr = RefOf(&dst.dtype());
    ForEachCoord(ie, [&](const std::vector<int64_t>& c) {
      std::vector<int64_t> target = c;
      target[mode] = fi.Load(c).i;
      std::vector<int64_t> sc(c.begin(), c.begin() + se.size());
      auto v = Convert(dr, fs.Load(sc));
      const int64_t k = RowMajor(de, target);
      auto found = written.find(k);
      if (found == written.end()) {
        written[k] = v;
      } else if (!(found->second && v && Same(*found->second, *v))) {
        found->second.reset();
      }
    });
    for (const auto& [k, v] : written) {
      if (v) FUZZ_CHECK(Same(*v, fd.Load(FromRowMajor(de, k))));
    }
  }

  // --- autograd
  void Autograd() {
    switch (r_.Range(0, 4)) {
      case 0: {
        const Tensor* p = Pick();
        if (p == nullptr) return;
        KeepVar(ag::Variable::Leaf(*p, (r_.Byte() & 3) != 0));
        return;
      }
      case 1:
      case 2: {
        if (vars_.empty()) return;
        const ag::Variable a = vars_[r_.Range(0, vars_.size() - 1)];
        const ag::Variable b = vars_[r_.Range(0, vars_.size() - 1)];
        if (!Small(a.value()) || !Small(b.value())) return;
        const auto before = Capture();
        absl::StatusOr<ag::Variable> v = absl::UnknownError("unset");
        const std::vector<int64_t> e = Shape(a.value());
        const int choice = static_cast<int>(r_.Range(0, 11));
        // The binary ops broadcast (see BinaryOps).
        if (choice <= 3) {
          const auto shape = Broadcast(e, Shape(b.value()));
          if (shape && !SmallShape(*shape)) return;
        }
        switch (choice) {
          case 0:
            v = ag::Add(a, b);
            break;
          case 1:
            v = ag::Sub(a, b);
            break;
          case 2:
            v = ag::Mul(a, b);
            break;
          case 3:
            v = ag::Div(a, b);
            break;
          case 4:
            v = ag::Neg(a);
            break;
          case 5:
            v = ag::Sum(a);
            break;
          case 6:
            v = ag::Cast(a, *Builtin(static_cast<int>(r_.Range(6, 9))));
            break;
          case 7: {
            std::vector<int64_t> perm(e.size());
            for (size_t i = 0; i < e.size(); ++i) perm[i] = e.size() - 1 - i;
            v = ag::Permute(a, perm);
            break;
          }
          case 8:
            v = e.empty() ? ag::Unsqueeze(a, 0)
                          : ag::Slice(a, 0, 0, e[0] / 2, r_.Range(1, 2));
            break;
          case 9: {
            std::vector<int64_t> ne = e;
            ne.insert(ne.begin(), r_.Range(1, 3));
            v = ag::BroadcastTo(a, ne);
            break;
          }
          case 10:
            v = ag::Reshape(a, {a.value().size()});
            break;
          default:
            v = ag::Squeeze(a);
            break;
        }
        if (!v.ok()) return Failed(v.status(), before);
        Versions(before, nullptr, false);
        KeepVar(*v);
        return;
      }
      case 3: {
        if (vars_.empty()) return;
        const ag::Variable loss = vars_[r_.Range(0, vars_.size() - 1)];
        const auto before = Capture();
        auto s = ag::Backward(loss);
        if (!s.ok()) return Failed(s, before);
        Versions(before, nullptr, false);
        FUZZ_CHECK(loss.value().size() == 1 && loss.requires_grad());
        return;
      }
      default:
        GradCheck();
        return;
    }
  }

  // loss = Sum(x * x): grad(x) = 2x; mutating x afterwards makes Backward
  // refuse.
  void GradCheck() {
    const Tensor* p = Pick();
    if (p == nullptr) return;
    const Tensor t = *p;
    const Ref ref = RefOf(&t.dtype());
    if (!RefFloat(ref) || !Readable(t)) return;
    const ag::Variable x = ag::Variable::Leaf(t, true);
    auto y = ag::Mul(x, x);
    FUZZ_CHECK(y.ok());
    auto loss = ag::Sum(*y);
    FUZZ_CHECK(loss.ok());
    auto s = ag::Backward(*loss);
    if (!s.ok()) {
      std::fprintf(stderr, "api_fuzzer: Backward: %s\n", s.ToString().c_str());
      FUZZ_CHECK(false);
    }
    auto g = x.grad();
    FUZZ_CHECK(g.has_value());
    FUZZ_CHECK(Shape(*g) == Shape(t));
    if (Readable(*g)) {
      std::vector<Val> xv = LoadAll(t), gv = LoadAll(*g);
      for (size_t i = 0; i < xv.size(); ++i) {
        auto w = Convert(ref, FloatVal(2 * xv[i].d));
        if (w && std::isfinite(xv[i].d)) FUZZ_CHECK(Same(*w, gv[i]));
      }
    }
    // A Fill within the injectivity budget makes Backward refuse.
    if (t.size() > 0 && Injective(t) && r_.Bool() &&
        Fill(t, Scalar::Int(1)).ok()) {
      auto again = ag::Backward(*loss);
      FUZZ_CHECK(!again.ok() && IsValueError(again));
    }
  }

  // --- DLPack
  void DLPack() {
    const Tensor* p = Pick();
    if (p == nullptr) return;
    const Tensor t = *p;
    if (r_.Bool()) return BadImport();
    const long uses = t.carrier().use_count();
    const auto before = Capture();
    auto m = ToDLPack(t);
    if (HasUserDType(t)) RefusedUserDType(m.status());
    if (!m.ok()) return Failed(m.status(), before);
    Versions(before, nullptr, false);
    DLManagedTensor* managed = *m;
    exported_.insert(t.carrier().get());
    const DLTensor& dl = managed->dl_tensor;
    const std::vector<int64_t> e = Shape(t);
    FUZZ_CHECK(dl.ndim == static_cast<int>(e.size()));
    FUZZ_CHECK(dl.device.device_type == kDLCPU);
    for (size_t i = 0; i < e.size(); ++i) FUZZ_CHECK(dl.shape[i] == e[i]);
    FUZZ_CHECK(t.carrier().use_count() > uses);  // The export holds it.
    const auto* d = t.dtype().AsSimple();
    if (d->bits() % 8 == 0 && t.size() <= kSmall && t.size() > 0) {
      const int64_t eb = d->bits() / 8;
      const auto* base = static_cast<const uint8_t*>(t.carrier()->data());
      ForEachCoord(e, [&](const std::vector<int64_t>& c) {
        __int128 off = 0;
        for (size_t i = 0; i < e.size(); ++i)
          off += static_cast<__int128>(c[i]) * dl.strides[i];
        const uint8_t* got =
            static_cast<const uint8_t*>(dl.data) + dl.byte_offset + off * eb;
        const uint8_t* want =
            base +
            (t.offset() + static_cast<int64_t>(Eval(t.layout(), Colex(e, c)))) *
                eb;
        FUZZ_CHECK(got == want);
      });
    }
    bool kept = false;
    if (r_.Bool()) {
      managed->deleter(managed);
    } else {
      auto u = FromDLPack(managed);
      if (!u.ok()) {
        FUZZ_CHECK(StrataError(u.status()));
        managed->deleter(managed);  // Still ours.
      } else {
        FUZZ_CHECK(Shape(*u) == e);
        FUZZ_CHECK(&u->dtype() == &t.dtype() || d == dtypes::Bool());
        if (Readable(t) && Readable(*u) && &u->dtype() == &t.dtype()) {
          std::vector<Val> a = LoadAll(t), b = LoadAll(*u);
          for (size_t i = 0; i < a.size(); ++i) FUZZ_CHECK(Same(a[i], b[i]));
        }
        if (r_.Bool()) {
          Keep(*u);
          kept = true;
        }
      }
    }
    // Once the export (and the import, unless kept) is gone, the count is back.
    if (!kept) FUZZ_CHECK(t.carrier().use_count() == uses);
  }

  // A producer's tensor FromDLPack must refuse: its deleter must not run.
  void BadImport() {
    static int64_t deleted = 0;
    struct Ctx {
      DLManagedTensor m;
      int64_t shape[2];
      int64_t strides[2];
      float data[4];
    };
    auto* ctx = new Ctx{};
    ctx->m.manager_ctx = ctx;
    ctx->m.deleter = [](DLManagedTensor* m) {
      ++deleted;
      delete static_cast<Ctx*>(m->manager_ctx);
    };
    DLTensor& dl = ctx->m.dl_tensor;
    dl.data = ctx->data;
    dl.device = {kDLCPU, 0};
    dl.ndim = 2;
    dl.shape = ctx->shape;
    dl.strides = ctx->strides;
    ctx->shape[0] = 2;
    ctx->shape[1] = 2;
    ctx->strides[0] = 2;
    ctx->strides[1] = 1;
    dl.dtype = {kDLFloat, 32, 1};
    bool bad = true;
    switch (r_.Range(0, 5)) {
      case 0:
        dl.device = {kDLCUDA, 0};
        break;
      case 1:
        dl.dtype = {kDLFloat, 7, 1};
        break;
      case 2:
        ctx->shape[1] = -1;
        break;
      case 3:
        dl.dtype = {kDLComplex, 64, 1};
        break;
      case 4:
        dl.dtype = {kDLFloat, 32, 4};
        break;
      default:
        bad = false;
        ctx->strides[1] = r_.Range(-1, 1);
        break;
    }
    const int64_t was = deleted;
    auto u = FromDLPack(&ctx->m);
    if (bad) FUZZ_CHECK(!u.ok());
    if (!u.ok()) {
      FUZZ_CHECK(StrataError(u.status()));
      FUZZ_CHECK(deleted == was);
      ctx->m.deleter(&ctx->m);
      return;
    }
    FUZZ_CHECK(deleted == was);
    auto v = GetItem(*u, IntTuple::Flat({1, 1}));
    FUZZ_CHECK(v.ok());
    if (r_.Bool()) Keep(*u);
  }

  // --- quantization
  void Quantize() {
    const Tensor* p = Pick();
    if (p == nullptr) return;
    const Tensor t = *p;
    if (!Small(t)) return;
    const CompoundDType* formats[] = {dtypes::MXFP8E4M3(),
                                      dtypes::MXFP4(),
                                      dtypes::NVFP4(),
                                      dtypes::NVFP4TS(),
                                      dtypes::NVFP4TSRecip(),
                                      dtypes::FP8E4M3Tensorwise(),
                                      dtypes::FP8E4M3Rowwise(),
                                      dtypes::FP8E4M3Block1x128(),
                                      dtypes::FP8E4M3Block128x128(),
                                      dtypes::Q8_0(),
                                      dtypes::Q4_0()};
    const CompoundDType* f = formats[r_.Range(0, 10)];
    // A mode, or the format's own blocks (refused where it has a chosen
    // mode).
    const int64_t mode =
        r_.Range(0, 3) == 0
            ? kBlocksOfTheFormat
            : r_.Arg(0, static_cast<int64_t>(Shape(t).size()) - 1);
    const ScaleLayout layout =
        r_.Bool() ? ScaleLayout::kRowMajor : ScaleLayout::kSwizzled128x4;
    const auto before = Capture();
    const int created = HostCarrier::created();
    auto q = QuantizeBlockScaled(t, *f, mode, layout);
    if (!q.ok()) {
      FUZZ_CHECK(HostCarrier::created() == created);
      return Failed(q.status(), before);
    }
    Versions(before, nullptr, false);
    const auto* d = t.dtype().AsSimple();
    FUZZ_CHECK(d == dtypes::Float32() || d == dtypes::Float16() ||
               d == dtypes::BFloat16());
    FUZZ_CHECK(q->num_subtensors() ==
                   static_cast<int>(f->simple_types().size()) &&
               &q->dtype() == f);
    FUZZ_CHECK(Shape(*q) == Shape(t));
    CheckBounds(TensorAccess::representation(*q));
    Keep(*q);
  }

  // A float32 Tensor whose last mode is a multiple of 32 (quantizable).
  void MakeQuantizable() {
    // Sometimes just past a 128-row tile of the swizzled scale layout.
    const int64_t rows =
        r_.Range(0, 3) == 0 ? r_.Range(126, 132) : r_.Range(1, 4);
    const int64_t blocks = r_.Range(1, 5);
    auto t = Zeros(*(r_.Bool() ? dtypes::Float32() : dtypes::BFloat16()),
                   {rows, 32 * blocks});
    FUZZ_CHECK(t.ok());
    if (t->dtype().AsSimple() == dtypes::Float32()) {
      auto* data = static_cast<uint8_t*>(t->carrier()->mutable_data());
      const uint8_t seed = r_.Byte();
      for (int64_t k = 0; k < t->size(); ++k)
        StoreIndex(Ref::kF32, data, k, (k * seed) % 23 - 11);
    }
    // Every format takes a (rows, 32k) Tensor: blocks along dim 1, or the
    // format's own (q8_0 and q4_0 along the last; 128x128 ragged).
    const CompoundDType* f =
        r_.Bool() ? dtypes::MXFP8E4M3()
                  : (r_.Bool() ? dtypes::NVFP4TS()
                               : (r_.Bool() ? dtypes::Q4_0()
                                            : dtypes::FP8E4M3Block128x128()));
    const bool fixed =
        f == dtypes::Q4_0() || f == dtypes::FP8E4M3Block128x128();
    auto q =
        QuantizeBlockScaled(*t, *f, fixed ? kBlocksOfTheFormat : 1,
                            r_.Bool() && !fixed ? ScaleLayout::kSwizzled128x4
                                                : ScaleLayout::kRowMajor);
    FUZZ_CHECK(q.ok());
    Keep(r_.Bool() ? *q : *t);
  }

  // --- values out (values.md): Dequantize, DequantizeInto, Levels,
  // LevelBytes, Relayout, Requantize on whatever the pool holds. Each is an
  // error with no effect, or a result whose laws hold: a relayout's values are
  // the source's, a requantized Tensor has the target's dtype and shape.
  void Values() {
    const Tensor* p = Pick();
    if (p == nullptr) return;
    const Tensor t = *p;
    if (!Small(t)) return;
    const auto before = Capture();
    const SimpleDType* targets[] = {dtypes::Float32(), dtypes::BFloat16(),
                                    dtypes::Float16(), dtypes::Int8()};
    switch (r_.Range(0, 4)) {
      case 0: {
        auto d = Dequantize(t, *targets[r_.Range(0, 3)]);
        if (!d.ok()) return Failed(d.status(), before);
        Versions(before, nullptr, false);
        FUZZ_CHECK(Shape(*d) == Shape(t));
        return Keep(*d);
      }
      case 1: {
        auto levels = Levels(t);
        if (!levels.ok()) return Failed(levels.status(), before);
        FUZZ_CHECK(static_cast<int>(levels->size()) == t.num_subtensors());
        const Tensor level = (*levels)[r_.Range(0, levels->size() - 1)];
        levels->clear();
        // The level's own reference to its carrier is no effect of LevelBytes.
        const auto with_level = Capture();
        auto bytes = LevelBytes(level);
        if (!bytes.ok()) return Failed(bytes.status(), with_level);
        Versions(before, nullptr, false);
        return Keep(r_.Bool() ? level : *bytes);
      }
      case 2: {
        auto moved = Relayout(t, r_.Bool() ? ScaleLayout::kRowMajor
                                           : ScaleLayout::kSwizzled128x4);
        if (!moved.ok()) return Failed(moved.status(), before);
        Versions(before, nullptr, false);
        auto a = Dequantize(t, *dtypes::Float32());
        auto b = Dequantize(*moved, *dtypes::Float32());
        FUZZ_CHECK(a.ok() == b.ok());
        if (a.ok()) {
          const auto* x = static_cast<const uint32_t*>(a->carrier()->data());
          const auto* y = static_cast<const uint32_t*>(b->carrier()->data());
          for (int64_t i = 0; i < a->size(); ++i) {
            const bool nan_x = (x[i] & 0x7FFFFFFFu) > 0x7F800000u;
            const bool nan_y = (y[i] & 0x7FFFFFFFu) > 0x7F800000u;
            FUZZ_CHECK(x[i] == y[i] || (nan_x && nan_y));
          }
        }
        return Keep(*moved);
      }
      case 3: {
        const CompoundDType* formats[] = {
            dtypes::MXFP8E4M3(), dtypes::NVFP4TS(), dtypes::FP8E4M3Tensorwise(),
            dtypes::FP8E4M3Block128x128UE8M0(), dtypes::Q4_0()};
        const CompoundDType* f = formats[r_.Range(0, 4)];
        QuantizeOptions options;
        options.blocked_dim =
            r_.Bool() ? kBlocksOfTheFormat
                      : r_.Arg(0, static_cast<int64_t>(Shape(t).size()) - 1);
        options.scale_layout =
            r_.Bool() ? ScaleLayout::kRowMajor : ScaleLayout::kSwizzled128x4;
        options.max_chunk_bytes = r_.Range(0, 3) == 0 ? 0 : r_.Range(1, 4096);
        auto q = Requantize(t, *f, options);
        if (!q.ok()) return Failed(q.status(), before);
        Versions(before, nullptr, false);
        FUZZ_CHECK(&q->dtype() == f && Shape(*q) == Shape(t));
        CheckBounds(TensorAccess::representation(*q));
        return Keep(*q);
      }
      default: {
        const Tensor* o = Pick();
        if (o == nullptr) return;
        const Tensor out = *o;
        const absl::Status s = DequantizeInto(out, t);
        if (!s.ok()) return Failed(s, before);
        Versions(before, out.carrier().get(), false);
        return;
      }
    }
  }

  // --- the codec
  void Codec() {
    const Tensor* p = Pick();
    if (p == nullptr) return;
    const Tensor t = *p;
    DumpOptions options;
    options.include_data = r_.Bool();
    if (options.include_data) {
      for (const Subtensor& s : TensorAccess::representation(t).subtensors()) {
        // A released carrier dumps without data and replays zero-filled.
        if (s.carrier->size() > (1 << 14) || s.carrier->released())
          options.include_data = false;
      }
    }
    // Replay knows registered dtypes only.
    for (const Subtensor& s : TensorAccess::representation(t).subtensors()) {
      if (!BuiltinSimple(s.storage_dtype)) return;
    }
    const auto before = Capture();
    const std::string text = ToText(ToProto(t, options));
    auto parsed = ParseText(text);
    FUZZ_CHECK(parsed.ok());
    auto again = Replay(*parsed);
    Versions(before, nullptr, false);
    FUZZ_CHECK(Capture() == before);
    if (!again.ok()) {
      std::fprintf(stderr, "api_fuzzer: replay of a dump failed: %s\n%s\n",
                   again.status().ToString().c_str(), text.c_str());
      FUZZ_CHECK(false);
    }
    const std::string text2 = ToText(ToProto(*again, options));
    if (text2 != text) {
      std::fprintf(stderr,
                   "api_fuzzer: dump->replay->dump differs:\n%s\n--\n%s\n",
                   text.c_str(), text2.c_str());
      FUZZ_CHECK(false);
    }
    FUZZ_CHECK(Shape(*again) == Shape(t));
    if (options.include_data && Readable(t) && Readable(*again)) {
      std::vector<Val> a = LoadAll(t), b = LoadAll(*again);
      for (size_t i = 0; i < a.size(); ++i) FUZZ_CHECK(Same(a[i], b[i]));
    }
    if (r_.Bool()) Keep(*again);
  }

  void Release() {
    const Tensor* p = Pick();
    if (p == nullptr || (r_.Byte() & 3) != 0) return;
    // A carrier exported through DLPack stays readable by the importer:
    // NOTE [ Pinned storage ].
    p->carrier()->Release();
    FUZZ_CHECK(p->carrier()->data() == nullptr);
  }

  void Step() {
    const int64_t action = r_.Range(0, 19);
    if (Tracing()) {
      std::fprintf(stderr,
                   "step action %lld; pool:", static_cast<long long>(action));
      for (const Tensor& t : pool_) {
        std::fprintf(stderr, " [%s %s@%lld%s c%lld]", t.dtype().name().c_str(),
                     t.layout().ToString().c_str(),
                     static_cast<long long>(t.offset()),
                     std::string(t.carrier()->class_name()).c_str(),
                     static_cast<long long>(t.carrier()->size()));
      }
      std::fprintf(stderr, "\n");
    }
    switch (action) {
      case 0:
      case 1:
      case 2:
        return Create();
      case 3:
      case 4:
      case 5:
      case 6:
        return View();
      case 7:
        return ItemOps();
      case 8:
        return FillOp();
      case 9:
        return CopyOp();
      case 10:
      case 11:
        return BinaryOps();
      case 12:
        return SumOp();
      case 13:
        return MoveOps();
      case 14:
        return ScatterOp();
      case 15:
        return Autograd();
      case 16:
        return DLPack();
      case 17:
        switch (r_.Range(0, 2)) {
          case 0:
            return Quantize();
          case 1:
            return MakeQuantizable();
          default:
            return Values();
        }
      case 18:
        return Codec();
      default:
        return Release();
    }
  }

  Reader& r_;
  std::vector<Tensor> pool_;
  std::vector<ag::Variable> vars_;
  std::set<const Carrier*> exported_;  // Carriers exported through DLPack.
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    Reader reader(data, size);
    Session session(reader);
    session.Run();
  }
  // Every ExternalCarrier's deleter ran, exactly once.
  FUZZ_CHECK(g_external_live == 0);
  return 0;
}
