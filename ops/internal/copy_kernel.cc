#include "ops/internal/copy_kernel.h"

#include <array>
#include <cstdint>
#include <vector>

#include "carrier/carrier.h"
#include "ops/internal/checks.h"
#include "ops/internal/element_io.h"
#include "ops/internal/iterate.h"
#include "ops/internal/transpose.h"
#include "ops/ops.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace ops_internal {

// dst[c] = src[c] for same-shaped views (src broadcast already aligned by
// access).
void CopyKernel(const Tensor& dst, const std::vector<int64_t>& extents,
                const std::vector<ModeAccess>& dst_access, const Tensor& src,
                const std::vector<ModeAccess>& src_access) {
  const SimpleDType& dd = DTypeOf(dst);
  const SimpleDType& sd = DTypeOf(src);
  void* out = dst.carrier()->mutable_data();
  const void* in = src.carrier()->data();
  const std::array<std::vector<ModeAccess>, 2> ops = {dst_access, src_access};
  const std::array<int64_t, 2> bases = {dst.offset(), src.offset()};
  if (&dd == &sd && dd.bits() >= 8) {
    auto typed = [&](auto tag) {
      using T = decltype(tag);
      T* o = static_cast<T*>(out);
      const T* s = static_cast<const T*>(in);
      // dst unit-stride in its inner mode, src in another: a transposing
      // copy (NOTE [ Blocked transposing copy ] in transpose.cc).
      const size_t r = extents.size();
      if (r >= 2 && dst_access[r - 1].strided() &&
          dst_access[r - 1].stride == 1 && src_access[r - 2].strided() &&
          src_access[r - 2].stride == 1 && src_access[r - 1].strided() &&
          dst_access[r - 2].strided() && src_access[r - 1].stride != 1) {
        const int64_t rows = extents[r - 2], cols = extents[r - 1];
        const int64_t ds = dst_access[r - 2].stride,
                      ss = src_access[r - 1].stride;
        std::vector<int64_t> outer(extents.begin(), extents.end() - 2);
        std::array<std::vector<ModeAccess>, 2> outer_ops = {
            std::vector<ModeAccess>(dst_access.begin(), dst_access.end() - 2),
            std::vector<ModeAccess>(src_access.begin(), src_access.end() - 2)};
        ForEachIndex<2>(
            outer, outer_ops, bases, [&](const std::array<int64_t, 2>& b) {
              TransposeCopy(o + b[0], s + b[1], ds, ss, rows, cols, sizeof(T));
            });
        return;
      }
      ForEachIndex<2>(
          extents, ops, bases,
          [&](const std::array<int64_t, 2>& i) { o[i[0]] = s[i[1]]; });
    };
    if (DispatchNative(dd, typed)) return;
    // The other whole-byte dtypes (16-bit and 8-bit floats, bool) copy
    // their bits.
    if (dd.bits() == 16 || dd.bits() == 8) {
      if (dd.bits() == 16) {
        typed(uint16_t{});
      } else {
        typed(uint8_t{});
      }
      return;
    }
  }
  if (IsIntegral(dd) && IsIntegral(sd)) {
    ForEachIndex<2>(extents, ops, bases, [&](const std::array<int64_t, 2>& i) {
      StoreInt(dd, out, i[0], LoadInt(sd, in, i[1]));
    });
  } else {
    ForEachIndex<2>(extents, ops, bases, [&](const std::array<int64_t, 2>& i) {
      StoreDouble(dd, out, i[0], LoadDouble(sd, in, i[1]));
    });
  }
}

absl::StatusOr<Tensor> NewCompact(const SimpleDType& dtype,
                                  absl::Span<const int64_t> shape,
                                  bool zeroed) {
  for (int64_t e : shape) {
    if (e < 0) return ValueErrorCat("negative extent ", e);
  }
  STRATA_ASSIGN_OR_RETURN(
      Layout layout,
      Layout::RowMajor(shape.size() == 1 ? IntTuple(shape[0])
                                         : IntTuple::Flat(shape)));
  STRATA_ASSIGN_OR_RETURN(
      auto carrier,
      zeroed ? HostCarrier::Create(dtype, layout.size())
             : HostCarrier::CreateForOverwrite(dtype, layout.size()));
  return Tensor::Create(carrier, 0, layout);
}

absl::StatusOr<Tensor> CompactCopy(const Tensor& a, const SimpleDType& dtype) {
  const std::vector<int64_t> shape = a.shape();
  // The copy writes every value; packed dtypes would leave the spare bits of
  // a last byte unwritten, so they start from zeros.
  STRATA_ASSIGN_OR_RETURN(Tensor out, dtype.bits() % 8 == 0
                                          ? NewCompact(dtype, shape, false)
                                          : Zeros(dtype, shape));
  CopyKernel(out, shape, AlignedAccess(out.layout(), shape), a,
             AlignedAccess(a.layout(), shape));
  return out;
}

}  // namespace ops_internal
}  // namespace strata
