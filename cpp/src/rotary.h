// Rotary position embedding (docs/attention-math/decoding.md §8), applied in place to projected rows.
#pragma once

#include <cstdint>
#include <vector>

#include "webattention/multihead_attention.h"

namespace webattention {

struct RotarySpec {
  int head_dim = 0;                 // features per head; heads are consecutive in a row
  int dim = 0;                      // rotated features per head (even); the rest are left alone
  bool interleaved = false;         // pairs (x_2j, x_2j+1) instead of (x_j, x_{j+dim/2})
  const std::vector<double>* frequencies = nullptr;  // θ_j, j < dim / 2
  // A given table instead (rotary: { table }): cos and sin of position p at [p·dim/2, (p+1)·dim/2),
  // positions 0 … table_positions − 1 (the caller checks the rows it rotates are there).
  const float* table_cos = nullptr;
  const float* table_sin = nullptr;
};

// θ_j = base^(−2j/dim) for j < dim/2, scaled as config's rotary_scaling says (multihead_attention.h).
std::vector<double> rotary_frequencies(const MhaConfig& config);

// `count` rows of width `width` per batch ([batch, count, width] contiguous), every head rotated.
struct RotaryRows {
  float* rows;
  int count, width;
};

// Rotates each tensor of `tensors`, row i of batch b at position position_ids[b·rows + i] when
// position_ids is given (rows: the largest count; the caller checked every id is in range), else
// at first_position + i. The angles p·θ_j and their cosines and sines are formed in double once
// per run of equal positions, for every head of every tensor (Q and K at the same positions share
// them). `table` holds spec.dim floats.
void apply_rotary(const RotaryRows* tensors, int count, int batch, std::int64_t first_position,
                  const std::int32_t* position_ids, const RotarySpec& spec, float* table);

}  // namespace webattention
