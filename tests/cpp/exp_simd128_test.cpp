// The softmax's vector exp (kernels/simd128/exp_simd128.h) against std::exp in double precision: its
// accuracy over the range a softmax uses, its exact zeros (masked keys get no weight at all) and
// its special values. SIMD builds only.
#include <gtest/gtest.h>
#include <wasm_simd128.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/simd128/exp_simd128.h"

namespace webattention::kernels {
namespace {

// exp_f32x4 on (a, b, c, d), lane by lane.
void exp4(const float (&in)[4], float (&out)[4]) {
  alignas(16) float x[4] = {in[0], in[1], in[2], in[3]};
  alignas(16) float y[4];
  wasm_v128_store(y, exp_f32x4(wasm_v128_load(x)));
  std::copy(y, y + 4, out);
}

float exp1(float x) {
  float out[4];
  exp4({x, x, x, x}, out);
  return out[0];
}

TEST(ExpSimd128, WithinTwoUlpFromMinus87ToZero) {
  // exp(-87.3) ≈ 1.2e-38 is still a normal float; everything in between must be within 2 ulp.
  double worst_ulp = 0;
  float worst_x = 0;
  constexpr int kSteps = 1 << 20;
  for (int i = 0; i <= kSteps; ++i) {
    const float x = -87.3f * static_cast<float>(i) / kSteps;
    const double want = std::exp(static_cast<double>(x));
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    const double error = std::abs(static_cast<double>(exp1(x)) - want) / ulp;
    if (error > worst_ulp) worst_ulp = error, worst_x = x;
  }
  EXPECT_LE(worst_ulp, 2.0) << "at x = " << worst_x;
}

TEST(ExpSimd128, ExactValuesAtTheEnds) {
  EXPECT_EQ(exp1(0.0f), 1.0f);
  EXPECT_EQ(exp1(-0.0f), 1.0f);
  // Masked scores (-inf) and anything far below: exactly +0, never a tiny positive weight.
  for (float x : {-87.9f, -88.0f, -100.0f, -1e30f, -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::lowest()}) {
    const float y = exp1(x);
    EXPECT_EQ(y, 0.0f) << "x = " << x;
    EXPECT_FALSE(std::signbit(y)) << "x = " << x;
  }
  // Between the two: never negative, never above the smallest normal float.
  for (float x = -87.9f; x < -87.3f; x += 0.01f) {
    const float y = exp1(x);
    EXPECT_GE(y, 0.0f) << "x = " << x;
    EXPECT_LE(y, std::numeric_limits<float>::min() * 1.1f) << "x = " << x;
  }
}

TEST(ExpSimd128, NanPropagates) {
  EXPECT_TRUE(std::isnan(exp1(std::numeric_limits<float>::quiet_NaN())));
}

TEST(ExpSimd128, LanesAreIndependent) {
  float out[4];
  exp4({0.0f, -1.0f, -std::numeric_limits<float>::infinity(), -10.5f}, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_NEAR(out[1], std::exp(-1.0), 1e-7);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_NEAR(out[3], std::exp(-10.5), 1e-12);
}

}  // namespace
}  // namespace webattention::kernels
