#include "tools/demo_command.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "carrier/carrier.h"
#include "carrier/carrier_registry.h"
#include "checkpoint/safetensors.h"
#include "core/representation.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "layout/layout.h"
#include "ops/quantize.h"
#include "proto/codec.h"
#include "tools/text_file.h"
#include "util/errors.h"
#include "util/status_macros.h"
#include "views/shard_plan.h"
#include "views/views.h"

namespace strata {
namespace {

// The levels of a Tensor, one line each.
std::string Levels(const Tensor& t, const std::string& indent) {
  const Representation& rep = TensorAccess::representation(t);
  std::string out;
  for (int i = 0; i < rep.num_levels(); ++i) {
    const Subtensor& s = rep.subtensor(i);
    absl::StrAppend(&out, indent, "level ", i, " ", s.storage_dtype->name(),
                    " (", s.carrier->class_name(), " carrier): L_", i, " = ",
                    s.placement.ToString(), " at offset ", s.offset, "\n");
    if (i + 1 < rep.num_levels()) {
      absl::StrAppend(&out, indent, "        S_", i, " = ",
                      rep.adjacent_layouts()[i].ToString(), "\n");
    }
  }
  return out;
}

absl::Status Steps() {
  std::cout << "Strata demo: one logical Tensor built from typed storage, "
               "every level exact.\n\n";
  std::cout << "Registered dtypes: "
            << absl::StrJoin(DTypeRegistry::Global().Names(), " ") << "\n"
            << "Carrier classes:   "
            << absl::StrJoin(CarrierClassRegistry::Global().Names(), " ")
            << "\n\n";

  // 1. A conventional Tensor, and a placement its carrier cannot hold.
  STRATA_ASSIGN_OR_RETURN(auto carrier,
                          HostCarrier::Create(*dtypes::Float32(), 32));
  STRATA_ASSIGN_OR_RETURN(const Layout row_major, ParseLayout("(4,8):(8,1)"));
  STRATA_ASSIGN_OR_RETURN(const Tensor plain,
                          Tensor::Create(carrier, 0, row_major));
  std::cout << "1. Tensor::Create(host carrier of 32 float32, offset 0, "
            << row_major.ToString() << ")\n   " << TensorLine(plain) << "\n"
            << "   at offset 4 it is refused: "
            << FormatError(Tensor::Create(carrier, 4, row_major).status())
            << "\n\n";

  // 2. A (1024,256) weight quantized to mxfp8_e4m3 in the 128x4 swizzle.
  constexpr int64_t kRows = 1024, kCols = 256;
  STRATA_ASSIGN_OR_RETURN(
      auto source_carrier,
      HostCarrier::Create(*dtypes::Float32(), kRows * kCols));
  auto* f = static_cast<float*>(source_carrier->mutable_data());
  for (int64_t i = 0; i < kRows * kCols; ++i) {
    f[i] = std::ldexp(std::sin(0.37f * static_cast<float>(i)),
                      static_cast<int>(i / kCols % 7) - 3);
  }
  STRATA_ASSIGN_OR_RETURN(
      const Tensor source,
      Tensor::Create(source_carrier, 0,
                     *Layout::RowMajor(IntTuple::Flat({kRows, kCols}))));
  STRATA_ASSIGN_OR_RETURN(const Tensor weight,
                          QuantizeBlockScaled(source, *dtypes::MXFP8E4M3(), 1,
                                              ScaleLayout::kSwizzled128x4));
  std::cout << "2. QuantizeBlockScaled(float32 (1024,256), mxfp8_e4m3, blocks "
               "of 32 along dim 1, swizzled_128x4):\n"
            << Levels(weight, "   ") << "   " << TensorLine(weight)
            << "  (validated: schema, carriers, placements, the adjacent "
               "range, the block rule)\n\n";

  // 3. An 8-way tensor-parallel shard along the rows; one part as a view.
  STRATA_ASSIGN_OR_RETURN(const ShardPlan plan, PlanShards(weight, 0, 8));
  std::cout << "3. PlanShards(weight, dim 0, 8 parts): granule=" << plan.granule
            << " (a 128-row tile of the swizzle) extent=" << plan.extent
            << " pad=" << plan.pad << "\n";
  for (size_t k = 0; k < plan.parts.size(); ++k) {
    const ShardPart& p = plan.parts[k];
    std::cout << "   part " << k << ": [" << p.begin << "," << p.end << ") "
              << (p.view.ok() ? TensorLine(*p.view)
                              : FormatError(p.view.status()))
              << "\n";
  }
  STRATA_RETURN_IF_ERROR(plan.parts[3].view.status());
  const Tensor& part3 = *plan.parts[3].view;
  std::cout << "   part 3 is a view of the same carriers, its scales a box of "
               "level 1's leaf grid:\n"
            << Levels(part3, "   ") << "\n";

  // 4. A 6-way split of 1024 rows in even thirds-of-a-tile is refused; the
  //    plan and its padding fix it.
  const auto naive = Slice(weight, 0, 171, 342);
  std::cout << "4. An even 6-way split (171 rows a part) is not a view:\n   "
            << FormatError(naive.status()) << "\n";
  STRATA_ASSIGN_OR_RETURN(const ShardPlan six, PlanShards(weight, 0, 6));
  std::cout << "   PlanShards(weight, 0, 6) splits in whole tiles:";
  for (const ShardPart& p : six.parts) {
    std::cout << " [" << p.begin << "," << p.end << ")"
              << (p.view.ok() ? "" : " refused");
  }
  std::cout << "\n   and pad=" << six.pad << " rows would make an even 6-way "
            << "split exact (" << six.pad / 6 << " rows a part)\n\n";

  // 5. Write the weight as a ModelOpt MXFP8 checkpoint; import it back.
  const std::string path =
      absl::StrCat("/tmp/strata-demo-", getpid(), ".safetensors");
  STRATA_RETURN_IF_ERROR(
      WriteSafetensors(path, {{"layers.0.mlp.down_proj.weight", weight}}));
  absl::StatusOr<Safetensors> read_or = ReadSafetensors(path);
  if (!read_or.ok()) {
    unlink(path.c_str());
    return read_or.status();
  }
  const Safetensors& read = *read_or;
  std::cout << "5. WriteSafetensors -> ReadSafetensors (ModelOpt MXFP8: "
               "weight F8_E4M3, weight_scale U8, row-major):\n";
  for (const SafetensorsTensor& t : read.tensors) {
    if (!t.tensor.ok()) return t.tensor.status();
    std::cout << "   " << t.name << ": " << TensorLine(*t.tensor) << "\n"
              << Levels(*t.tensor, "   ");
  }
  const Tensor& imported = *read.tensors[0].tensor;
  const std::string text = ToText(ToProto(imported));
  std::cout << "   its dump names the file instead of copying it:\n";
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StrContains(line, "file") || absl::StrContains(line, "class")) {
      std::cout << "     " << line << "\n";
    }
  }

  // 6. The dump replays by mapping the file again, and dumps to the same
  //    bytes.
  absl::StatusOr<Tensor> replayed = absl::UnknownError("unreplayed");
  if (auto parsed = ParseText(text); parsed.ok()) {
    replayed = Replay(*parsed);
  } else {
    replayed = parsed.status();
  }
  unlink(path.c_str());  // Mappings keep the bytes while their Tensors live.
  STRATA_RETURN_IF_ERROR(replayed.status());
  const bool stable = ToText(ToProto(*replayed)) == text;
  std::cout << "\n6. The dump replayed (the file mapped again): "
            << TensorLine(*replayed)
            << (stable ? "; dumped again: identical bytes\n" : "; MISMATCH\n");
  if (!stable) return absl::InternalError("demo: the dump did not replay");
  return absl::OkStatus();
}

}  // namespace

int DemoCommand() {
  const absl::Status status = Steps();
  if (status.ok()) return 0;
  std::cout << FormatError(status) << "\n";
  return 1;
}

}  // namespace strata
