// The module configurations and random weights the multi-head attention tests share
// (multihead_attention_test.cpp, score_options_test.cpp).
#pragma once

#include <random>

#include "reference/reference.h"
#include "reference/storage_reference.h"
#include "test_util.h"
#include "webattention/multihead_attention.h"

namespace webattention::testing {

// Loads random parameters of the right shapes into the module and returns them for the oracle:
// the weight matrices as the module's weights_dtype stores them (§11; biases, sinks and norm
// weights stay f32).
inline reference::MhaParameters load_random(MultiHeadAttention& mha, std::mt19937& rng) {
  reference::MhaParameters params;
  for (const auto& spec : mha.parameter_specs()) {
    auto values = random_floats(spec.size(), rng, 0.3f);
    mha.load_parameter(spec.name, values.data(), values.size());
    if (spec.shape.size() == 2) {
      values = reference::stored(values, spec.shape[0], spec.shape[1], mha.config().weights_dtype, 32);
    }
    params.entries.emplace_back(spec.name, std::move(values));
  }
  return params;
}

inline MhaConfig config(int E, int h, int kdim = 0, int vdim = 0, bool bias = true, int dk = 0,
                        int dv = 0, StorageType weights = StorageType::f32) {
  MhaConfig c;
  c.embed_dim = E, c.num_heads = h, c.kdim = kdim, c.vdim = vdim, c.bias = bias;
  c.head_dim = dk, c.value_head_dim = dv;
  c.weights_dtype = weights;
  return c;
}

// `c` with a bias flag per projection, a score scale (0: none given, so 1/sqrt(d_k)) and a softcap (0: none).
inline MhaConfig scored(MhaConfig c, ProjectionBias bias, double scale, double softcap) {
  c.bias = bias;
  if (scale != 0.0) c.scale = scale;
  c.softcap = softcap;
  return c;
}

inline MhaConfig with_sinks(MhaConfig c) {
  c.sinks = true;
  return c;
}

inline ProjectionBias bias_of(bool q, bool k, bool v, bool out) {
  ProjectionBias b;
  b.q = q, b.k = k, b.v = v, b.out = out;
  return b;
}

}  // namespace webattention::testing
