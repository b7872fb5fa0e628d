// Large finite inputs (|x| up to 3e38) with int8 and int4 weights and an int8 cache
// (kernels/large_rows.h, docs/attention-math/storage.md §11): the results are the float32 twin's,
// a projection of the weights' stored values or attention over a float32 cache holding the same
// values, where the kernels multiply x by the integer codes and scale after the sum (the sums
// overflowed to ±Inf, then NaN, from |x| ≈ 5e31 in the SIMD128 modules). And such a row projects
// to the same bits alone (a decode step) or among others (a prefill).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "test_util.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

using testing::load_identity;
using testing::random_floats;

constexpr float kHuge[] = {1e32f, -1e36f, 3e38f};

// Rows of x times w (every target the same weights), rows at once or each alone.
std::vector<float> project(const kernels::PackedLinear& w, const std::vector<float>& x, int rows, bool alone) {
  std::vector<float> y(static_cast<std::size_t>(rows) * w.out);
  for (int r = 0; r < rows; r += alone ? 1 : rows) {
    const kernels::LinearTarget target{&w, y.data() + r * w.out, w.out};
    kernels::linear(x.data() + r * w.in, alone ? 1 : rows, w.in, &target, 1);
  }
  return y;
}

TEST(LargeInputs, NarrowWeightsProjectAsTheFloat32TwinOfTheirStoredValues) {
  const int out = 19, in = 70;  // a narrow last panel; blocks of 32, 32 and 6
  std::mt19937 rng(43);
  const std::vector<float> W = random_floats(static_cast<std::size_t>(out) * in, rng, 0.05f);
  const std::vector<float> bias = random_floats(out, rng);
  for (StorageType type : {StorageType::i8, StorageType::q4}) {
    SCOPED_TRACE(storage_type_name(type));
    kernels::PackedLinear w = kernels::pack_linear(W.data(), StorageType::f32, out, in, type);
    std::vector<float> stored(W.size());
    for (int n = 0; n < out; ++n)
      for (int k = 0; k < in; ++k) stored[static_cast<std::size_t>(n) * in + k] = w.weight(n, k);
    kernels::PackedLinear twin = kernels::pack_linear(stored.data(), out, in);
    w.set_bias(bias.data(), out);
    twin.set_bias(bias.data(), out);
    // 7 rows: ordinary ones around large ones (one element each, in each block), so that a
    // prefill's 4-row blocks mix them.
    const int rows = 7;
    std::vector<float> x = random_floats(static_cast<std::size_t>(rows) * in, rng);
    x[1 * in + 3] = kHuge[0];
    x[2 * in + 40] = kHuge[1];
    x[4 * in + 69] = kHuge[2];
    x[5 * in + 0] = -kHuge[2];
    const std::vector<float> y = project(w, x, rows, false), expected = project(twin, x, rows, false);
    const std::vector<float> alone = project(w, x, rows, true);
    for (int r = 0; r < rows; ++r) {
      for (int n = 0; n < out; ++n) {
        const std::size_t i = static_cast<std::size_t>(r) * out + n;
        double magnitude = std::abs(bias[n]);  // Σ |x · w|: what the sum's roundings scale with
        for (int k = 0; k < in; ++k) magnitude += std::abs(static_cast<double>(x[r * in + k]) * stored[n * in + k]);
        ASSERT_TRUE(std::isfinite(expected[i])) << "row " << r << ", column " << n << ": the twin overflows";
        EXPECT_NEAR(y[i], expected[i], 1e-5 * magnitude) << "row " << r << ", column " << n;
        EXPECT_EQ(storage::bits_of(alone[i]), storage::bits_of(y[i])) << "row " << r << ", column " << n << ": alone";
      }
    }
  }
}

// Rows of 40 whose every aligned group of 10 (a head's key or value row) is int8 codes times
// 2^-10 with a ±127 in it: an int8 cache stores them exactly (scale 2^-10). Features 3's and
// 23's codes differ from row to row, so that a huge query element there picks one key clearly.
std::vector<float> int8_exact_rows(int rows, std::mt19937& rng) {
  std::uniform_int_distribution<int> code(-126, 126);
  std::vector<float> x(static_cast<std::size_t>(rows) * 40);
  for (int r = 0; r < rows; ++r) {
    for (int f = 0; f < 40; ++f) x[r * 40 + f] = std::ldexp(static_cast<float>(code(rng)), -10);
    for (int g = 0; g < 4; ++g) x[r * 40 + g * 10 + 7] = std::ldexp(r % 2 ? 127.0f : -127.0f, -10);
    x[r * 40 + 3] = std::ldexp(static_cast<float>(10 * r - 60), -10);
    x[r * 40 + 23] = std::ldexp(static_cast<float>(30 - 9 * r), -10);
  }
  return x;
}

// An int8 cache gives what a float32 cache holding the same values gives, for queries with a
// huge element: a decode step (one query row per K/V head, or a GQA group's 2), and a chunk of 3.
TEST(LargeInputs, Int8CacheScoresAsAFloat32CacheOfTheSameValues) {
  for (int kv_heads : {4, 2}) {
    MhaConfig config;
    config.embed_dim = 40;
    config.num_heads = 4;
    config.num_kv_heads = kv_heads;
    MultiHeadAttention m(config);
    load_identity(m);
    std::mt19937 rng(44);
    const int T = 5, L = 3;
    const std::vector<float> keys = int8_exact_rows(T + L, rng);
    for (float huge : kHuge) {
      for (int chunk : {1, L}) {
        SCOPED_TRACE(::testing::Message() << "kv heads " << kv_heads << ", query " << huge << ", chunk " << chunk);
        std::vector<float> query = random_floats(static_cast<std::size_t>(chunk) * 40, rng, 0.1f);
        query[3] = huge;                  // head 0
        query[(chunk - 1) * 40 + 23] = -huge;  // head 2, the chunk's last row
        std::vector<float> outputs[2];
        int i = 0;
        for (StorageType dtype : {StorageType::i8, StorageType::f32}) {
          KvCacheConfig c;
          c.max_length = T + L;
          c.dtype = dtype;
          auto cache = m.create_cache(c);
          std::vector<float> out(static_cast<std::size_t>(T) * 40);
          MhaForwardArgs a;
          a.L = a.S = T;
          a.query = a.key = a.value = keys.data();
          a.output = out.data();
          m.forward(a, *cache);
          outputs[i].resize(static_cast<std::size_t>(chunk) * 40);
          a.L = a.S = chunk;
          a.query = query.data();
          a.key = a.value = keys.data() + T * 40;
          a.output = outputs[i++].data();
          m.forward(a, *cache);
        }
        for (std::size_t f = 0; f < outputs[1].size(); ++f) {
          ASSERT_TRUE(std::isfinite(outputs[1][f])) << "the float32 cache's output at " << f;
          EXPECT_NEAR(outputs[0][f], outputs[1][f], 1e-5 + 1e-5 * std::abs(outputs[1][f])) << "output " << f;
        }
      }
    }
  }
}

}  // namespace
}  // namespace webattention
