// Weights written straight into the module's storage (begin_load_in_place / finish_load_in_place,
// the JS side's loadStateDict for f32): the same module as load_parameter() makes, bit for bit,
// for in_proj_weight's three parts, separate q/k/v entries and widths that are no multiple of 8;
// nothing changes until finish; what does not apply (a bias, 16-bit sources, narrow storage)
// returns no parts; a bad name or count is refused as load_parameter() refuses it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mha_test_support.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

using testing::config;
using testing::random_floats;

// Loads `values` into entry `name` in place when the module takes it that way (returns false,
// having changed nothing, where it does not).
bool load_in_place(MultiHeadAttention& m, const std::string& name, const std::vector<float>& values) {
  const auto parts = m.begin_load_in_place(name, values.size(), StorageType::f32);
  if (parts.empty()) return false;
  for (const auto& p : parts) std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(p.offset), p.count, p.to);
  m.finish_load_in_place();
  return true;
}

// The module's output for L positions of inputs drawn from `seed`: query [L, E], key [L, kdim]
// and value [L, vdim] (each E when 0).
std::vector<float> forward(const MultiHeadAttention& m, int L, std::uint32_t seed) {
  const MhaConfig& c = m.config();
  std::mt19937 rng(seed);
  const auto input = [&](int width) { return random_floats(static_cast<std::size_t>(L) * (width ? width : c.embed_dim), rng); };
  const std::vector<float> q = input(c.embed_dim), k = input(c.kdim), v = input(c.vdim);
  std::vector<float> out(static_cast<std::size_t>(L) * c.embed_dim);
  MhaForwardArgs a;
  a.L = a.S = L;
  a.query = q.data();
  a.key = k.data();
  a.value = v.data();
  a.output = out.data();
  m.forward(a);
  return out;
}

TEST(LoadInPlace, SameModuleAsLoadParameter) {
  // (E, h, kdim, vdim, dk): in_proj_weight; separate q/k/v entries (kdim, vdim); widths of 12
  // and 20 (panels of 8 with padding); head widths apart from E / h.
  const int shapes[][5] = {{16, 2, 0, 0, 0}, {12, 3, 0, 0, 0}, {20, 4, 12, 28, 0}, {24, 2, 0, 0, 6}};
  for (const auto& s : shapes) {
    SCOPED_TRACE("E " + std::to_string(s[0]) + ", kdim " + std::to_string(s[2]) + ", vdim " + std::to_string(s[3]));
    const MhaConfig c = config(s[0], s[1], s[2], s[3], true, s[4]);
    MultiHeadAttention copied(c), in_place(c);
    std::mt19937 rng(11);
    int loaded_in_place = 0;
    for (const auto& spec : copied.parameter_specs()) {
      const std::vector<float> values = random_floats(spec.size(), rng, 0.3f);
      copied.load_parameter(spec.name, values.data(), values.size());
      if (load_in_place(in_place, spec.name, values)) {
        ++loaded_in_place;
        EXPECT_EQ(spec.shape.size(), 2u) << spec.name;
      } else {
        EXPECT_EQ(spec.shape.size(), 1u) << spec.name << ": a weight matrix not taken in place";
        in_place.load_parameter(spec.name, values.data(), values.size());
      }
    }
    EXPECT_GE(loaded_in_place, 2);
    EXPECT_TRUE(in_place.missing_parameters().empty());
    const std::vector<float> a = forward(copied, 5, 4), b = forward(in_place, 5, 4);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
    for (const auto& spec : copied.parameter_specs()) {  // and reads back as given
      std::vector<float> ra(spec.size()), rb(spec.size());
      copied.read_parameter(spec.name, ra.data(), ra.size());
      in_place.read_parameter(spec.name, rb.data(), rb.size());
      EXPECT_EQ(ra, rb) << spec.name;
    }
  }
}

TEST(LoadInPlace, NothingChangesUntilFinish) {
  MultiHeadAttention m(config(16, 2));
  std::mt19937 rng(3);
  testing::load_random(m, rng);
  const std::vector<float> before = forward(m, 3, 5);
  const auto parts = m.begin_load_in_place("in_proj_weight", 3 * 16 * 16, StorageType::f32);
  ASSERT_EQ(parts.size(), 3u);
  for (const auto& p : parts) std::fill_n(p.to, p.count, 0.5f);
  EXPECT_EQ(forward(m, 3, 5), before);
  // Another begin drops these parts: the weights stay the old ones, and a finish with nothing
  // begun is refused.
  EXPECT_TRUE(m.begin_load_in_place("in_proj_bias", 3 * 16, StorageType::f32).empty());
  EXPECT_THROW(m.finish_load_in_place(), StateDictError);
  EXPECT_EQ(forward(m, 3, 5), before);
}

TEST(LoadInPlace, RefusesAndDeclinesAsLoadParameter) {
  MultiHeadAttention m(config(16, 2));
  EXPECT_THROW(m.begin_load_in_place("in_proj_weights", 768, StorageType::f32), StateDictError);
  EXPECT_THROW(m.begin_load_in_place("in_proj_weight", 767, StorageType::f32), StateDictError);
  EXPECT_TRUE(m.begin_load_in_place("in_proj_weight", 768, StorageType::f16).empty());
  EXPECT_TRUE(m.begin_load_in_place("out_proj.bias", 16, StorageType::f32).empty());
  MultiHeadAttention narrow(config(16, 2, 0, 0, true, 0, 0, StorageType::f16));
  EXPECT_TRUE(narrow.begin_load_in_place("in_proj_weight", 768, StorageType::f32).empty());
}

}  // namespace
}  // namespace webattention
