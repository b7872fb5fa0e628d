// Rotary position embedding: each pair of features of a head is turned by the angle p·θ_j.
#include "rotary.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace webattention {

void apply_rotary(const RotaryRows* tensors, int count, int batch, std::int64_t first_position,
                  const std::int32_t* position_ids, const RotarySpec& spec, float* table) {
  const int half = spec.dim / 2;
  if (half == 0) return;
  const std::vector<double>& theta = *spec.frequencies;
  float* cosines = table;
  float* sines = table + half;
  // Pair j of a head: features (j, j + half) half-split (GPT-NeoX, Llama), (2j, 2j + 1)
  // interleaved (GPT-J).
  const int first_step = spec.interleaved ? 2 : 1;
  const int second_offset = spec.interleaved ? 1 : half;
  int positions = 0;
  for (int t = 0; t < count; ++t) positions = std::max(positions, tensors[t].count);
  std::int64_t formed = -1;  // the position `table` holds
  for (int i = 0; i < positions; ++i) {
    for (int b = 0; b < batch; ++b) {
      const std::int64_t position =
          position_ids ? position_ids[static_cast<std::ptrdiff_t>(b) * positions + i] : first_position + i;
      if (position != formed) {
        formed = position;
        if (spec.table_cos) {
          const std::size_t row = static_cast<std::size_t>(position) * half;
          std::copy_n(spec.table_cos + row, half, cosines);
          std::copy_n(spec.table_sin + row, half, sines);
        } else {
          // In double: a float angle at position 10^5 would be off by ~0.01 radian.
          for (int j = 0; j < half; ++j) {
            cosines[j] = static_cast<float>(std::cos(static_cast<double>(position) * theta[j]));
            sines[j] = static_cast<float>(std::sin(static_cast<double>(position) * theta[j]));
          }
        }
      }
      for (int t = 0; t < count; ++t) {
        const RotaryRows& r = tensors[t];
        if (i >= r.count) continue;
        float* row = r.rows + (static_cast<std::ptrdiff_t>(b) * r.count + i) * r.width;
        for (int head = 0; head + spec.head_dim <= r.width; head += spec.head_dim) {
          float* x = row + head;
          for (int j = 0; j < half; ++j) {
            float& a = x[j * first_step];
            float& b2 = x[j * first_step + second_offset];
            const float x1 = a, x2 = b2;
            a = x1 * cosines[j] - x2 * sines[j];
            b2 = x2 * cosines[j] + x1 * sines[j];
          }
        }
      }
    }
  }
}

std::vector<double> rotary_frequencies(const MhaConfig& c) {
  constexpr double kTwoPi = 6.283185307179586;
  std::vector<double> theta;
  for (int j = 0; j < c.rotary_dim / 2; ++j) {
    const double t = std::pow(c.rotary_base, -2.0 * j / c.rotary_dim);
    if (c.rotary_scaling == MhaConfig::RotaryScaling::kLinear) {
      theta.push_back(t / c.rotary_factor);
    } else if (c.rotary_scaling == MhaConfig::RotaryScaling::kLlama3) {
      // In units of the trained context: a wavelength that fits it high_freq_factor times or
      // more is kept, one that does not fit low_freq_factor times is stretched by factor, and
      // between the two the frequency is blended linearly in (context / wavelength).
      const double per_context = c.rotary_original_max_positions / (kTwoPi / t);
      const double blend = (per_context - c.rotary_low_freq_factor) /
                           (c.rotary_high_freq_factor - c.rotary_low_freq_factor);
      theta.push_back(blend >= 1.0 ? t : blend <= 0.0 ? t / c.rotary_factor
                                                      : (1.0 - blend) * t / c.rotary_factor + blend * t);
    } else {
      theta.push_back(t);
    }
  }
  return theta;
}

}  // namespace webattention
