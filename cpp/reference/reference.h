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
// Under activations 'int8' (config.activations == i8, §11) every projection's input rows are their
// int8 blocks' values (storage_reference.h's int8_activations); out_slack, where given, receives
// per output element Σ_k |W_O[n, k]| · slack_k of the heads' output entering out_proj
// (int8_activation_slack with ambiguous_code: the codes a float32 core may round the other way),
// [B·L, E]; zeros without int8 activations.
void mha_forward(const MhaConfig& config, const MhaParameters& params, const MhaForwardArgs& args,
                 std::vector<double>* out_slack = nullptr, double ambiguous_code = kAmbiguousCode);

}  // namespace webattention::reference
