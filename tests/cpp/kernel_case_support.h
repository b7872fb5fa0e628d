// What the kernel-level case tests share (kernel_cases_test.cpp, kernel_cases_cache_test.cpp):
// the kernel family under test, the type-set check, seeded inputs, the masks' rule
// (tests/cases/README.md) and the comparison with the float64 reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernel_cases.h"
#include "kernel_reference.h"
#include "reference/storage_reference.h"
#include "kernels/storage_convert.h"
#include "webattention/storage_type.h"

namespace webattention::cases {

// The kernel family this executable links (tests/cpp/kernel_cases.cmake): scalar, simd128 or
// relaxed.
inline const char* family() { return WEBATTENTION_KERNEL_FAMILY; }

// A type set's storage type names ("f32", "f16", "bf16", "i8", "q4") as the core's; false for another.
inline bool storage_type(const std::string& name, StorageType& type) {
  static const std::pair<const char*, StorageType> kNames[] = {
      {"f32", StorageType::f32}, {"f16", StorageType::f16}, {"bf16", StorageType::bf16}, {"i8", StorageType::i8}, {"q4", StorageType::q4}};
  for (const auto& [spelling, t] : kNames) {
    if (name == spelling) {
      type = t;
      return true;
    }
  }
  return false;
}
inline StorageType weights_type(const TypeSet& t) {
  StorageType type = StorageType::f32;
  storage_type(t.weights, type);
  return type;
}
inline StorageType kv_type(const TypeSet& t) {
  StorageType type = StorageType::f32;
  storage_type(t.kv, type);
  return type;
}

// Whether the type set's projections take int8 activations (create()'s activations 'int8').
inline bool int8_activations(const TypeSet& t) { return t.act == "i8"; }

// Whether this build has kernels for a type set: weights f32, f16, bf16, int8 or int4; a cache f32,
// f16 or int8; f32 inputs and outputs (the JS side converts 16-bit ones); f32 activations, or int8
// ones with int8 or int4 weights. A type set it lacks fails the case (the list must not name types
// no kernel has).
inline ::testing::AssertionResult has_kernels(const TypeSet& t) {
  StorageType weights, kv;
  const bool act = t.act == "f32" || (t.act == "i8" && (t.weights == "i8" || t.weights == "q4"));
  if (storage_type(t.weights, weights) && storage_type(t.kv, kv) && kv != StorageType::bf16 && kv != StorageType::q4 && t.io == "f32" && act) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no " << family() << " kernels for weights " << t.weights
                                       << ", kv " << t.kv << ", io " << t.io << ", act " << t.act;
}

// The values a weight matrix [out, in] or K/V rows [rows, d] hold in `type` (the reference's
// rule: cpp/reference/storage_reference.h): int8 and int4 weights in blocks of 32 along a row, a cache
// row one block.
inline std::vector<float> stored_weights(const std::vector<float>& w, int out, int in, StorageType type) {
  return reference::stored(w, out, in, type, storage::kQuantBlock);
}
// A projection's input rows [rows, in] as the type set's activations give them to the weights
// (int8: cpp/reference/storage_reference.h's int8_activations, in blocks of 32).
template <class T>
std::vector<double> projection_input(const std::vector<T>& x, int in, const TypeSet& t) {
  if (!int8_activations(t)) return std::vector<double>(x.begin(), x.end());
  const std::vector<float> f(x.begin(), x.end());  // the core's rows are f32
  return reference::int8_activations(f, static_cast<int>(x.size() / in), in, storage::kQuantBlock);
}
inline std::vector<float> stored_rows(const std::vector<float>& x, int d, StorageType type) {
  return reference::stored(x, static_cast<int>(x.size() / d), d, type, d);
}

// n uniform values in [-amplitude, amplitude).
inline std::vector<float> uniform(std::size_t n, std::uint32_t seed, double amplitude = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(static_cast<float>(-amplitude), static_cast<float>(amplitude));
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// One entry of a list's mask: the boolean rule's answer, and the additive value (−∞ where the
// boolean rule masks, for kind "additive-inf").
inline void push_entry(kernel_reference::Mask& m, const std::string& kind, bool masked, float value) {
  m.boolean.push_back(masked);
  m.additive.push_back(kind == "additive-inf" && masked ? -INFINITY : value);
}

// The list's masks ("none" | "bool" | "additive" | "additive-inf"), by the rule of
// tests/cases/README.md.
inline kernel_reference::Mask key_padding_mask(const std::string& kind, int batch, int S) {
  kernel_reference::Mask m;
  if (kind == "none") return m;
  m.kind = kind == "bool" ? MaskKind::kBoolean : MaskKind::kAdditive;
  for (int b = 0; b < batch; ++b) {
    for (int j = 0; j < S; ++j) push_entry(m, kind, (j + b) % 4 == 3, static_cast<float>((3 * j + b) % 5 - 2) / 4.0f);
  }
  return m;
}

inline kernel_reference::Mask attn_mask(const std::string& kind, int batch, int heads, int L, int S,
                                        const std::vector<int>& masked_rows) {
  kernel_reference::Mask m;
  if (kind == "none") return m;
  m.kind = kind == "bool" ? MaskKind::kBoolean : MaskKind::kAdditive;
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < L; ++i) {
        const bool whole_row = std::find(masked_rows.begin(), masked_rows.end(), i) != masked_rows.end();
        for (int j = 0; j < S; ++j) {
          push_entry(m, kind, whole_row || (i + 2 * j + b + h) % 5 == 0, static_cast<float>((3 * i + 5 * j + h) % 7 - 3) / 2.0f);
        }
      }
    }
  }
  return m;
}

