// The SIMD128 quantiser of int8 activations (kernels/simd128/q8_quantise_simd128.h) against the
// scalar rule (Q8Rows::quantise_block, storage::q8_scale): the same scale d, codes and Σ q for
// blocks of every kind, a non-finite value at each position, zeros, ties at ±0.5 and a block
// whose largest magnitude is negative. SIMD builds only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/simd128/q8_quantise_simd128.h"

namespace webattention::kernels {
namespace {

constexpr int kBlock = storage::kQuantBlock;

void expect_same_as_scalar(const std::vector<float>& x, const char* what) {
  std::int8_t want_q[kBlock], got_q[kBlock];
  std::int32_t want_sum = -1, got_sum = -2;
  const float want_d = Q8Rows::quantise_block(x.data(), kBlock, want_q, &want_sum);
  const float got_d = simd128_q8::quantise_block_simd128(x.data(), kBlock, got_q, &got_sum);
  if (std::isnan(want_d)) {
    EXPECT_TRUE(std::isnan(got_d)) << what;
  } else {
    EXPECT_EQ(storage::bits_of(got_d), storage::bits_of(want_d)) << what;
  }
  EXPECT_EQ(got_sum, want_sum) << what;
  for (int i = 0; i < kBlock; ++i) EXPECT_EQ(got_q[i], want_q[i]) << what << ", element " << i;
  const float scale = simd128_q8::q8_scale_simd128(x.data()), scalar = storage::q8_scale(x.data(), kBlock);
  EXPECT_TRUE(std::isnan(scalar) ? std::isnan(scale) : storage::bits_of(scale) == storage::bits_of(scalar)) << what;
}

TEST(Q8QuantiseSimd128, RandomBlocksAsTheScalarRule) {
  std::mt19937 rng(5);
  for (float range : {1e-30f, 1e-3f, 1.0f, 3e4f, 1e38f}) {
    std::uniform_real_distribution<float> dist(-range, range);
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<float> x(kBlock);
      for (float& v : x) v = dist(rng);
      expect_same_as_scalar(x, "random");
    }
  }
}

TEST(Q8QuantiseSimd128, SpecialBlocksAsTheScalarRule) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float special : {inf, -inf, nan}) {
    for (int at = 0; at < kBlock; ++at) {
      std::vector<float> x(kBlock, 0.25f);
      x[at] = special;
      expect_same_as_scalar(x, "non-finite");
    }
  }
  expect_same_as_scalar(std::vector<float>(kBlock, 0.0f), "zeros");
  expect_same_as_scalar(std::vector<float>(kBlock, -0.0f), "negative zeros");
  std::vector<float> ties(kBlock);
  for (int i = 0; i < kBlock; ++i) ties[i] = (i % 2 ? -1.0f : 1.0f) * (static_cast<float>(i) + 0.5f);
  ties[0] = 127.0f;  // d = 1: each x / d is a tie, rounded away from zero
  expect_same_as_scalar(ties, "ties");
  std::vector<float> negative(kBlock, 0.5f);
  negative[17] = -3.0f;  // the largest magnitude negative
  expect_same_as_scalar(negative, "negative maximum");
}

}  // namespace
}  // namespace webattention::kernels
