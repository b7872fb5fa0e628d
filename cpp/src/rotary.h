// Rotary position embedding (docs/attention-math.md §8), applied in place to projected rows.
#pragma once

#include <cstdint>
#include <vector>

namespace webattention {

struct RotarySpec {
  int head_dim = 0;                 // features per head; heads are consecutive in a row
  int dim = 0;                      // rotated features per head (even); the rest are left alone
  bool interleaved = false;         // pairs (x_2j, x_2j+1) instead of (x_j, x_{j+dim/2})
  const std::vector<double>* frequencies = nullptr;  // θ_j, j < dim / 2
};

// Rotates every head of `count` rows of width `width` per batch ([batch, count, width]
// contiguous), row i of each batch at position first_position + i. The angles p·θ_j are formed
// and their cosines and sines taken in double, once per position for all heads.
void apply_rotary(float* rows, int batch, int count, int width, std::int64_t first_position,
                  const RotarySpec& spec);

}  // namespace webattention
