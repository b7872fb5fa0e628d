// int4 weights (StorageType::q4, docs/attention-math/storage.md §11): the core's block quantiser
// (storage::quantise_q4, llama.cpp's q4_0 rule) on blocks whose codes were worked out by hand,
// and against the oracle's independent rule (reference::stored); packing into panels and back
// (PackedLinear::weight, slice_columns) with the nibble order and zero points; the module
// refusing a non-finite value by entry, row and block and keeping its weights, and reading back
// the dequantised values. The projection kernels against the reference: the kernel cases' q4
// type set (kernel_cases_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/storage_convert.h"
#include "reference/storage_reference.h"
#include "test_util.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

struct Quantised {
  float d;
  std::vector<int> q;
};

Quantised quantise(const std::vector<float>& x) {
  Quantised r{0.0f, std::vector<int>(x.size(), -1)};
  r.d = storage::quantise_q4(x.data(), static_cast<int>(x.size()), [&](int i, std::uint8_t q) { r.q[i] = q; });
  return r;
}

TEST(Q4Quantiser, AllZeroBlockHasScaleZeroAndCodeEight) {
  const Quantised r = quantise(std::vector<float>(32, 0.0f));
  EXPECT_EQ(r.d, 0.0f);
  for (int q : r.q) EXPECT_EQ(q, 8);
}

// The largest magnitude positive: d = 8 / -8 = -1, id = -1; x → trunc(8.5 - x): 8 → 0 (exactly
// the extreme), -8 → 16 → the clamp to 15, 0 → 8.
TEST(Q4Quantiser, PositiveExtremeIsCodeZeroItsNegativeClampsToFifteen) {
  const Quantised r = quantise({8.0f, -8.0f, 0.0f, 1.0f, -1.0f, 7.5f});
  EXPECT_EQ(r.d, -1.0f);
  EXPECT_EQ(r.q, (std::vector<int>{0, 15, 8, 7, 9, 1}));  // 7.5: trunc(1.0) = 1
}

// The largest magnitude negative: d = -4 / -8 = 0.5, id = 2; x → trunc(2x + 8.5): -4 → 0.5 → 0,
// 3.75 → 16 → 15, 3.5 → 15.5 → 15, 0.2 → 8.9 → 8; a tie of magnitudes keeps the first (-4, not 4).
TEST(Q4Quantiser, NegativeExtremeGivesAPositiveScale) {
  const Quantised r = quantise({1.0f, -4.0f, 3.75f, 3.5f, 0.2f, 4.0f});
  EXPECT_EQ(r.d, 0.5f);
  EXPECT_EQ(r.q, (std::vector<int>{10, 0, 15, 15, 8, 15}));
}

// Rounding edges with d = -1 (id = -1, t = 8.5 - x): x = 0.5 gives t = 8 exactly → 8;
// x = -0.5 → 9; x = 0.5 + 2^-21 → 7.99999... → 7 (truncation, not rounding); x = 0.49 → 8.
TEST(Q4Quantiser, RoundingEdgesTruncateAfterAddingEightAndAHalf) {
  const Quantised r = quantise({-8.0f, 0.5f, -0.5f, 0.5f + 0x1p-21f, 0.49f, 1.5f, -6.5f});
  EXPECT_EQ(r.d, 1.0f);  // -8 / -8
  // id = 1: t = x + 8.5: 0.5 → 9, -0.5 → 8, 0.5 + 2^-21 → 9, 0.49 → 8, 1.5 → 10, -6.5 → 2.
  EXPECT_EQ(r.q, (std::vector<int>{0, 9, 8, 9, 8, 10, 2}));
  const Quantised s = quantise({8.0f, 0.5f, 0.5f + 0x1p-21f, -0.5f - 0x1p-21f});
  EXPECT_EQ(s.d, -1.0f);  // id = -1: t = 8.5 - x
  EXPECT_EQ(s.q, (std::vector<int>{0, 8, 7, 9}));
}

TEST(Q4Quantiser, NonFiniteBlockIsNaN) {
  for (const float bad : {NAN, INFINITY, -INFINITY}) {
    const Quantised r = quantise({1.0f, bad, 2.0f});
    EXPECT_TRUE(std::isnan(r.d));
    for (int q : r.q) EXPECT_EQ(q, 8);
  }
}

// Random blocks, short ones and tiny values: the core's dequantised values are the oracle's.
TEST(Q4Quantiser, MatchesTheReference) {
  std::mt19937 rng(41);
  std::vector<std::vector<float>> blocks = {{1e-44f, -3e-45f, 0.0f}, {1e-38f, 2e-39f, -1e-38f}, {3.0f, -3.0f}, {-3.0f, 3.0f}};
  for (int n : {1, 5, 31, 32}) {
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    for (int t = 0; t < 50; ++t) {
      std::vector<float> x(n);
      for (float& v : x) v = value(rng);
      blocks.push_back(x);
    }
  }
  for (const auto& x : blocks) {
    const Quantised r = quantise(x);
    const std::vector<float> expected = reference::stored(x, 1, static_cast<int>(x.size()), StorageType::q4, 32);
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_GE(r.q[i], 0);
      ASSERT_LE(r.q[i], 15);
      EXPECT_EQ(storage::dequantise_q4(r.q[i], storage::kQ4Zero, r.d), expected[i]) << "value " << x[i] << " of a block of " << x.size();
    }
  }
}

