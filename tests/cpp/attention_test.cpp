// Scaled dot-product attention and plain self-attention against the double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "reference/reference.h"
#include "test_util.h"
#include "webattention/attention.h"
#include "webattention/errors.h"

namespace webattention {
namespace {

using testing::all_close;
using testing::random_bool_mask;
using testing::random_floats;

struct SdpaCase {
  int N, L, S, dk, dv;
  MaskKind mask;
  bool per_batch_mask;
  bool causal;
  float input_scale;
};

class SdpaVsReference : public ::testing::TestWithParam<SdpaCase> {};

TEST_P(SdpaVsReference, MatchesReference) {
  const SdpaCase c = GetParam();
  std::mt19937 rng(c.N * 1000 + c.L * 100 + c.S);
  auto q = random_floats(static_cast<std::size_t>(c.N) * c.L * c.dk, rng, c.input_scale);
  auto k = random_floats(static_cast<std::size_t>(c.N) * c.S * c.dk, rng, c.input_scale);
  auto v = random_floats(static_cast<std::size_t>(c.N) * c.S * c.dv, rng);
  const std::size_t mask_rows = static_cast<std::size_t>(c.per_batch_mask ? c.N : 1) * c.L;
  auto bool_mask = random_bool_mask(mask_rows, c.S, rng);
  auto add_mask = random_floats(mask_rows * c.S, rng);
  for (std::size_t i = 0; i < add_mask.size(); i += 7)
    if (i % c.S) add_mask[i] = -std::numeric_limits<float>::infinity();

  SdpaArgs a;
  a.N = c.N, a.L = c.L, a.S = c.S, a.dk = c.dk, a.dv = c.dv;
  a.q = q.data(), a.k = k.data(), a.v = v.data();
  a.causal = c.causal;
  a.attn_mask.kind = c.mask;
  a.attn_mask.data = c.mask == MaskKind::kBoolean ? static_cast<const void*>(bool_mask.data())
                                                   : add_mask.data();
  a.attn_mask.shape = c.per_batch_mask ? std::vector<int>{c.N, c.L, c.S}
                                       : std::vector<int>{c.L, c.S};
  std::vector<float> out(static_cast<std::size_t>(c.N) * c.L * c.dv);
  std::vector<float> weights(static_cast<std::size_t>(c.N) * c.L * c.S);
  a.out = out.data();
  a.weights = weights.data();
  scaled_dot_product_attention(a);

  // The reference reads the same arguments, masks included, with its own indexing.
  std::vector<float> ref_out(out.size()), ref_weights(weights.size());
  a.out = ref_out.data();
  a.weights = ref_weights.data();
  reference::scaled_dot_product_attention(a);

  EXPECT_TRUE(all_close(out, ref_out));
  EXPECT_TRUE(all_close(weights, ref_weights));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SdpaVsReference,
    ::testing::Values(SdpaCase{1, 1, 1, 1, 1, MaskKind::kNone, false, false, 1.0f},
                      SdpaCase{2, 5, 7, 8, 3, MaskKind::kNone, false, false, 1.0f},
                      SdpaCase{3, 9, 9, 16, 16, MaskKind::kNone, false, true, 1.0f},
                      SdpaCase{2, 6, 11, 4, 5, MaskKind::kBoolean, false, false, 1.0f},
                      SdpaCase{2, 6, 11, 4, 5, MaskKind::kBoolean, true, false, 1.0f},
                      SdpaCase{2, 6, 11, 4, 5, MaskKind::kAdditive, false, false, 1.0f},
                      SdpaCase{2, 6, 11, 4, 5, MaskKind::kAdditive, true, true, 1.0f},
                      SdpaCase{1, 13, 17, 33, 7, MaskKind::kNone, false, false, 30.0f},
                      SdpaCase{1, 40, 1100, 8, 8, MaskKind::kNone, false, true, 1.0f},
                      // Several key tiles, ragged tails in L, S, d_k and d_v, masks across tiles.
                      SdpaCase{2, 7, 300, 5, 3, MaskKind::kBoolean, true, false, 1.0f},
                      SdpaCase{1, 9, 513, 16, 9, MaskKind::kAdditive, false, true, 1.0f},
                      SdpaCase{3, 66, 257, 1, 1, MaskKind::kAdditive, true, false, 3.0f},
                      SdpaCase{1, 300, 40, 12, 20, MaskKind::kBoolean, false, true, 1.0f}));

TEST(Sdpa, ExplicitScaleIsUsed) {
  std::mt19937 rng(7);
  auto q = random_floats(3 * 4, rng), k = random_floats(5 * 4, rng), v = random_floats(5 * 2, rng);
  SdpaArgs a;
  a.L = 3, a.S = 5, a.dk = 4, a.dv = 2;
  a.q = q.data(), a.k = k.data(), a.v = v.data();
  std::vector<float> w_default(15), w_scaled(15), out(6);
  a.out = out.data();
  a.weights = w_default.data();
  scaled_dot_product_attention(a);
  a.scale = 0.5f;  // 1/√4 is the default: same result
  a.weights = w_scaled.data();
  scaled_dot_product_attention(a);
  EXPECT_TRUE(all_close(w_scaled, w_default));
  a.scale = 2.0f;
  scaled_dot_product_attention(a);
  EXPECT_FALSE(all_close(w_scaled, w_default));
}

// A given scale of 0 (or one a double rounded to 0 on its way to float32) is refused: only an
// absent scale means 1/√dk.
TEST(Sdpa, GivenScaleMustBePositiveAndFinite) {
  std::vector<float> q(3 * 4, 1.0f), k(5 * 4, 1.0f), v(5 * 2, 1.0f), out(6);
  SdpaArgs a;
  a.L = 3, a.S = 5, a.dk = 4, a.dv = 2;
  a.q = q.data(), a.k = k.data(), a.v = v.data(), a.out = out.data();
  for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::nanf("")}) {
    a.scale = bad;
    try {
      scaled_dot_product_attention(a);
      ADD_FAILURE() << "scale " << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.argument(), "scale") << e.what();
    }
  }
}

