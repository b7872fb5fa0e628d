// int8 activations (MhaConfig::activations, docs/attention-math/storage.md §11) on this build's kernel
// family: int4 weights whose blocks carry zero points other than 8 (as checkpoints may: the
// kernel cases only meet the 8 of weights quantised at load) against the reference of the stored
// weights and quantised inputs; and a row gives the same bits alone (a decode step) as among
// others (a prefill: SIMD128's widened panels), for int8 and int4 weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/storage_convert.h"
#include "reference/storage_reference.h"

namespace webattention {
namespace {

// Input widths: blocks of 32, 32 and 7 (an odd tail: int8's last row pair and int4's last group of
// 4 rows are part padding), and two whole blocks (the relaxed int4 kernel's one-row loop over whole
// blocks); a last panel of 3 columns; rows enough for the kernels' many-row path (SIMD128: the
// panel widened once, from 8 rows) with two 4-row blocks and 3 rows over. Output widths: 3
// panels (a decode step's far pairs, then one), 66 (far groups of 4 panels, then two, the
// narrow last one among them) and 68 (the narrow last panel in the last group of 4): the
// groups' sizes and thresholds, kernels/far_panels.h and q8_panel_groups_simd128.h.
constexpr int kRows = 11;
constexpr int kWidths[] = {71, 64};
constexpr int kOuts[] = {19, 8 * 65 + 3, 8 * 67 + 3};

std::vector<float> uniform(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

kernels::PackedLinear packed(StorageType type, int kOut, int kIn, std::uint32_t seed) {
  const std::vector<float> w = uniform(static_cast<std::size_t>(kOut) * kIn, seed);
  kernels::PackedLinear p = kernels::pack_linear(w.data(), StorageType::f32, kOut, kIn, type);
  const std::vector<float> bias = uniform(kOut, seed + 1);
  p.set_bias(bias.data(), kOut);
  kernels::use_int8_activations(p);
  return p;
}

std::vector<float> project(const kernels::PackedLinear& w, const std::vector<float>& x, int rows) {
  const int kOut = w.out;
  std::vector<float> y(static_cast<std::size_t>(rows) * kOut, NAN);
  const kernels::LinearTarget target{&w, y.data(), kOut};
  kernels::linear(x.data(), rows, w.in, &target, 1);
  return y;
}

// Each block's 8 zero points drawn from 0-15 (a MatMulNBits checkpoint's), where quantising at
// load gives 8 throughout.
void random_zero_points(kernels::PackedLinear& w, std::uint32_t seed) {
  if (w.zero_point_panel_words == 0) {  // packing shared one panel's eights: each panel its own words again
    w.zero_point_panel_words = static_cast<std::size_t>(w.scale_blocks());
    w.zero_points.reset(new std::uint32_t[w.panel_count() * w.zero_point_panel_words]);
  }
  std::mt19937 rng(seed);
  for (int p = 0; p < w.panel_count(); ++p) {
    for (int b = 0; b < w.scale_blocks(); ++b) {
      for (int c = 0; c < kernels::kPanelWidth; ++c) storage::set_q4_code(w.panel_zero_points(p)[b], c, static_cast<int>(rng() % 16));
    }
  }
}

// kRows rows (the many-row path), one row (a decode step) and 5 (a 4-row block and one row), of
// input width kIn, kOut outputs.
void expect_the_stored_values_with_zero_points(int kOut, int kIn) {
  kernels::PackedLinear w = packed(StorageType::q4, kOut, kIn, 3);
  random_zero_points(w, 9);
  for (int rows : {kRows, 1, 5}) {
    const std::vector<float> x = uniform(static_cast<std::size_t>(rows) * kIn, 5 + rows);
    const std::vector<float> y = project(w, x, rows);
    const std::vector<double> xq = reference::int8_activations(x, rows, kIn, storage::kQuantBlock);
    for (int r = 0; r < rows; ++r) {
      for (int n = 0; n < kOut; ++n) {
        double want = w.bias[n];
        for (int k = 0; k < kIn; ++k) want += xq[r * kIn + k] * w.weight(n, k);
        EXPECT_NEAR(y[r * kOut + n], want, 1e-4 + 1e-4 * std::fabs(want))
            << "out " << kOut << ", in " << kIn << ", " << rows << " rows: row " << r << ", column " << n;
      }
    }
  }
}

TEST(Int8Activations, Int4ZeroPointsOtherThanEight) {
  for (int out : kOuts)
    for (int in : kWidths) expect_the_stored_values_with_zero_points(out, in);
}

// Alone (a decode step's one-row kernels), among 5 rows and among kRows: the same bits, for int8,
// int4 with its zero points at 8 and int4 with zero points of every value, of input width kIn,
// kOut outputs.
void expect_the_same_bits_alone_and_among_others(int kOut, int kIn) {
  for (int variant = 0; variant < 3; ++variant) {
    const StorageType type = variant == 0 ? StorageType::i8 : StorageType::q4;
    kernels::PackedLinear w = packed(type, kOut, kIn, 11);
    if (variant == 2) random_zero_points(w, 17);
    const std::vector<float> x = uniform(static_cast<std::size_t>(kRows) * kIn, 13);
    const std::vector<float> all = project(w, x, kRows);
    const std::vector<float> five = project(w, std::vector<float>(x.begin(), x.begin() + 5 * kIn), 5);
    for (int r = 0; r < kRows; ++r) {
      const std::vector<float> alone = project(w, std::vector<float>(x.begin() + r * kIn, x.begin() + (r + 1) * kIn), 1);
      for (int n = 0; n < kOut; ++n) {
        EXPECT_EQ(storage::bits_of(alone[n]), storage::bits_of(all[r * kOut + n]))
            << "out " << kOut << ", in " << kIn << ", variant " << variant << " row " << r << ", column " << n;
        if (r < 5) {
          EXPECT_EQ(storage::bits_of(five[r * kOut + n]), storage::bits_of(all[r * kOut + n]))
              << "out " << kOut << ", in " << kIn << ", variant " << variant << " row " << r;
        }
      }
    }
  }
}

TEST(Int8Activations, ARowGivesTheSameBitsAloneAndAmongOthers) {
  for (int out : kOuts)
    for (int in : kWidths) expect_the_same_bits_alone_and_among_others(out, in);
}

}  // namespace
}  // namespace webattention