TEST(Q4Packing, ZeroPointWordEvenColumnsLowHalfOddColumnsHighHalf) {
  std::uint32_t word = 0;
  for (int c = 0; c < 8; ++c) storage::set_q4_code(word, c, c + 1);
  EXPECT_EQ(word, 0x86427531u);  // columns 0, 2, 4, 6 in bits 0-15; 1, 3, 5, 7 in 16-31
  for (int c = 0; c < 8; ++c) EXPECT_EQ(storage::q4_code(word, c), c + 1);
}

// The codes' layout the kernels read (storage_convert.h's q4_byte): a group of 4 rows in 16 bytes,
// byte 2c + j holding column c's rows 4g + j (low nibble) and 4g + 2 + j (high nibble); as 32-bit
// lanes, lane i holds columns 2i and 2i + 1, row j at bit q4_row_shift(j) of its half.
TEST(Q4Packing, GroupsOfFourRowsColumnPairsPerByte) {
  std::uint8_t panel[2 * storage::kQ4GroupBytes] = {};
  for (int k = 0; k < 8; ++k)
    for (int c = 0; c < 8; ++c) storage::set_q4_code_at(panel, k, c, (k + 2 * c) % 16);
  EXPECT_EQ(panel[0], 0x20);                       // column 0, rows 0 (low) and 2 (high)
  EXPECT_EQ(panel[1], 0x31);                       // column 0, rows 1 and 3
  EXPECT_EQ(panel[2 * 7 + 1], (3 + 14) % 16 << 4 | (1 + 14));  // column 7, rows 1 and 3
  EXPECT_EQ(panel[16], 0x64);                      // second group: column 0, rows 4 and 6
  for (int k = 0; k < 8; ++k)
    for (int c = 0; c < 8; ++c) EXPECT_EQ(storage::q4_code_at(panel, k, c), (k + 2 * c) % 16) << k << ", " << c;
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 4; ++i) {
      std::uint32_t lane;
      std::memcpy(&lane, panel + 4 * i, sizeof lane);  // little-endian, as WebAssembly's lanes
      EXPECT_EQ((lane >> storage::q4_row_shift(j)) & 0xF, static_cast<std::uint32_t>(storage::q4_code_at(panel, j, 2 * i)));
      EXPECT_EQ((lane >> (16 + storage::q4_row_shift(j))) & 0xF, static_cast<std::uint32_t>(storage::q4_code_at(panel, j, 2 * i + 1)));
    }
  }
}

// Packed and read back (PackedLinear::weight): the oracle's stored values at every column and
// depth, padding columns zero, odd shapes with short last blocks; a column slice keeps them.
TEST(Q4Packing, RoundTripAndSlices) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (const auto& [out, in] : {std::pair{1, 1}, {7, 33}, {9, 64}, {17, 70}, {24, 5}}) {
    std::vector<float> W(static_cast<std::size_t>(out) * in);
    for (float& x : W) x = value(rng);
    const kernels::PackedLinear w = kernels::pack_linear(W.data(), StorageType::f32, out, in, StorageType::q4);
    const std::vector<float> expected = reference::stored(W, out, in, StorageType::q4, 32);
    for (int n = 0; n < kernels::whole_panels(out); ++n) {
      for (int k = 0; k < in; ++k) {
        const float want = n < out ? expected[static_cast<std::size_t>(n) * in + k] : 0.0f;
        ASSERT_EQ(w.weight(n, k), want) << "(" << out << ", " << in << ") at " << n << ", " << k;
      }
    }
    if (out < 3) continue;
    const kernels::PackedLinear s = kernels::slice_columns(w, 1, out - 1);
    for (int n = 0; n < out - 2; ++n) {
      for (int k = 0; k < in; ++k) ASSERT_EQ(s.weight(n, k), w.weight(n + 1, k)) << "slice at " << n << ", " << k;
    }
    for (int k = 0; k < in && (out - 2) % 8; ++k) ASSERT_EQ(s.weight(out - 2, k), 0.0f) << "padding at " << k;
  }
}