TEST(Sdpa, FullyMaskedRowGivesZerosNotNaN) {
  std::vector<float> q(2 * 2, 1.0f), k(3 * 2, 1.0f), v(3 * 2, 1.0f), out(4, -1.0f), w(6, -1.0f);
  std::vector<std::uint8_t> mask = {1, 1, 1, 0, 1, 0};  // row 0: all keys masked
  SdpaArgs a;
  a.L = 2, a.S = 3, a.dk = 2, a.dv = 2;
  a.q = q.data(), a.k = k.data(), a.v = v.data(), a.out = out.data(), a.weights = w.data();
  a.attn_mask = {MaskKind::kBoolean, mask.data(), {2, 3}};
  scaled_dot_product_attention(a);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(w[0] + w[1] + w[2], 0.0f);
  EXPECT_FLOAT_EQ(w[3] + w[5], 1.0f);
  EXPECT_FLOAT_EQ(out[2], 1.0f);
}

TEST(Sdpa, FullyMaskedRowInALongSequenceGivesZeros) {
  // Every key of row 2 masked while the allowed keys of other rows sit in different key tiles.
  const int L = 5, S = 600, d = 4;
  std::mt19937 rng(11);
  auto q = random_floats(L * d, rng), k = random_floats(S * d, rng), v = random_floats(S * d, rng);
  std::vector<std::uint8_t> mask(L * S, 1);
  mask[0 * S + 0] = 0;
  mask[1 * S + 599] = 0;
  mask[3 * S + 300] = mask[3 * S + 301] = 0;
  mask[4 * S + 257] = 0;
  std::vector<float> out(L * d, -1.0f), w(L * S, -1.0f);
  SdpaArgs a;
  a.L = L, a.S = S, a.dk = d, a.dv = d;
  a.q = q.data(), a.k = k.data(), a.v = v.data(), a.out = out.data(), a.weights = w.data();
  a.attn_mask = {MaskKind::kBoolean, mask.data(), {L, S}};
  scaled_dot_product_attention(a);
  for (int c = 0; c < d; ++c) {
    EXPECT_EQ(out[2 * d + c], 0.0f);
    EXPECT_FLOAT_EQ(out[0 * d + c], v[0 * d + c]);
    EXPECT_FLOAT_EQ(out[1 * d + c], v[599 * d + c]);
    EXPECT_FLOAT_EQ(out[4 * d + c], v[257 * d + c]);
  }
  for (int j = 0; j < S; ++j) EXPECT_EQ(w[2 * S + j], 0.0f);
  EXPECT_FLOAT_EQ(w[3 * S + 300] + w[3 * S + 301], 1.0f);
}

