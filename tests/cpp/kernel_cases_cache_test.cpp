// The list's cacheAppend cases (tests/cases/kernel_cases.json) on one kernel family: chunks of
// rows appended to a KV cache, each chunk's rows attending over everything cached, against the
// float64 reference. The cache's append is private to the module, so the cases run through the
// public cached forward of a MultiHeadAttention whose Q/K/V projections are identities (no
// biases): its attention then sees the case's Q, K and V as given, and the reference applies the
// (random) output projection after its attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "kernel_case_support.h"
#include "webattention/multihead_attention.h"

namespace webattention::cases {
namespace {

using ::testing::Combine;
using ::testing::ValuesIn;

// Identity Q/K/V weights (a stack of them for in_proj_weight), random out_proj.weight.
void load_identity_projections(MultiHeadAttention& m, std::vector<float>& out_weight) {
  for (const ParameterSpec& spec : m.parameter_specs()) {
    const int rows = spec.shape[0], cols = spec.shape[1];
    std::vector<float> w(spec.size(), 0.0f);
    if (spec.name == "out_proj.weight") {
      w = out_weight = uniform(spec.size(), 31, 0.5);
    } else {
      for (int r = 0; r < rows; ++r) w[static_cast<std::size_t>(r) * cols + r % cols] = 1.0f;
    }
    m.load_parameter(spec.name, w.data(), w.size());
  }
}

// Rows [from, to) of x [B, T, width] as [B, to - from, width].
std::vector<float> rows_of(const std::vector<float>& x, int batch, int T, int width, int from, int to) {
  std::vector<float> part;
  for (int b = 0; b < batch; ++b) {
    const auto row = x.begin() + (static_cast<std::ptrdiff_t>(b) * T) * width;
    part.insert(part.end(), row + static_cast<std::ptrdiff_t>(from) * width, row + static_cast<std::ptrdiff_t>(to) * width);
  }
  return part;
}

KERNEL_CASES(CacheAppendCases, CacheAppendCase, kCacheAppendCases);

TEST_P(CacheAppendCases, MatchesReference) {
  const auto& c = kase();
  MhaConfig config;
  config.embed_dim = c.heads * c.dk;
  config.num_heads = c.heads;
  config.num_kv_heads = c.kv_heads;
  config.kdim = c.kv_heads * c.dk;
  config.vdim = c.kv_heads * c.dv;
  config.head_dim = c.dk;
  config.value_head_dim = c.dv;
  config.bias = false;
  config.weights_dtype = weights_type(types());  // identities are exact in every type
  if (int8_activations(types())) config.activations = StorageType::i8;
  MultiHeadAttention m(config);
  std::vector<float> out_weight;
  load_identity_projections(m, out_weight);
  out_weight = stored_weights(out_weight, config.embed_dim, c.heads * c.dv, config.weights_dtype);
  KvCacheConfig cache_config;
  cache_config.dtype = kv_type(types());
  cache_config.batch = c.batch;
  cache_config.max_length = c.max_length;
  cache_config.window = c.window;
  const auto cache = m.create_cache(cache_config);

  int T = 0;
  for (int n : c.chunks) T += n;
  const int E = config.embed_dim;
  const auto q = uniform(static_cast<std::size_t>(c.batch) * T * E, 41);
  auto k = uniform(static_cast<std::size_t>(c.batch) * T * config.kdim, 42);
  auto v = uniform(static_cast<std::size_t>(c.batch) * T * config.vdim, 43);
  for (const auto& [keys, value] : {std::pair{c.nan_keys, NAN}, std::pair{c.inf_keys, INFINITY}}) {
    poison_keys(k, c.batch, T, config.kdim, keys, value);
    poison_keys(v, c.batch, T, config.vdim, keys, value);
  }
  int at = 0;
  for (int n : c.chunks) {
    const auto q_part = rows_of(q, c.batch, T, E, at, at + n);
    const auto k_part = rows_of(k, c.batch, T, config.kdim, at, at + n);
    const auto v_part = rows_of(v, c.batch, T, config.vdim, at, at + n);
    std::vector<float> out(static_cast<std::size_t>(c.batch) * n * E, NAN);
    MhaForwardArgs a;
    a.batch = c.batch;
    a.L = a.S = n;
    a.query = q_part.data();
    a.key = k_part.data();
    a.value = v_part.data();
    a.output = out.data();
    m.forward(a, *cache);

    // The chunk's rows at positions at..at+n-1 over keys 0..at+n-1, then the output projection.
    const kernel_reference::AttentionShape s{c.batch, c.heads, c.kv_heads, n, at + n, c.dk, c.dv, true, at, c.window};
    // int8 activations: each projection's input rows quantised (the identities then pass them on).
    const auto projected = [&](const std::vector<float>& rows, int width) {
      if (!int8_activations(types())) return rows;
      const std::vector<double> q = projection_input(rows, width, types());
      return std::vector<float>(q.begin(), q.end());
    };
    const auto heads = kernel_reference::attention(s, projected(q_part, E), stored_rows(projected(rows_of(k, c.batch, T, config.kdim, 0, at + n), config.kdim), c.dk, cache_config.dtype),
                                                   stored_rows(projected(rows_of(v, c.batch, T, config.vdim, 0, at + n), config.vdim), c.dv, cache_config.dtype), {}, {}, nullptr);
    const auto expected = kernel_reference::linear(projection_input(heads, c.heads * c.dv, types()), c.batch * n, c.heads * c.dv, out_weight, E, nullptr);
    // The heads are computed: with int8 activations, those by a rounding boundary may go either way.
    std::vector<double> slack;
    if (int8_activations(types())) {
      std::vector<float> abs_weight(out_weight.size());
      for (std::size_t i = 0; i < abs_weight.size(); ++i) abs_weight[i] = std::fabs(out_weight[i]);
      slack = kernel_reference::linear(reference::int8_activation_slack(heads, c.batch * n, c.heads * c.dv, storage::kQuantBlock),
                                       c.batch * n, c.heads * c.dv, abs_weight, E, nullptr);
    }
    EXPECT_TRUE(matches_reference(out.data(), expected, slack)) << "chunk of " << n << " rows at position " << at;
    at += n;
  }
  EXPECT_EQ(cache->length(), T);
}

}  // namespace
}  // namespace webattention::cases