// Sets every K/V head's row of each key in `keys` to `value` (NaN, Inf) in x [batch, S, width]:
// the list's nanKeys and infKeys.
inline void poison_keys(std::vector<float>& x, int batch, int S, int width, const std::vector<int>& keys, float value) {
  for (int b = 0; b < batch; ++b)
    for (int j : keys) std::fill_n(x.begin() + (static_cast<std::ptrdiff_t>(b) * S + j) * width, width, value);
}

// The test contract's tolerance: |actual - expected| <= 1e-4 + 1e-4 |expected| (+ slack[i] where
// given: int8 activations of a computed input, storage_reference.h's int8_activation_slack); a
// non-finite expected value (a row that sees a NaN key) must come out exactly so.
inline ::testing::AssertionResult matches_reference(const float* actual, const std::vector<double>& expected,
                                                    const std::vector<double>& slack = {}) {
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const bool same_non_finite = !std::isfinite(expected[i]) &&
                                 (std::isnan(expected[i]) ? std::isnan(actual[i]) : actual[i] == expected[i]);
    const double bound = 1e-4 + 1e-4 * std::fabs(expected[i]) + (slack.empty() ? 0.0 : slack[i]);
    if (!same_non_finite && !(std::fabs(actual[i] - expected[i]) <= bound)) {
      return ::testing::AssertionFailure() << "element " << i << " of " << expected.size() << ": "
                                           << actual[i] << ", reference " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// The tests of one op: its cases × the list's type sets. A type set with no kernels in this build
// fails in SetUp (the body never runs), so nothing is skipped silently.
template <class Case>
class CaseTest : public ::testing::TestWithParam<std::tuple<Case, TypeSet>> {
 protected:
  void SetUp() override { ASSERT_TRUE(has_kernels(std::get<1>(this->GetParam()))); }
  const Case& kase() const { return std::get<0>(this->GetParam()); }
  const TypeSet& types() const { return std::get<1>(this->GetParam()); }
};

// Declares the tests of one op, `Suite` over `Case`, and instantiates them over `cases` × the
// list's type sets (the TEST_Ps that follow are registered lazily, so they may come after).
#define KERNEL_CASES(Suite, Case, cases)                                                        \
  class Suite : public CaseTest<Case> {};                                                       \
  INSTANTIATE_TEST_SUITE_P(List, Suite,                                                         \
                           ::testing::Combine(::testing::ValuesIn(cases),                       \
                                              ::testing::ValuesIn(kTypeSets)),                  \
                           test_name<Case>)

// A GoogleTest name from a case name: letters and digits, the rest as '_'.
template <class Case>
std::string test_name(const ::testing::TestParamInfo<std::tuple<Case, TypeSet>>& info) {
  const auto& [c, types] = info.param;
  std::string name = c.name + "_" + types.weights + "_" + types.kv + "_" + types.io + (types.act == "f32" ? "" : "_act_" + types.act);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

}  // namespace webattention::cases