// Scores of -inf by arithmetic are not masks (PyTorch's rule, docs/attention-math/heads.md §4): row 0's
// -inf query scores every key it may see -inf, so it is NaN (exp(-inf - -inf)); key 5 scores -inf
// for every other row and holds an infinite value, so every row that may see it adds 0 · inf = NaN,
// in the 4-row block of the diagonal and after it alike; rows 1..4 stay finite.
TEST(Sdpa, MinusInfinityScoresByArithmeticAreNotMasks) {
  const float inf = std::numeric_limits<float>::infinity();
  const int n = 9;
  std::vector<float> q(n), k(n), v(n);
  for (int i = 0; i < n; ++i) q[i] = 0.3f + 0.1f * i, k[i] = 0.2f + 0.05f * i, v[i] = 1.0f + i;
  q[0] = -inf, k[5] = -inf, v[5] = inf;
  std::vector<float> out(n), w(n * n), ref_out(n), ref_w(n * n);
  SdpaArgs a;
  a.L = n, a.S = n, a.dk = 1, a.dv = 1, a.causal = true;
  a.q = q.data(), a.k = k.data(), a.v = v.data(), a.out = out.data(), a.weights = w.data();
  scaled_dot_product_attention(a);
  a.out = ref_out.data(), a.weights = ref_w.data();
  reference::scaled_dot_product_attention(a);
  for (int i = 0; i < n; ++i) {
    const bool nan = i == 0 || i >= 5;
    EXPECT_EQ(std::isnan(out[i]), nan) << "row " << i << ": " << out[i];
    EXPECT_EQ(std::isnan(ref_out[i]), nan) << "reference row " << i << ": " << ref_out[i];
    if (!nan) {
      EXPECT_NEAR(out[i], ref_out[i], 1e-5f) << "row " << i;
    }
    for (int j = 0; j <= i; ++j) {
      EXPECT_EQ(std::isnan(w[i * n + j]), i == 0) << "weight " << i << ", " << j;
      if (i != 0) {
        EXPECT_NEAR(w[i * n + j], ref_w[i * n + j], 1e-6f) << "weight " << i << ", " << j;
      }
    }
    if (i >= 5) {
      EXPECT_EQ(w[i * n + 5], 0.0f) << "row " << i;
    }
  }
}

TEST(Sdpa, RejectsMisshapedMaskNamingIt) {
  std::vector<float> x(4 * 2, 0.5f), out(4 * 2);
  std::vector<std::uint8_t> mask(3 * 4);
  SdpaArgs a;
  a.L = 4, a.S = 4, a.dk = 2, a.dv = 2;
  a.q = a.k = a.v = x.data();
  a.out = out.data();
  a.attn_mask = {MaskKind::kBoolean, mask.data(), {3, 4}};
  try {
    scaled_dot_product_attention(a);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_EQ(e.argument(), "attn_mask");
    EXPECT_NE(std::string(e.what()).find("[4, 4]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("got [3, 4]"), std::string::npos) << e.what();
  }
}

// docs/attention-math/basics.md §2: x_i·x_j ≤ ½(x_i·x_i + x_j·x_j), so no score beats the larger of its two
// diagonal scores. After the per-row softmax that bounds weights only within a row of tokens of
// equal norm: there the token's own weight is the largest of its row. (The cross-row claim
// α_ij ≤ max(α_ii, α_jj) does not hold in general: random inputs break it, since each row has its
// own normaliser.)
TEST(SelfAttention, OwnWeightIsRowMaximumForEqualNormTokens) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 20; ++trial) {
    const int L = 3 + trial, C = 2 + trial % 9;
    auto x = random_floats(static_cast<std::size_t>(L) * C, rng);
    const float norm = 0.5f + 0.25f * trial;  // large norms make the diagonal sharper
    for (int i = 0; i < L; ++i) {
      float n2 = 0.0f;
      for (int c = 0; c < C; ++c) n2 += x[i * C + c] * x[i * C + c];
      for (int c = 0; c < C; ++c) x[i * C + c] *= norm / std::sqrt(n2);
    }
    std::vector<float> out(x.size()), w(static_cast<std::size_t>(L) * L);
    self_attention(1, L, C, x.data(), out.data(), w.data());
    for (int i = 0; i < L; ++i)
      for (int j = 0; j < L; ++j)
        EXPECT_LE(w[i * L + j], w[i * L + i] * (1 + 1e-5f))
            << "trial " << trial << " i=" << i << " j=" << j;
  }
}

TEST(SelfAttention, EqualsSdpaWithXForQKV) {
  std::mt19937 rng(3);
  const int N = 2, L = 6, C = 5;
  auto x = random_floats(static_cast<std::size_t>(N) * L * C, rng);
  std::vector<float> out(x.size()), ref(x.size());
  self_attention(N, L, C, x.data(), out.data(), nullptr);
  SdpaArgs a;
  a.N = N, a.L = L, a.S = L, a.dk = C, a.dv = C;
  a.q = a.k = a.v = x.data();
  a.out = ref.data();
  reference::scaled_dot_product_attention(a);
  EXPECT_TRUE(all_close(out, ref));
}

}  // namespace
}  // namespace webattention
