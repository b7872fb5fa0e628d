// Weight packing into panels (kernels/packing.cpp): every W element lands at its column and
// depth, the padding columns are zero, whether packed from a copy (pack_linear) or where the rows
// lie (pack_rows_in_place), for shapes that end a panel and a 4-deep step early. f16 weights
// stored rebiased (storage::rebias_f16) keep every value, subnormals included, and project to the
// same bits as f32 weights of the same values, one row (a decode step) or several. int8 codes laid
// in row pairs keep their values.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/storage_convert.h"

namespace webattention::kernels {
namespace {

void expect_packed(const PackedLinear& w, const std::vector<float>& W, int out, int in, const char* how) {
  for (int n = 0; n < whole_panels(out); ++n) {
    for (int k = 0; k < in; ++k) {
      const float expected = n < out ? W[static_cast<std::size_t>(n) * in + k] : 0.0f;
      ASSERT_EQ(w.weight(n, k), expected) << how << " (" << out << ", " << in << ") at n = " << n << ", k = " << k;
    }
  }
}

TEST(Packing, EveryWeightAtItsColumnAndDepth) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (const auto& [out, in] : {std::pair{1, 1}, {7, 3}, {8, 4}, {9, 5}, {16, 13}, {24, 64}, {33, 130}, {64, 3}}) {
    std::vector<float> W(static_cast<std::size_t>(out) * in);
    for (float& x : W) x = value(rng);
    expect_packed(pack_linear(W.data(), out, in), W, out, in, "pack_linear");
    PackedLinear rows = rows_for_packing(out, in);
    std::copy(W.begin(), W.end(), rows.elements<float>().data);
    pack_rows_in_place(rows);
    expect_packed(rows, W, out, in, "pack_rows_in_place");
  }
}

// f16 bits of W (values in ±range, every 7th an f16 subnormal, some ±0), as loadStateDict gives them.
std::vector<std::uint16_t> f16_weights(int out, int in, float range, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-range, range), tiny(-6e-5f, 6e-5f);
  std::vector<std::uint16_t> bits(static_cast<std::size_t>(out) * in);
  for (std::size_t i = 0; i < bits.size(); ++i) {
    bits[i] = storage::f32_to_f16(i % 7 == 3 ? tiny(rng) : i % 11 == 5 ? (i % 2 ? -0.0f : 0.0f) : value(rng));
  }
  bits[1 % bits.size()] = 0x0001;  // the smallest subnormal
  return bits;
}

TEST(Packing, F16WeightsKeepEveryValueWhetherRebiasedOrNot) {
  // Rebiased exactly when no weight reaches 64: 63.96875 is the largest f16 below it.
  for (const float largest : {0.0f, 63.96875f, 64.0f, 65504.0f}) {
    const int out = 19, in = 37;
    std::vector<std::uint16_t> bits = f16_weights(out, in, 8.0f, 11);
    if (largest != 0.0f) bits[7] = storage::f32_to_f16(-largest);
    const PackedLinear w = pack_linear(bits.data(), StorageType::f16, out, in, StorageType::f16);
    EXPECT_EQ(w.f16_rebias, largest < 64.0f ? storage::kF16Rebias : 0) << largest;
    EXPECT_TRUE(w.finite);
    std::vector<float> W(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) W[i] = storage::f16_to_f32(bits[i]);
    for (int n = 0; n < out; ++n)
      for (int k = 0; k < in; ++k) {
        const float got = w.weight(n, k), want = W[static_cast<std::size_t>(n) * in + k];
        ASSERT_TRUE(got == want && std::signbit(got) == std::signbit(want)) << largest << " at " << n << ", " << k << ": " << got << " != " << want;
      }
    expect_packed(slice_columns(w, 3, 17), std::vector<float>(W.begin() + 3 * in, W.begin() + 17 * in), 14, in, "slice_columns");
  }
  std::vector<std::uint16_t> with_inf = f16_weights(9, 5, 1.0f, 3);
  with_inf[4] = 0x7C00;
  const PackedLinear w = pack_linear(with_inf.data(), StorageType::f16, 9, 5, StorageType::f16);
  EXPECT_FALSE(w.finite);
  EXPECT_EQ(w.f16_rebias, 0);
}

