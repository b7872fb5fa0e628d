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

namespace {

// max |in[i]| over n values; `finite` tells whether they all are.
double max_magnitude(const float* in, int n, bool& finite) {
  double amax = 0.0;
  finite = true;
  for (int i = 0; i < n; ++i) {
    finite = finite && std::isfinite(in[i]);
    amax = std::max(amax, std::fabs(static_cast<double>(in[i])));
  }
  return amax;
}

// int8: one block's stored values, its own scale max|x| / 127 (a non-finite block is NaN).
void stored_i8_block(const float* in, int n, float* out) {
  bool finite;
  const double amax = max_magnitude(in, n, finite);
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

// int4: llama.cpp's q4_0 rule, from its definition. m: the block's first value of largest
// magnitude, sign kept; d = m / -8 and its reciprocal id = 1 / d, each an f32 result; a value x
// becomes the code floor(x · id + 8.5) (the product and the sum each rounded to f32; never
// negative for a finite id), at most 15, and is stored as (code - 8) · d. All zero: d = 0, every
// value 0. Each f32 operation is done in double and rounded to f32 once (correctly rounded both ways).
void stored_q4_block(const float* in, int n, float* out) {
  double m = 0.0;
  bool finite = true;
  for (int i = 0; i < n; ++i) {
    finite = finite && std::isfinite(in[i]);
    if (std::fabs(static_cast<double>(in[i])) > std::fabs(m)) m = in[i];
  }
  const float d = static_cast<float>(m / -8.0);
  const float id = d != 0.0f ? static_cast<float>(1.0 / static_cast<double>(d)) : 0.0f;
  for (int i = 0; i < n; ++i) {
    if (!finite) {
      out[i] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    const float product = static_cast<float>(static_cast<double>(in[i]) * id);
    const double t = static_cast<float>(static_cast<double>(product) + 8.5);
    const double code = std::isnan(t) ? 8.0 : std::clamp(std::floor(t), 0.0, 15.0);
    out[i] = static_cast<float>((code - 8.0) * d);
  }
}

}  // namespace

std::vector<float> stored(const std::vector<float>& x, int rows, int cols, StorageType type, int block) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (type == StorageType::f16) y[i] = round_to_f16(x[i]);
    if (type == StorageType::bf16) y[i] = round_to_bf16(x[i]);
    if (type == StorageType::f32) y[i] = x[i];
  }
  if (type != StorageType::i8 && type != StorageType::q4) return y;
  for (int r = 0; r < rows; ++r) {
    for (int c0 = 0; c0 < cols; c0 += block) {
      const std::size_t at = static_cast<std::size_t>(r) * cols + c0;
      const int n = std::min(block, cols - c0);
      if (type == StorageType::i8) stored_i8_block(x.data() + at, n, y.data() + at);
      if (type == StorageType::q4) stored_q4_block(x.data() + at, n, y.data() + at);
    }
  }
  return y;
}

std::vector<double> int8_activations(const std::vector<float>& x, int rows, int cols, int block) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    for (int c0 = 0; c0 < cols; c0 += block) {
      const float* in = x.data() + static_cast<std::size_t>(r) * cols + c0;
      double* out = y.data() + static_cast<std::size_t>(r) * cols + c0;
      const int n = std::min(block, cols - c0);
      bool finite;
      const double amax = max_magnitude(in, n, finite);
      // Each f32 operation done in double and rounded to f32 once (correctly rounded both ways).
      const float d = static_cast<float>(amax / 127.0);
      for (int i = 0; i < n; ++i) {
        const float quotient = d > 0.0f ? static_cast<float>(static_cast<double>(in[i]) / d) : 0.0f;
        const double q = std::clamp(std::round(static_cast<double>(quotient)), -127.0, 127.0);
        out[i] = finite ? q * d : std::numeric_limits<double>::quiet_NaN();
      }
    }
  }
  return y;
}

std::vector<double> int8_activation_slack(const std::vector<double>& x, int rows, int cols, int block, double ambiguous) {
  std::vector<double> slack(x.size(), 0.0);
  for (int r = 0; r < rows; ++r) {
    for (int c0 = 0; c0 < cols; c0 += block) {
      const std::size_t at = static_cast<std::size_t>(r) * cols + c0;
      const int n = std::min(block, cols - c0);
      double amax = 0.0;
      for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[at + i]));
      const double d = amax / 127.0;
      if (!(d > 0.0) || !std::isfinite(d)) continue;
      for (int i = 0; i < n; ++i) {
        const double t = std::fabs(x[at + i]) / d;
        if (std::fabs(t - std::floor(t) - 0.5) < ambiguous) slack[at + i] = d;
      }
    }
  }
  return slack;
}

}  // namespace webattention::reference
