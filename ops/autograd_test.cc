#include "ops/autograd.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "util/errors.h"
#include "views/views.h"

namespace strata {
namespace {

using autograd::Variable;

Tensor Random(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t = *Zeros(*dtypes::Float64(), shape);
  std::mt19937_64 rng(seed);
  auto* d = static_cast<double*>(t.carrier()->mutable_data());
  for (int64_t i = 0; i < t.size(); ++i) {
    d[i] = std::uniform_real_distribution<double>(0.5, 2.0)(rng) *
           (i % 2 ? 1 : -1);
  }
  return t;
}

// f maps leaf Variables to a scalar loss. Checks every leaf's gradient against
// central finite differences of f's value.
void ExpectGradientsMatch(
    std::vector<Tensor> inputs,
    const std::function<absl::StatusOr<Variable>(std::vector<Variable>&)>& f) {
  std::vector<Variable> leaves;
  for (const Tensor& t : inputs) leaves.push_back(Variable::Leaf(t, true));
  auto loss = f(leaves);
  ASSERT_TRUE(loss.ok()) << loss.status();
  ASSERT_TRUE(autograd::Backward(*loss).ok());
  auto value_at = [&](void) -> double {
    std::vector<Variable> fresh;
    for (const Tensor& t : inputs) fresh.push_back(Variable::Leaf(t, false));
    auto l = f(fresh);
    EXPECT_TRUE(l.ok()) << l.status();
    return GetItem(l->value(), IntTuple::Tuple({}))->as_double();
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    ASSERT_TRUE(leaves[k].grad().has_value()) << "input " << k;
    const Tensor grad = *Contiguous(*leaves[k].grad());
    auto* x = static_cast<double*>(inputs[k].carrier()->mutable_data());
    const auto* g = static_cast<const double*>(grad.carrier()->data());
    ASSERT_EQ(grad.size(), inputs[k].size());
    for (int64_t i = 0; i < inputs[k].size(); ++i) {
      const double saved = x[i], h = 1e-6;
      x[i] = saved + h;
      const double up = value_at();
      x[i] = saved - h;
      const double down = value_at();
      x[i] = saved;
      EXPECT_NEAR(g[i], (up - down) / (2 * h), 1e-5 * (1 + std::fabs(g[i])))
          << "input " << k << " element " << i;
    }
  }
}

absl::StatusOr<Variable> Total(const absl::StatusOr<Variable>& v) {
  if (!v.ok()) return v.status();
  return autograd::Sum(*v);
}

TEST(AutogradTest, ArithmeticWithBroadcasting) {
  ExpectGradientsMatch({Random({3, 4}, 1), Random({4}, 2)}, [](auto& v) {
    return Total(autograd::Add(v[0], v[1]));
  });
  ExpectGradientsMatch({Random({3, 4}, 3), Random({3, 1}, 4)}, [](auto& v) {
    return Total(autograd::Sub(v[0], v[1]));
  });
  ExpectGradientsMatch({Random({2, 3}, 5), Random({1, 3}, 6)}, [](auto& v) {
    return Total(autograd::Mul(v[0], v[1]));
  });
  ExpectGradientsMatch({Random({2, 3}, 7), Random({3}, 8)}, [](auto& v) {
    return Total(autograd::Div(v[0], v[1]));
  });
  ExpectGradientsMatch({Random({5}, 9)},
                       [](auto& v) { return Total(autograd::Neg(v[0])); });
}

TEST(AutogradTest, SumAlongModesAndCast) {
  ExpectGradientsMatch({Random({2, 3, 4}, 10)},
                       [](auto& v) -> absl::StatusOr<Variable> {
                         auto s = autograd::Sum(v[0], std::vector<int64_t>{1});
                         if (!s.ok()) return s.status();
                         auto sq = autograd::Mul(*s, *s);
                         return Total(sq);
                       });
  // Cast: the gradient flows back in the source dtype (finite differences
  // through a float32 rounding would be noise, so check it exactly).
  Variable x = Variable::Leaf(Random({4}, 11));
  auto loss = Total(autograd::Cast(x, *dtypes::Float32()));
  ASSERT_TRUE(loss.ok());
  ASSERT_TRUE(autograd::Backward(*loss).ok());
  EXPECT_EQ(&x.grad()->dtype(), dtypes::Float64());
  EXPECT_EQ(GetItem(*x.grad(), 2)->as_double(), 1.0);
  EXPECT_TRUE(IsValueError(autograd::Cast(x, *dtypes::Int32()).status()));
}

TEST(AutogradTest, ChainsWithViews) {
  ExpectGradientsMatch(
      {Random({3, 4}, 12), Random({4, 3}, 13)},
      [](auto& v) -> absl::StatusOr<Variable> {
        auto t = autograd::Permute(v[1], std::vector<int64_t>{1, 0});
        if (!t.ok()) return t.status();
        auto p = autograd::Mul(v[0], *t);
        if (!p.ok()) return p.status();
        auto s = autograd::Slice(*p, 1, 1, 4, 2);
        if (!s.ok()) return s.status();
        auto u = autograd::Unsqueeze(*s, 0);
        if (!u.ok()) return u.status();
        auto b = autograd::BroadcastTo(*u, {2, 3, 2});
        if (!b.ok()) return b.status();
        auto r = autograd::Reshape(*b, {12});
        if (!r.ok()) return r.status();
        return Total(autograd::Mul(*r, *r));
      });
  ExpectGradientsMatch(
      {Random({3}, 14)}, [](auto& v) -> absl::StatusOr<Variable> {
        auto b =
            autograd::BroadcastInDim(v[0], {2, 3, 2}, std::vector<int64_t>{1});
        if (!b.ok()) return b.status();
        auto sq = autograd::Squeeze(*autograd::Unsqueeze(*b, 3), 3);
        if (!sq.ok()) return sq.status();
        return Total(autograd::Mul(*sq, *sq));
      });
  ExpectGradientsMatch(
      {Random({4, 4}, 15)}, [](auto& v) -> absl::StatusOr<Variable> {
        // An overlapping as_strided view: windows of 3 along each row.
        auto w = autograd::AsStrided(v[0], *ParseLayout("(4,2,3):(4,1,1)"), 0);
        if (!w.ok()) return w.status();
        return Total(autograd::Mul(*w, *w));
      });
}

TEST(AutogradTest, ASavedCarrierMutatedAfterForwardIsReported) {
  Variable a = Variable::Leaf(Random({3}, 16));
  Variable b = Variable::Leaf(Random({3}, 17));
  auto loss = Total(autograd::Mul(a, b));
  ASSERT_TRUE(loss.ok());
  ASSERT_TRUE(
      SetItem(b.value(), 1, Scalar::Float(5)).ok());  // b's version: 0 -> 1.
  absl::Status s = autograd::Backward(*loss);
  EXPECT_TRUE(IsValueError(s));
  EXPECT_NE(s.message().find(
                "Mul saved carrier 1 (host float64) at version 0; it is now "
                "at version 1"),
            absl::string_view::npos)
      << s;
  EXPECT_FALSE(a.grad().has_value()) << "nothing was computed";
  // Add keeps nothing for backward, so mutating its inputs is harmless.
  auto sum = Total(autograd::Add(a, b));
  ASSERT_TRUE(SetItem(a.value(), 0, Scalar::Float(1)).ok());
  EXPECT_TRUE(autograd::Backward(*sum).ok());
}

TEST(AutogradTest, GradientsAccumulateAndErrorsAreClear) {
  Variable a = Variable::Leaf(Random({2}, 18));
  auto loss = Total(autograd::Add(a, a));
  ASSERT_TRUE(loss.ok());
  ASSERT_TRUE(autograd::Backward(*loss).ok());
  ASSERT_TRUE(autograd::Backward(*loss).ok());
  EXPECT_EQ(GetItem(*a.grad(), 0)->as_double(), 4) << "2 per pass, two passes";
  EXPECT_TRUE(IsValueError(
      autograd::Backward(a.value().size() == 1 ? a : *autograd::Add(a, a))));
  Variable frozen = Variable::Leaf(Random({1}, 19), false);
  EXPECT_TRUE(IsValueError(autograd::Backward(frozen)));
  Variable ints = Variable::Leaf(*Zeros(*dtypes::Int32(), {2}), true);
  EXPECT_TRUE(IsValueError(autograd::Neg(ints).status()));
}

TEST(AutogradTest, BackwardRejectsMultiSubtensorValues) {
  auto values = *HostCarrier::Create(*dtypes::Float8E4M3FN(), 64);
  auto scales = *HostCarrier::Create(*dtypes::Float8E8M0FNU(), 2);
  const Tensor mx = MakeTensor(*Representation::Create(
      dtypes::MXFP8E4M3(),
      {{dtypes::Float8E4M3FN(), values, 0,
        *ParseLayout("(2,(32,1)):(32,(1,32))")},
       {dtypes::Float8E8M0FNU(), scales, 0, *ParseLayout("(2,1):(1,1)")}},
      {*ParseLayout("(2,(32,1)):(1,(0,2))")}));
  Variable leaf = Variable::Leaf(mx, true);
  auto view =
      autograd::Permute(leaf, std::vector<int64_t>{1, 0});  // Views admit it.
  ASSERT_TRUE(view.ok()) << view.status();
  absl::Status s = autograd::Backward(*view);
  EXPECT_TRUE(IsOneSubtensorRequired(s)) << s;
  EXPECT_NE(s.message().find("Backward"), absl::string_view::npos) << s;
  EXPECT_FALSE(leaf.grad().has_value());
}

}  // namespace
}  // namespace strata
