// Input rows too large for the int8 and int4 kernels' integer-valued operands, every ISA
// (docs/attention-math/storage.md §11, "Large inputs"). Those kernels multiply x by the stored
// codes, not by the stored values: the projections by q (scalar) or q · 2^16 (SIMD128's readers,
// pair_panels_simd128.h) and int4's q - z, each block's sum times its scale afterwards; an int8
// cache's scores likewise, each key's scale after its sum. A code is up to 2^7 (2^23 as
// q · 2^16) where the stored value q · s is usually far below 1, so for |x| near the top of f32's
// range (from about 4e31 for SIMD128's int8 weights) the partial sums overflow to ±Inf, and
// Inf · 0 or Inf - Inf then gives NaN, where the float32 module, which multiplies x by the
// stored values, stays finite.
//
// A row holding a value of magnitude >= kLargeInput (NaN is not; ±Inf is, and stays itself) is
// computed from x · kLargeDown instead, its sums (scaled) times kLargeUp at the end. Powers of two
// scale exactly, so this gives the bits the plain loops would give if they had f32's exponent
// range to spare, apart from elements that fall below 2^-126 once scaled: they are under 2^-62,
// at least 2^126 times smaller than the row's largest element, and their rounding is far inside
// the tolerance. Scaled, the row's largest element lies in [1, 2^64) and no sum can overflow
// (2^64 · 2^23 · 2^40 < 2^128: no row or head is 2^40 long) unless its true value does.
//
// Checking a row reads it once: against the in × out multiply-adds of a projection, or the dk × 256
// of a tile of scores, nothing measurable, so ordinary rows keep their loops unchanged.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/kernels.h"

namespace webattention::kernels {

constexpr float kLargeInput = 0x1p64f;
constexpr float kLargeDown = 0x1p-64f;
constexpr float kLargeUp = 0x1p64f;

// Whether x[0, n) holds a value the integer-code loops may overflow on. No early exit: the
// compiler vectorises the loop.
inline bool row_is_large(const float* x, int n) {
  bool large = false;
  for (int k = 0; k < n; ++k) large |= std::fabs(x[k]) >= kLargeInput;
  return large;
}

// x[0, n) · kLargeDown into out.
inline void scale_down_row(const float* x, int n, float* out) {
  for (int k = 0; k < n; ++k) out[k] = x[k] * kLargeDown;
}

// y = x Wᵀ + b over rows [0, rows) of x (row stride x_stride) for the targets, in order: each
// run of ordinary rows by plain(x, rows, x_stride, targets, target_count), each large row by
// large(row, targets, target_count), the targets' outputs moved to the rows' own. With no large
// row, one plain() over them all, as before. The split cannot change an ordinary row's bits:
// every kernel projects a row to the same bits alone or among others (storage.md §11); a large
// row always takes `large`, so it too comes out the same in a prefill and in a decode step.
template <class Plain, class Large>
void linear_by_large_rows(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                          int target_count, Plain&& plain, Large&& large) {
  int in = 0;  // the x values any target reads
  for (int t = 0; t < target_count; ++t) in = std::max(in, targets[t].weights->in);
  int first = 0;  // the first row not yet computed
  std::vector<LinearTarget> at;
  const auto from_row = [&](int r) {  // the targets, each output at row r
    at.assign(targets, targets + target_count);
    for (LinearTarget& t : at) t.y += r * t.y_stride;
    return at.data();
  };
  for (int r = 0; r < rows; ++r) {
    if (!row_is_large(x + r * x_stride, in)) continue;
    if (r > first) plain(x + first * x_stride, r - first, x_stride, from_row(first), target_count);
    large(x + r * x_stride, from_row(r), target_count);
    first = r + 1;
  }
  if (first == 0) return plain(x, rows, x_stride, targets, target_count);
  if (rows > first) plain(x + first * x_stride, rows - first, x_stride, from_row(first), target_count);
}

}  // namespace webattention::kernels