// The blocks as a panel stores them (storage_convert.h's q4_byte): a block's 8 groups, then its 8
// scales, then the next block; zero points quantised at load (all 8) are one panel's words that
// every panel reads, a checkpoint's other zero points each panel's own.
TEST(Q4Packing, EachBlocksScalesAfterItsCodesAndEightsZeroPointsShared) {
  const int out = 16, in = 70;
  std::vector<float> W(static_cast<std::size_t>(out) * in);
  for (std::size_t i = 0; i < W.size(); ++i) W[i] = std::sin(static_cast<float>(i)) * (1.0f + static_cast<float>(i % 7));
  const kernels::PackedLinear w = kernels::pack_linear(W.data(), StorageType::f32, out, in, StorageType::q4);
  ASSERT_EQ(w.scaled_panel_bytes(), 3u * 160u);  // 3 blocks, the last one short
  EXPECT_EQ(w.zero_point_panel_words, 0u);
  EXPECT_EQ(w.panel_zero_points(0), w.panel_zero_points(1));
  const std::vector<float> expected = reference::stored(W, out, in, StorageType::q4, 32);
  for (int p = 0; p < 2; ++p) {
    for (int b = 0; b < 3; ++b) {
      const std::uint8_t* block = w.q4_panel(p) + 160 * b;
      float scales[8];
      std::memcpy(scales, block + 128, sizeof scales);
      for (int c = 0; c < 8; ++c) {
        const int n = 8 * p + c, k = 32 * b + 5;
        if (k >= in) continue;
        const int code = (block[(5 / 4) * 16 + 2 * c + (5 & 1)] >> ((5 & 2) * 2)) & 0xF;
        EXPECT_EQ(static_cast<float>(code - 8) * scales[c], expected[static_cast<std::size_t>(n) * in + k]) << n << ", " << k;
      }
    }
  }
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(out) * in, 3), zeros(static_cast<std::size_t>(out) * 3, 8);
  const std::vector<float> block_scales(zeros.size(), 0.5f);
  zeros[3 * 9 + 1] = 2;  // column 9 (panel 1), block 1
  const kernels::PackedLinear q = kernels::pack_quantised({codes.data(), block_scales.data(), zeros.data()}, out, in, StorageType::q4);
  EXPECT_EQ(q.zero_point_panel_words, 3u);
  EXPECT_EQ(q.weight(9, 40), 0.5f);    // (3 - 2) · 0.5
  EXPECT_EQ(q.weight(1, 40), -2.5f);   // (3 - 8) · 0.5: panel 0 keeps its eights
}

// A block's own zero point (a checkpoint's, not the quantiser's 8) is read by every path.
TEST(Q4Packing, PerBlockZeroPoints) {
  const std::vector<float> W(8 * 40, 0.0f);
  kernels::PackedLinear w = kernels::pack_linear(W.data(), StorageType::f32, 8, 40, StorageType::q4);
  // Block 1 (depths 32-39) of an even and an odd column (the SIMD readers' two halves).
  w.block_scales(0, 1)[2] = 0.5f;
  storage::set_q4_code(w.panel_zero_points(0)[1], 2, 5);   // code 8 is (8 - 5) · 0.5
  w.block_scales(0, 1)[3] = 0.25f;
  storage::set_q4_code(w.panel_zero_points(0)[1], 3, 11);  // code 8 is (8 - 11) · 0.25
  EXPECT_EQ(w.weight(2, 35), 1.5f);
  EXPECT_EQ(w.weight(3, 35), -0.75f);
  EXPECT_EQ(w.weight(3, 3), 0.0f);
  // One row (a decode step's reader) and 5 (a prefill's 4-row blocks): the same results.
  for (const int rows : {1, 5}) {
    std::vector<float> x(static_cast<std::size_t>(rows) * 40, 0.0f), y(static_cast<std::size_t>(rows) * 8, -1.0f);
    for (int r = 0; r < rows; ++r) x[r * 40 + 35] = 2.0f;
    const kernels::LinearTarget target{&w, y.data(), 8};
    kernels::linear(x.data(), rows, 40, &target, 1);
    for (int r = 0; r < rows; ++r) {
      EXPECT_EQ(y[r * 8 + 2], 3.0f) << rows << " rows, row " << r;
      EXPECT_EQ(y[r * 8 + 3], -1.5f) << rows << " rows, row " << r;
      EXPECT_EQ(y[r * 8 + 4], 0.0f) << rows << " rows, row " << r;
    }
  }
}

MhaConfig q4_config() {
  MhaConfig c;
  c.embed_dim = 40;
  c.num_heads = 4;
  c.weights_dtype = StorageType::q4;
  return c;
}

TEST(Q4Loading, RefusesNonFiniteWeightsNamingTheBlockAndKeepsItsWeights) {
  MultiHeadAttention m(q4_config());
  std::vector<float> w(3 * 40 * 40);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<float>(i)) * 0.1f;
  m.load_parameter("in_proj_weight", w.data(), w.size());
  const auto read = [&m] {
    std::vector<float> values(3 * 40 * 40);
    m.read_parameter("in_proj_weight", values.data(), values.size());
    return values;
  };
  const std::vector<float> before = read();
  std::vector<float> bad = w;
  bad[5 * 40 + 33] = NAN;  // row 5, column 33: block 1
  testing::expect_refused_entry(m, "in_proj_weight", bad, {"int4 weights must be finite", "block 1 of row 5"});
  EXPECT_EQ(read(), before);
  EXPECT_EQ(before, reference::stored(w, 120, 40, StorageType::q4, 32));  // read back dequantised
}

}  // namespace
}  // namespace webattention
