// Helpers shared by the C++ tests: seeded random data and a closeness check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention::testing {

// Self-attention over x [batch, L, embed_dim] (query = key = value, S = L) into out: the caller
// adds masks, causal, weights and position ids.
inline MhaForwardArgs self_attention_args(const float* x, int batch, int L, float* out) {
  MhaForwardArgs a;
  a.batch = batch;
  a.L = a.S = L;
  a.query = a.key = a.value = x;
  a.output = out;
  return a;
}

inline std::vector<float> random_floats(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Boolean mask with roughly `fraction` of entries set; key 0 stays allowed in every row so that
// no row is fully masked unless a test wants that.
inline std::vector<std::uint8_t> random_bool_mask(std::size_t rows, std::size_t S,
                                                  std::mt19937& rng, double fraction = 0.3) {
  std::bernoulli_distribution coin(fraction);
  std::vector<std::uint8_t> m(rows * S);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < S; ++j) m[r * S + j] = (j != 0 && coin(rng)) ? 1 : 0;
  return m;
}

// |a - b| <= atol + rtol * |b| for every element.
inline ::testing::AssertionResult all_close(const std::vector<float>& actual,
                                            const std::vector<float>& expected,
                                            double atol = 1e-5, double rtol = 1e-4) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << "size " << actual.size() << " vs " << expected.size();
  }
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], b = expected[i];
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a << " vs expected " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

// load_parameter(name, values) must throw a StateDictError naming `name` whose text holds each
// of `fragments`.
inline void expect_refused_entry(MultiHeadAttention& m, const std::string& name, const std::vector<float>& values,
                                 std::initializer_list<const char*> fragments) {
  try {
    m.load_parameter(name, values.data(), values.size());
    ADD_FAILURE() << "no error";
  } catch (const StateDictError& e) {
    EXPECT_EQ(e.argument(), name);
    for (const char* f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

// Projections that copy their input (each head's query, key and value are the input's features,
// row r of a weight reads feature r mod its width), zero biases: a cache then holds the inputs as
// given.
inline void load_identity(MultiHeadAttention& m) {
  for (const auto& spec : m.parameter_specs()) {
    std::vector<float> w(spec.size(), 0.0f);
    if (spec.shape.size() == 2) {
      for (int r = 0; r < spec.shape[0]; ++r) w[static_cast<std::size_t>(r) * spec.shape[1] + r % spec.shape[1]] = 1.0f;
    }
    m.load_parameter(spec.name, w.data(), w.size());
  }
}

}  // namespace webattention::testing
