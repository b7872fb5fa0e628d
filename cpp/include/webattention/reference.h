// The oracle: a plain, obviously-correct implementation in double precision (Eigen), used only by
// the tests to check every faster path. It materialises the full L×S matrix on purpose.
#pragma once

#include <vector>

#include "webattention/attention.h"
#include "webattention/multihead_attention.h"

namespace webattention::reference {

// Same contract as run_attention(), computed in double with full score matrices.
void run_attention(const AttentionProblem& p);

// MHA from PyTorch-layout parameters (name -> values, as load_parameter() takes them).
struct MhaParameters {
  std::vector<std::pair<std::string, std::vector<float>>> entries;
  const std::vector<float>* find(const std::string& name) const;
};
void mha_forward(const MhaConfig& config, const MhaParameters& params,
                 const MhaForwardArgs& args);

}  // namespace webattention::reference
