#include "reference/storage_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace webattention::reference {
namespace {

// x rounded to `mantissa` fraction bits with exponents down to `min_exponent` (below it, the
// subnormal spacing), ties to even; values from `overflow` on become ±Inf. In double, where every
// step is exact.
float round_binary(float x, int mantissa, int min_exponent, double overflow) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0f) return x;
  const double a = std::fabs(static_cast<double>(x));
  int e;
  std::frexp(a, &e);  // a = f · 2^e, f in [0.5, 1): the leading bit has weight 2^(e - 1)
  const double ulp = std::ldexp(1.0, std::max(e - 1, min_exponent) - mantissa);
  double r = std::nearbyint(a / ulp) * ulp;
  if (r >= overflow) r = std::numeric_limits<double>::infinity();
  return static_cast<float>(std::copysign(r, static_cast<double>(x)));
}

}  // namespace

// f16: 10 fraction bits, exponents from -14, largest 65504 (ties at 65520 round up to Inf).
float round_to_f16(float x) { return round_binary(x, 10, -14, 65520.0); }
// bf16: 7 fraction bits, f32's exponent range; rounding up past the largest finite gives 2^128.
float round_to_bf16(float x) { return round_binary(x, 7, -126, std::ldexp(1.0, 128)); }

std::vector<float> stored(const std::vector<float>& x, int rows, int cols, StorageType type, int block) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (type == StorageType::f16) y[i] = round_to_f16(x[i]);
    if (type == StorageType::bf16) y[i] = round_to_bf16(x[i]);
    if (type == StorageType::f32) y[i] = x[i];
  }
  if (type != StorageType::i8) return y;
  for (int r = 0; r < rows; ++r) {
    for (int c0 = 0; c0 < cols; c0 += block) {
      const int n = std::min(block, cols - c0);
      const float* in = x.data() + static_cast<std::size_t>(r) * cols + c0;
      float* out = y.data() + static_cast<std::size_t>(r) * cols + c0;
      double amax = 0.0;
      bool finite = true;
      for (int i = 0; i < n; ++i) {
        finite = finite && std::isfinite(in[i]);
        amax = std::max(amax, std::fabs(static_cast<double>(in[i])));
      }
      // The scale and each quotient are f32 operations: a double operation rounded to f32 once
      // gives the same (both are correctly rounded); q · scale is exact in double.
      const float scale = static_cast<float>(amax / 127.0);
      for (int i = 0; i < n; ++i) {
        if (!finite) {
          out[i] = std::numeric_limits<float>::quiet_NaN();
          continue;
        }
        const double q = scale > 0.0f ? std::nearbyint(static_cast<double>(static_cast<float>(in[i] / static_cast<double>(scale)))) : 0.0;
        out[i] = static_cast<float>(std::clamp(q, -127.0, 127.0) * scale);
      }
    }
  }
  return y;
}

}  // namespace webattention::reference
