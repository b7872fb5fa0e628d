// Rotary position embedding: each pair of features of a head is turned by the angle p·θ_j.
#include "rotary.h"

#include <cmath>
#include <cstddef>

namespace webattention {

void apply_rotary(float* rows, int batch, int count, int width, std::int64_t first_position,
                  const RotarySpec& spec) {
  const int half = spec.dim / 2;
  if (half == 0) return;
  const std::vector<double>& theta = *spec.frequencies;
  std::vector<float> cosines(half), sines(half);
  // Pair j of a head: features (j, j + half) half-split (GPT-NeoX, Llama), (2j, 2j + 1)
  // interleaved (GPT-J).
  const int first_step = spec.interleaved ? 2 : 1;
  const int second_offset = spec.interleaved ? 1 : half;
  for (int i = 0; i < count; ++i) {
    // In double: a float angle at position 10^5 would be off by ~0.01 radian.
    const double position = static_cast<double>(first_position + i);
    for (int j = 0; j < half; ++j) {
      cosines[j] = static_cast<float>(std::cos(position * theta[j]));
      sines[j] = static_cast<float>(std::sin(position * theta[j]));
    }
    for (int b = 0; b < batch; ++b) {
      float* row = rows + (static_cast<std::ptrdiff_t>(b) * count + i) * width;
      for (int head = 0; head + spec.head_dim <= width; head += spec.head_dim) {
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

}  // namespace webattention
