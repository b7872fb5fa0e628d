// kernels.h's requests for optimised code (request_optimised_linear, request_optimised_attention)
// call the kernels with no work: they change no weight and no later result, whatever the
// weights' storage type, an empty layer included.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.h"

namespace webattention::kernels {
namespace {

std::vector<std::uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<std::uint32_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
  return bits;
}

TEST(OptimisedCodeRequests, ChangeNoWeightAndNoResult) {
  const int out = 44, in = 70, rows = 5;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> W(static_cast<std::size_t>(out) * in), bias(out), x(static_cast<std::size_t>(rows) * in);
  for (float& v : W) v = value(rng);
  for (float& v : bias) v = value(rng);
  for (float& v : x) v = value(rng);
  std::vector<std::uint16_t> half(W.size(), 0x3C00);  // 1.0 in f16
  PackedLinear f32 = pack_linear(W.data(), out, in);
  f32.set_bias(bias.data(), out);
  const PackedLinear f16 = pack_linear(half.data(), StorageType::f16, out, in, StorageType::f16);

  std::vector<float> before(static_cast<std::size_t>(rows) * out), after(before.size());
  const LinearTarget first{&f32, before.data(), out}, second{&f32, after.data(), out};
  linear(x.data(), rows, in, &first, 1);
  request_optimised_linear(f32);
  request_optimised_linear(f16);
  request_optimised_linear(PackedLinear{});
  request_optimised_attention();
  linear(x.data(), rows, in, &second, 1);
  EXPECT_EQ(bits_of(before), bits_of(after));
  for (int n = 0; n < out; ++n) {
    for (int k = 0; k < in; ++k) ASSERT_EQ(f32.weight(n, k), W[static_cast<std::size_t>(n) * in + k]) << n << ", " << k;
  }
}

}  // namespace
}  // namespace webattention::kernels
