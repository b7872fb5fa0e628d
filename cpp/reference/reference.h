// The oracle: a plain, obviously-correct implementation in double precision (Eigen), used only by
// the tests to check every faster path. It materialises the full L×S matrix on purpose, and
// reads masks from the public arguments with its own indexing (never the core's mask views), so
// a mask bug cannot be shared by the oracle and the code under test. Shapes are assumed valid:
// the checks belong to the library and have their own tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "webattention/attention.h"
#include "webattention/multihead_attention.h"
#include "reference/storage_reference.h"

namespace webattention::reference {

// Same contract as webattention::scaled_dot_product_attention().
void scaled_dot_product_attention(const SdpaArgs& args);

// MHA from PyTorch-layout parameters (name -> values, as load_parameter() takes them), with the
// contract of MultiHeadAttention::forward().
struct MhaParameters {
  std::vector<std::pair<std::string, std::vector<float>>> entries;
  // A given rotary table (set_rotary_table()), [positions, rotary_dim / 2] each; empty: θ_j.
  std::vector<float> rotary_cos, rotary_sin;
  const std::vector<float>* find(const std::string& name) const;
};
// How far a float32 core may fairly stray from the oracle, where the oracle can tell.
struct Sensitivity {
  // Under activations 'int8' (config.activations == i8, §11), per output element
  // Σ_k |W_O[n, k]| · slack_k of the heads' output entering out_proj (int8_activation_slack with
  // mha_forward's ambiguous_code: the codes a float32 core may round the other way), [B·L, E];
  // zeros without int8 activations.
  std::vector<double> out_slack;
  // qk-norm divides every query and key head by its RMS. Where the projection's terms cancel, the
  // head is small beside its terms, and a float32 core's rounding of them (a few ulps of the terms'
  // magnitudes) is magnified by sqrt(mean(T²)) / sqrt(mean(x²) + eps), T the terms' magnitudes: the
  // largest such gain over every head. A gain near 1/ε_f32 makes the result the rounding's sign,
  // which no tolerance covers. 1 without qk-norm.
  double qk_norm_gain = 1.0;
};

// Under activations 'int8' every projection's input rows are their int8 blocks' values
// (storage_reference.h's int8_activations).
void mha_forward(const MhaConfig& config, const MhaParameters& params, const MhaForwardArgs& args,
                 Sensitivity* sensitivity = nullptr, double ambiguous_code = kAmbiguousCode);

}  // namespace webattention::reference
