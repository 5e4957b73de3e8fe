#include "tests/test_util.h"

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "gtest/gtest.h"
#include "layout/int_tuple.h"
#include "ops/ops.h"
#include "ops/scalar.h"

namespace strata {
namespace testing {

std::vector<int64_t> RowMajorDecode(int64_t index,
                                    const std::vector<int64_t>& extents) {
  std::vector<int64_t> c(extents.size());
  for (size_t k = extents.size(); k-- > 0;) {
    c[k] = index % extents[k];
    index /= extents[k];
  }
  return c;
}

Tensor Iota(absl::string_view layout, const SimpleDType* dtype, int64_t offset,
            double scale) {
  const Layout l = L(layout);
  auto carrier = *HostCarrier::Create(*dtype, offset + l.cosize());
  Tensor t = *Tensor::Create(carrier, offset, l);
  for (int64_t k = 0; k < t.size(); ++k) {
    const IntTuple c = IntTuple::Flat(RowMajorDecode(k, t.shape()));
    EXPECT_TRUE(SetItem(t, c, Scalar::Float(scale * k)).ok());
  }
  return t;
}

std::vector<int64_t> Reached(const Tensor& t, const Coord& coord) {
  const Representation& rep = TensorAccess::representation(t);
  const Layout& l0 = rep.subtensor(0).placement;
  const IntTuple c =
      l0.shape().is_leaf() ? IntTuple(coord[0]) : IntTuple::Flat(coord);
  std::vector<int64_t> out = {rep.subtensor(0).offset + *l0.Crd2Idx(c)};
  if (rep.num_levels() == 1) return out;
  int64_t x = *rep.adjacent_layouts()[0].Crd2Idx(c);
  for (int level = 1; level < rep.num_levels(); ++level) {
    const Subtensor& s = rep.subtensor(level);
    EXPECT_GE(x, 0);
    EXPECT_LT(x, s.placement.size());
    out.push_back(s.offset + s.placement(x));
    if (level + 1 < rep.num_levels()) x = rep.adjacent_layouts()[level](x);
  }
  return out;
}

void ForEachCoord(const std::vector<int64_t>& extents,
                  const std::function<void(const Coord&)>& body) {
  for (int64_t e : extents) {
    if (e == 0) return;
  }
  Coord c(extents.size(), 0);
  while (true) {
    body(c);
    size_t k = 0;
    while (k < c.size() && ++c[k] == extents[k]) c[k++] = 0;
    if (k == c.size()) return;
  }
}

std::string Describe(const Tensor& t) {
  const Representation& rep = TensorAccess::representation(t);
  std::string out;
  for (int i = 0; i < rep.num_levels(); ++i) {
    absl::StrAppend(&out, i ? " | " : "", "L", i, "=",
                    rep.subtensor(i).placement.ToString(), "@",
                    rep.subtensor(i).offset);
    if (i + 1 < rep.num_levels()) {
      absl::StrAppend(&out, " S", i, "=", rep.adjacent_layouts()[i].ToString());
    }
  }
  return out;
}

// Checks NOTE [ The view invariant ] exhaustively.
void ExpectInvariant(const Tensor& source, const Tensor& view,
                     const std::function<Coord(const Coord&)>& sigma) {
  ASSERT_EQ(view.num_subtensors(), source.num_subtensors());
  ForEachCoord(view.shape(), [&](const Coord& c) {
    ASSERT_EQ(Reached(view, c), Reached(source, sigma(c)))
        << "view " << Describe(view) << " of " << Describe(source);
  });
}

Tensor RandomNormal(const std::vector<int64_t>& shape, uint32_t seed,
                    float stddev) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  auto carrier = HostCarrier::Create(*dtypes::Float32(), n);
  EXPECT_TRUE(carrier.ok()) << carrier.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  float* data = static_cast<float*>((*carrier)->mutable_data());
  for (int64_t i = 0; i < n; ++i) data[i] = normal(rng);
  auto t =
      Tensor::Create(*carrier, 0, *Layout::RowMajor(IntTuple::Flat(shape)));
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

std::string TempPath(absl::string_view name) {
  return absl::StrCat(::testing::TempDir(), "/", name);
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace testing
}  // namespace strata
