// Weight packing into panels (kernels/packing.cpp): every W element lands at its column and
// depth, the padding columns are zero, whether packed from a copy (pack_linear) or where the rows
// lie (pack_rows_in_place), for shapes that end a panel and a 4-deep step early.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "kernels/kernels.h"

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

}  // namespace
}  // namespace webattention::kernels
