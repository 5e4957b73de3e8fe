// QuantizeBlockScaled against golden bytes that an independent reference
// wrote from ../shared/design/formats.md section 2 (tools/peer/
// formats_reference.py, numpy, by tools/peer/make_format_goldens.py): every
// case of tests/golden/formats/cases.txt gives the reference's value, scale
// and tensor-scale bytes exactly.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "ops/quantize.h"

namespace strata {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string CarrierBytes(const Tensor& t, int level) {
  const Subtensor& s = TensorAccess::representation(t).subtensor(level);
  const int64_t bits = s.storage_dtype->bits();
  const int64_t bytes = (s.carrier->size() * bits + 7) / 8;
  return std::string(static_cast<const char*>(s.carrier->data()), bytes);
}

TEST(FormatGoldensTest, EveryCaseGivesTheReferenceBytes) {
  const std::string dir = "tests/golden/formats/";
  std::istringstream cases(ReadFile(dir + "cases.txt"));
  std::string line;
  int count = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = absl::StrSplit(line, ' ');
    ASSERT_EQ(f.size(), 5u) << line;
    SCOPED_TRACE(line);
    const std::string& name = f[0];
    auto format = DTypeRegistry::Global().Lookup(f[1]);
    ASSERT_TRUE(format.ok()) << format.status();
    std::vector<int64_t> shape;
    int64_t n = 1;
    for (absl::string_view e : absl::StrSplit(f[2], ',')) {
      int64_t v;
      ASSERT_TRUE(absl::SimpleAtoi(e, &v));
      shape.push_back(v);
      n *= v;
    }
    int64_t mode = kBlocksOfTheFormat;
    if (f[3] != "-") {
      ASSERT_TRUE(absl::SimpleAtoi(f[3], &mode));
      if (mode < 0) mode += static_cast<int64_t>(shape.size());
    }
    const ScaleLayout layout = f[4] == "swizzled_128x4"
                                   ? ScaleLayout::kSwizzled128x4
                                   : ScaleLayout::kRowMajor;
    const std::string input = ReadFile(dir + name + ".input");
    ASSERT_EQ(static_cast<int64_t>(input.size()), 4 * n);
    auto carrier = *HostCarrier::Create(*dtypes::Float32(), n);
    std::memcpy(carrier->mutable_data(), input.data(), input.size());
    std::vector<IntTuple> extents(shape.begin(), shape.end());
    const Tensor src = *Tensor::Create(
        carrier, 0, *Layout::RowMajor(IntTuple::Tuple(extents)));
    auto q = QuantizeBlockScaled(src, *(*format)->AsCompound(), mode, layout);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(CarrierBytes(*q, 0), ReadFile(dir + name + ".values"));
    EXPECT_EQ(CarrierBytes(*q, 1), ReadFile(dir + name + ".scales"));
    if (q->num_subtensors() == 3) {
      EXPECT_EQ(CarrierBytes(*q, 2), ReadFile(dir + name + ".tensor_scale"));
    }
    ++count;
  }
  EXPECT_GE(count, 40);
}

}  // namespace
}  // namespace strata