TEST(Packing, F16WeightsProjectAsTheirF32Values) {
  const int out = 44, in = 70;  // 5 whole panels and a narrow one; 70 ends a 4-deep step early
  for (const float range : {0.5f, 100.0f}) {  // rebiased, and not
    const std::vector<std::uint16_t> bits = f16_weights(out, in, range, 5);
    std::vector<float> W(bits.size()), bias(out);
    for (std::size_t i = 0; i < bits.size(); ++i) W[i] = storage::f16_to_f32(bits[i]);
    for (int n = 0; n < out; ++n) bias[n] = 0.25f * n - 3.0f;
    PackedLinear f16 = pack_linear(bits.data(), StorageType::f16, out, in, StorageType::f16);
    PackedLinear f32 = pack_linear(W.data(), out, in);
    f16.set_bias(bias.data(), out);
    f32.set_bias(bias.data(), out);
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> value(-3.0f, 3.0f);
    for (const float large : {0.0f, 5e4f, 1e9f}) {  // x scaled for the pair readers, or too large to be
      for (const int rows : {1, 5}) {
        std::vector<float> x(static_cast<std::size_t>(rows) * in), y16(static_cast<std::size_t>(rows) * out), y32(y16.size());
        for (float& v : x) v = value(rng);
        if (large != 0.0f) x[in / 2] = large;
        const LinearTarget t16{&f16, y16.data(), out}, t32{&f32, y32.data(), out};
        linear(x.data(), rows, in, &t16, 1);
        linear(x.data(), rows, in, &t32, 1);
        for (std::size_t i = 0; i < y16.size(); ++i)
          ASSERT_EQ(storage::bits_of(y16[i]), storage::bits_of(y32[i])) << "range " << range << ", x up to " << large << ", rows " << rows << ", at " << i;
      }
    }
  }
}

// int8 codes move into row pairs for int8 activations (PackedLinear::i8_row_pairs) with every value
// kept, the last block's rows past the depth stored as zeros (the kernels load whole pairs), each
// block's scales after its codes, and column slices of paired weights paired the same way.
TEST(Packing, Int8RowPairsKeepEveryValue) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (const auto& [out, in] : {std::pair{1, 1}, {9, 5}, {16, 33}, {24, 64}, {13, 71}}) {
    std::vector<float> W(static_cast<std::size_t>(out) * in);
    for (float& x : W) x = value(rng);
    const PackedLinear rows = pack_linear(W.data(), StorageType::f32, out, in, StorageType::i8);
    PackedLinear pairs = pack_linear(W.data(), StorageType::f32, out, in, StorageType::i8);
    use_int8_activations(pairs);
    ASSERT_TRUE(pairs.i8_row_pairs());
    ASSERT_EQ(pairs.panel_depth(), static_cast<std::size_t>(storage::quant_blocks(in) * storage::kQuantBlock));
    for (int n = 0; n < whole_panels(out); ++n) {
      for (int k = 0; k < in; ++k) ASSERT_EQ(pairs.weight(n, k), rows.weight(n, k)) << "n = " << n << ", k = " << k;
      for (int k = in; k < static_cast<int>(pairs.panel_depth()); ++k) ASSERT_EQ(pairs.i8_code(n, k), 0) << "padding row " << k << ", n = " << n;
    }
    // Each block's scales follow its 16 row pairs in the panel: one stream per panel.
    for (int p = 0; p < pairs.panel_count(); ++p) {
      for (int b = 0; b < pairs.scale_blocks(); ++b) {
        const auto* block = reinterpret_cast<const unsigned char*>(pairs.i8_pair_panel(p)) + static_cast<std::size_t>(b) * 288;
        ASSERT_EQ(reinterpret_cast<const unsigned char*>(pairs.block_scales(p, b)), block + 256) << "panel " << p << ", block " << b;
        for (int c = 0; c < kPanelWidth; ++c) ASSERT_EQ(pairs.block_scales(p, b)[c], rows.block_scales(p, b)[c]);
      }
    }
    const int begin = out / 3, end = out - out / 4;
    const PackedLinear slice = slice_columns(pairs, begin, end);
    ASSERT_TRUE(slice.i8_row_pairs());
    for (int n = 0; n < whole_panels(end - begin); ++n) {
      for (int k = 0; k < static_cast<int>(slice.panel_depth()); ++k) {
        const int expected = n < end - begin && k < in ? rows.i8_code(begin + n, k) : 0;
        ASSERT_EQ(slice.i8_code(n, k), expected) << "slice [" << begin << ", " << end << ") n = " << n << ", k = " << k;
      }
      for (int k = 0; k < in; ++k) ASSERT_EQ(slice.weight(n, k), n < end - begin ? rows.weight(begin + n, k) : 0.0f);
    }
  }
}

}  // namespace
}  // namespace webattention::kernels
