// Scatter (ops.h).
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "dtype/registry.h"
#include "layout/layout.h"
#include "ops/internal/checks.h"
#include "ops/internal/copy_kernel.h"
#include "ops/internal/element_io.h"
#include "ops/internal/iterate.h"
#include "ops/internal/require.h"
#include "ops/ops.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

using ops_internal::AlignedAccess;
using ops_internal::CompactCopy;
using ops_internal::DispatchNative;
using ops_internal::DTypeOf;
using ops_internal::ForEachIndex;
using ops_internal::IsIntegral;
using ops_internal::LoadDouble;
using ops_internal::LoadInt;
using ops_internal::MakeModeAccess;
using ops_internal::MayOverlap;
using ops_internal::ModeAccess;
using ops_internal::RequireData;
using ops_internal::RequireKernelTensor;
using ops_internal::RequireWritable;
using ops_internal::ShapeText;
using ops_internal::StoreDouble;
using ops_internal::StoreInt;

absl::Status Scatter(const Tensor& dst, int64_t dim, const Tensor& index,
                     const Tensor& src) {
  for (const Tensor* t : {&dst, &index, &src}) {
    STRATA_RETURN_IF_ERROR(RequireKernelTensor(*t, "Scatter"));
    STRATA_RETURN_IF_ERROR(RequireData(*t, "Scatter"));
  }
  const SimpleDType& id = DTypeOf(index);
  if (&id != dtypes::Int64() && &id != dtypes::Int32()) {
    return TypeErrorCat("Scatter: index dtype ", id.name(),
                        " is not int64 or int32");
  }
  const std::vector<int64_t> dshape = dst.shape(), ishape = index.shape(),
                             sshape = src.shape();
  const int64_t rank = dshape.size();
  if (static_cast<int64_t>(ishape.size()) != rank ||
      static_cast<int64_t>(sshape.size()) != rank) {
    return ValueErrorCat("Scatter: dst ", ShapeText(dshape), ", index ",
                         ShapeText(ishape), " and src ", ShapeText(sshape),
                         " must have one rank");
  }
  if (dim < 0 || dim >= rank) {
    return ValueErrorCat("Scatter: dim ", dim, " is out of range for rank ",
                         rank);
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (ishape[d] > sshape[d] || (d != dim && ishape[d] > dshape[d])) {
      return ValueErrorCat("Scatter: index shape ", ShapeText(ishape),
                           " exceeds src ", ShapeText(sshape), " or dst ",
                           ShapeText(dshape), " at dim ", d);
    }
  }
  STRATA_RETURN_IF_ERROR(RequireWritable(dst, "Scatter"));
  const auto dmodes = TopLevelModes(dst.layout());
  std::vector<ModeAccess> dst_access =
      AlignedAccess(dst.layout(), ishape, true);
  dst_access[dim] = ModeAccess();  // The index value chooses this coordinate.
  // With no index (an extent of 0), nothing is chosen, and dst's mode may be
  // empty only through another mode, so its table would cost its size.
  const bool no_index =
      std::find(ishape.begin(), ishape.end(), 0) != ishape.end();
  const ModeAccess chosen =
      no_index ? ModeAccess() : MakeModeAccess(dmodes[dim], false);
  const std::array<std::vector<ModeAccess>, 3> ops = {
      AlignedAccess(index.layout(), ishape, true),
      AlignedAccess(src.layout(), ishape, true), dst_access};
  const std::array<int64_t, 3> bases = {index.offset(), src.offset(),
                                        dst.offset()};
  const void* idx = index.carrier()->data();
  // Pass 1: every index value in range, before any write.
  absl::Status bad;
  int64_t position = 0;
  const int64_t limit = dshape[dim];
  auto report = [&](int64_t v) {
    bad = ValueErrorCat("Scatter: index value ", v, " at row-major position ",
                        position, " is outside [0, ", limit, ") of dst dim ",
                        dim);
  };
  if (&id == dtypes::Int64()) {
    const int64_t* ix = static_cast<const int64_t*>(idx);
    ForEachIndex<3>(ishape, ops, bases, [&](const std::array<int64_t, 3>& i) {
      const int64_t v = ix[i[0]];
      if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(limit) && bad.ok())
        report(v);
      ++position;
    });
  } else {
    ForEachIndex<3>(ishape, ops, bases, [&](const std::array<int64_t, 3>& i) {
      const int64_t v = LoadInt(id, idx, i[0]);
      if ((v < 0 || v >= limit) && bad.ok()) report(v);
      ++position;
    });
  }
  STRATA_RETURN_IF_ERROR(bad);
  // Pass 2: the writes (src may share dst's carrier: stage it first).
  Tensor from = src;
  if (MayOverlap(dst, src)) {
    STRATA_ASSIGN_OR_RETURN(from, CompactCopy(src, DTypeOf(src)));
  }
  std::array<std::vector<ModeAccess>, 3> ops2 = ops;
  ops2[1] = AlignedAccess(from.layout(), ishape, true);
  const std::array<int64_t, 3> bases2 = {index.offset(), from.offset(),
                                         dst.offset()};
  const SimpleDType& dd = DTypeOf(dst);
  const SimpleDType& sd = DTypeOf(from);
  const void* s = from.carrier()->data();
  void* o = dst.carrier()->mutable_data();
  bool done = false;
  if (&dd == &sd && &id == dtypes::Int64() && chosen.strided()) {
    auto typed = [&](auto tag) {
      using T = decltype(tag);
      T* out = static_cast<T*>(o);
      const T* in = static_cast<const T*>(s);
      const int64_t* ix = static_cast<const int64_t*>(idx);
      const int64_t step = chosen.stride;
      ForEachIndex<3>(ishape, ops2, bases2,
                      [&](const std::array<int64_t, 3>& i) {
                        out[i[2] + ix[i[0]] * step] = in[i[1]];
                      });
      done = true;
    };
    DispatchNative(dd, typed);
  }
  if (done) {
    dst.carrier()->BumpVersion();
    return absl::OkStatus();
  }
  ForEachIndex<3>(ishape, ops2, bases2, [&](const std::array<int64_t, 3>& i) {
    const int64_t target = i[2] + chosen.at(LoadInt(id, idx, i[0]));
    if (IsIntegral(dd) && IsIntegral(sd)) {
      StoreInt(dd, o, target, LoadInt(sd, s, i[1]));
    } else {
      StoreDouble(dd, o, target, LoadDouble(sd, s, i[1]));
    }
  });
  dst.carrier()->BumpVersion();
  return absl::OkStatus();
}

}  // namespace strata
