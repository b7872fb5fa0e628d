// Multi-head attention against the double-precision reference, and its state-dict checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "mha_test_support.h"
#include "reference/reference.h"
#include "reference/storage_reference.h"
#include "test_util.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

using testing::all_close;
using testing::random_bool_mask;
using testing::bias_of;
using testing::config;
using testing::load_random;
using testing::random_floats;
using testing::scored;
using testing::with_sinks;

struct MhaCase {
  const char* name;
  MhaConfig config;
  int B, L, S;
  MaskKind key_padding, attn_mask;
  bool per_head_mask, causal, weights, average;
};

class MhaVsReference : public ::testing::TestWithParam<MhaCase> {};

// One case's module (random weights), inputs and masks, and the forward arguments over them.
struct MhaFixture {
  MultiHeadAttention mha;
  reference::MhaParameters params;
  std::vector<float> query, key, value, kp_add, am_add;
  std::vector<std::uint8_t> kp_bool, am_bool;
  MhaForwardArgs args;
  std::size_t out_size = 0, weights_size = 0;

  explicit MhaFixture(const MhaCase& c) : mha(c.config) {
    std::mt19937 rng(42);
    const MhaConfig& cfg = mha.config();
    params = load_random(mha, rng);
    const int H = cfg.num_heads;
    query = random_floats(static_cast<std::size_t>(c.B) * c.L * cfg.embed_dim, rng);
    key = random_floats(static_cast<std::size_t>(c.B) * c.S * cfg.kdim, rng);
    value = random_floats(static_cast<std::size_t>(c.B) * c.S * cfg.vdim, rng);
    kp_bool = random_bool_mask(c.B, c.S, rng);
    kp_add = random_floats(static_cast<std::size_t>(c.B) * c.S, rng);
    const std::size_t mask_rows = static_cast<std::size_t>(c.per_head_mask ? c.B * H : 1) * c.L;
    am_bool = random_bool_mask(mask_rows, c.S, rng);
    am_add = random_floats(mask_rows * c.S, rng);

    MhaForwardArgs& a = args;
    a.batch = c.B, a.L = c.L, a.S = c.S;
    a.query = query.data(), a.key = key.data(), a.value = value.data();
    a.key_padding_mask = {c.key_padding,
                          c.key_padding == MaskKind::kBoolean
                              ? static_cast<const void*>(kp_bool.data())
                              : kp_add.data(),
                          {c.B, c.S}};
    a.attn_mask = {c.attn_mask,
                   c.attn_mask == MaskKind::kBoolean ? static_cast<const void*>(am_bool.data())
                                                      : am_add.data(),
                   c.per_head_mask ? std::vector<int>{c.B * H, c.L, c.S}
                                   : std::vector<int>{c.L, c.S}};
    a.causal = c.causal;
    a.average_weights = c.average;
    out_size = static_cast<std::size_t>(c.B) * c.L * cfg.embed_dim;
    weights_size =
        c.weights ? static_cast<std::size_t>(c.B) * (c.average ? 1 : H) * c.L * c.S : 0;
  }
};

TEST_P(MhaVsReference, MatchesReference) {
  const MhaCase c = GetParam();
  MhaFixture f(c);
  MhaForwardArgs a = f.args;
  std::vector<float> out(f.out_size), ref_out(out.size());
  std::vector<float> w(f.weights_size), ref_w(w.size());

  a.output = out.data();
  a.weights = c.weights ? w.data() : nullptr;
  f.mha.forward(a);
  a.output = ref_out.data();
  a.weights = c.weights ? ref_w.data() : nullptr;
  reference::mha_forward(c.config, f.params, a);

  EXPECT_TRUE(all_close(out, ref_out, 1e-5, 1e-4));
  EXPECT_TRUE(all_close(w, ref_w, 1e-6, 1e-4));
}

// What a worker pool does: split the heads into ranges, run forward_heads() per range, gather
// the head outputs (and add up or place the weights), then project_output(). Must equal the
// reference and forward().
TEST_P(MhaVsReference, HeadRangesAssembleToForward) {
  const MhaCase c = GetParam();
  MhaFixture f(c);
  const MhaConfig& cfg = f.mha.config();
  const int H = cfg.num_heads, dv = cfg.value_head_dim, rows = c.B * c.L;
  const std::size_t LS = static_cast<std::size_t>(c.L) * c.S;
  MhaForwardArgs a = f.args;
  std::vector<float> ref_out(f.out_size), ref_w(f.weights_size), forward_out(f.out_size);
  a.output = ref_out.data();
  a.weights = c.weights ? ref_w.data() : nullptr;
  reference::mha_forward(c.config, f.params, a);
  a.output = forward_out.data();
  a.weights = nullptr;
  f.mha.forward(a);

  // Head ranges: all heads, two halves, one head each, all but the last and the last.
  std::vector<std::vector<int>> partitions = {{0, H}, {0, (H + 1) / 2, H}, {}, {0, H - 1, H}};
  for (int h = 0; h <= H; ++h) partitions[2].push_back(h);
  for (auto bounds : partitions) {
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());  // H = 1
    if (bounds.front() == bounds.back()) bounds = {0, H};
    SCOPED_TRACE(::testing::Message() << bounds.size() - 1 << " head ranges");
    std::vector<float> heads(static_cast<std::size_t>(rows) * H * dv), w(f.weights_size);
    for (std::size_t r = 0; r + 1 < bounds.size(); ++r) {
      const int hb = bounds[r], he = bounds[r + 1], n = he - hb, width = n * dv;
      std::vector<float> part(static_cast<std::size_t>(rows) * width);
      // Filled with garbage: forward_heads() must overwrite, not accumulate into, its weights.
      std::vector<float> wpart(c.weights ? c.B * (c.average ? 1 : n) * LS : 0, -7.0f);
      a.weights = c.weights ? wpart.data() : nullptr;
      f.mha.forward_heads(a, hb, he, part.data());
      for (int i = 0; i < rows; ++i)
        std::copy_n(part.begin() + static_cast<std::ptrdiff_t>(i) * width, width,
                    heads.begin() + static_cast<std::ptrdiff_t>(i) * H * dv + hb * dv);
      for (int b = 0; b < c.B && c.weights; ++b) {
        if (c.average) {
          for (std::size_t j = 0; j < LS; ++j) w[b * LS + j] += wpart[b * LS + j];
        } else {
          std::copy_n(wpart.begin() + static_cast<std::ptrdiff_t>(b * n * LS), n * LS,
                      w.begin() + static_cast<std::ptrdiff_t>((b * H + hb) * LS));
        }
      }
    }
    std::vector<float> out(f.out_size);
    f.mha.project_output(heads.data(), rows, out.data());
    EXPECT_TRUE(all_close(out, ref_out, 1e-5, 1e-4));
    EXPECT_TRUE(all_close(out, forward_out, 1e-6, 1e-5));
    EXPECT_TRUE(all_close(w, ref_w, 1e-6, 1e-4));
  }
}

constexpr auto kNo = MaskKind::kNone;
constexpr auto kBool = MaskKind::kBoolean;
constexpr auto kAdd = MaskKind::kAdditive;
constexpr auto kF16 = StorageType::f16;
constexpr auto kBF16 = StorageType::bf16;
constexpr auto kI8 = StorageType::i8;

INSTANTIATE_TEST_SUITE_P(
    Cases, MhaVsReference,
    ::testing::Values(
        MhaCase{"self", config(16, 4), 2, 5, 5, kNo, kNo, false, false, true, true},
        MhaCase{"cross", config(16, 4, 12, 7), 2, 5, 9, kNo, kNo, false, false, true, false},
        MhaCase{"no_bias", config(12, 3, 0, 0, false), 1, 4, 6, kNo, kNo, false, false, false,
                true},
        MhaCase{"free_dims", config(16, 4, 0, 0, true, 5, 3), 2, 6, 8, kBool, kNo, false, false,
                true, false},
        MhaCase{"key_padding_bool", config(8, 2), 3, 4, 7, kBool, kNo, false, false, true, true},
        MhaCase{"key_padding_float", config(8, 2), 3, 4, 7, kAdd, kNo, false, false, true, true},
        MhaCase{"attn_mask_2d_bool", config(8, 2), 2, 4, 7, kNo, kBool, false, false, true, true},
        MhaCase{"attn_mask_3d_float", config(8, 2), 2, 4, 7, kBool, kAdd, true, false, true,
                false},
        MhaCase{"causal", config(8, 4), 2, 9, 9, kBool, kNo, false, true, true, false},
        MhaCase{"head_dim_1", config(4, 4), 1, 3, 3, kNo, kNo, false, false, true, false},
        MhaCase{"one_token", config(8, 2), 1, 1, 1, kNo, kNo, false, false, true, true},
        MhaCase{"long", config(16, 2), 1, 64, 1030, kNo, kNo, false, false, false, true},
        // Qwen2: biases on q, k and v only (in_proj_bias, no out_proj.bias).
        MhaCase{"qkv_bias_only", scored(config(16, 4), bias_of(true, true, true, false), 0, 0), 2, 5, 7,
                kBool, kNo, false, false, true, true},
        // Some input biases: one entry per projection that has one.
        MhaCase{"q_v_bias_cross", scored(config(16, 4, 12, 7), bias_of(true, false, true, true), 0, 0), 2,
                5, 9, kNo, kAdd, false, false, true, false},
        MhaCase{"scale", scored(config(16, 4), true, 0.05, 0), 2, 5, 6, kNo, kNo, false, true, true, false},
        // Scaled scores of a few units capped at 0.7, masks after the cap.
        MhaCase{"softcap", scored(config(16, 2), true, 4.0, 0.7), 2, 9, 9, kBool, kAdd, true, true, true,
                false},
        // Logits in the hundreds: tanh saturates, the softmax sees ±softcap.
        MhaCase{"softcap_large_logits", scored(config(16, 2), true, 300.0, 5.0), 1, 6, 70, kNo, kNo, false,
                false, true, true},
        // gpt-oss's attention sinks, with rows fully masked (the sink takes all the mass: zero
        // output and weights) and several key tiles.
        MhaCase{"sinks", with_sinks(config(16, 4)), 2, 9, 70, kBool, kBool, true, true, true, false}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(MhaStateDict, PackedLayoutWhenAllWidthsMatch) {
  MultiHeadAttention mha(config(8, 2));
  std::vector<std::string> names;
  for (const auto& s : mha.parameter_specs()) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                             "out_proj.bias"}));
  EXPECT_EQ(mha.parameter_specs()[0].shape, (std::vector<int>{24, 8}));
}

TEST(MhaStateDict, SeparateLayoutForCrossAttention) {
  MultiHeadAttention mha(config(8, 2, 6, 5, false));
  std::vector<std::string> names;
  for (const auto& s : mha.parameter_specs()) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight",
                                             "out_proj.weight"}));
  EXPECT_EQ(mha.parameter_specs()[1].shape, (std::vector<int>{8, 6}));
  EXPECT_EQ(mha.parameter_specs()[2].shape, (std::vector<int>{8, 5}));
}

TEST(MhaStateDict, ErrorsNameTheKeyAndLeaveTheModuleUsable) {
  MultiHeadAttention mha(config(4, 2));
  std::vector<float> values(100, 0.1f);
  EXPECT_THROW(mha.load_parameter("bias_k", values.data(), 4), StateDictError);
  try {
    mha.load_parameter("in_proj_weight", values.data(), 47);
    FAIL();
  } catch (const StateDictError& e) {
    EXPECT_EQ(e.argument(), "in_proj_weight");
    EXPECT_NE(std::string(e.what()).find("[12, 4]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("47"), std::string::npos) << e.what();
  }
  std::vector<float> x(4, 1.0f), out(4);
  MhaForwardArgs a;
  a.L = a.S = 1;
  a.query = a.key = a.value = x.data();
  a.output = out.data();
  EXPECT_THROW(mha.forward(a), StateDictError);  // nothing loaded yet
  for (const auto& s : mha.parameter_specs()) mha.load_parameter(s.name, values.data(), s.size());
  EXPECT_NO_THROW(mha.forward(a));
  a.key_padding_mask = {kBool, values.data(), {1, 2}};
  EXPECT_THROW(mha.forward(a), ShapeError);
  a.key_padding_mask = {};
  EXPECT_NO_THROW(mha.forward(a));
  // forget_parameters() (a load that failed part-way): refused as before the first load, again
  // usable once every entry is back.
  mha.forget_parameters();
  EXPECT_THROW(mha.forward(a), StateDictError);
  mha.load_parameter("in_proj_weight", values.data(), mha.parameter_specs()[0].size());
  EXPECT_THROW(mha.forward(a), StateDictError);
  for (const auto& s : mha.parameter_specs()) mha.load_parameter(s.name, values.data(), s.size());
  EXPECT_NO_THROW(mha.forward(a));
}

// read_parameter() gives back what load_parameter() took, for every entry of every layout (the
// packed and the separate one, a bias per projection, sinks, qk-norm weights), as the module
// stores it (f32 exactly; f16 weights rounded, their biases exact).
TEST(MhaStateDict, ReadParameterGivesBackEveryEntryAsStored) {
  std::mt19937 rng(11);
  MhaConfig qk_norm = with_sinks(scored(config(8, 2, 6, 5), bias_of(true, false, true, true), 0, 0));
  qk_norm.qk_norm = true;
  for (const MhaConfig& c : {config(8, 2), config(8, 2, 6, 5), qk_norm,
                             config(8, 2, 0, 0, true, 0, 0, StorageType::f16)}) {
    MultiHeadAttention mha(c);
    const reference::MhaParameters params = load_random(mha, rng);
    for (const auto& [name, expected] : params.entries) {
      std::vector<float> actual(expected.size(), -1.0f);
      mha.read_parameter(name, actual.data(), actual.size());
      EXPECT_EQ(actual, expected) << name;
    }
  }
  MultiHeadAttention fresh(config(8, 2));
  std::vector<float> out(8 * 8);
  EXPECT_THROW(fresh.read_parameter("out_proj.weight", out.data(), out.size()), StateDictError);  // not loaded
  EXPECT_THROW(fresh.read_parameter("out_proj.weight", out.data(), 3), StateDictError);  // wrong count
}

TEST(MhaHeadRanges, BadRangesAndRowsThrowNamingTheArgument) {
  std::mt19937 rng(3);
  MultiHeadAttention mha(config(8, 4));
  std::vector<float> x(8, 0.5f), heads(8), out(8);
  MhaForwardArgs a;
  a.L = a.S = 1;
  a.query = a.key = a.value = x.data();
  EXPECT_THROW(mha.forward_heads(a, 0, 2, heads.data()), StateDictError);  // nothing loaded
  EXPECT_THROW(mha.project_output(heads.data(), 1, out.data()), StateDictError);
  load_random(mha, rng);
  for (auto [begin, end, argument] : {std::tuple{-1, 2, "head_begin"}, {4, 5, "head_begin"},
                                      {2, 2, "head_end"}, {1, 5, "head_end"}}) {
    try {
      mha.forward_heads(a, begin, end, heads.data());
      ADD_FAILURE() << begin << ", " << end;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.argument(), argument) << e.what();
    }
  }
  try {
    mha.project_output(heads.data(), 0, out.data());
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_EQ(e.argument(), "rows");
  }
  a.attn_mask = {MaskKind::kBoolean, x.data(), {3, 1, 1}};  // per-head masks are [B·h, L, S]
  EXPECT_THROW(mha.forward_heads(a, 1, 3, heads.data()), ShapeError);
  a.attn_mask = {};
  EXPECT_NO_THROW(mha.forward_heads(a, 1, 3, heads.data()));
}

// Weights reloaded after a head range was used: the range must see the new weights.
TEST(MhaHeadRanges, ReloadingWeightsReachesCachedRanges) {
  std::mt19937 rng(4);
  MultiHeadAttention mha(config(16, 4));
  load_random(mha, rng);
  auto x = random_floats(3 * 16, rng);
  MhaForwardArgs a;
  a.L = a.S = 3;
  a.query = a.key = a.value = x.data();
  std::vector<float> before(3 * 8), after(3 * 8), full(3 * 16);
  mha.forward_heads(a, 2, 4, before.data());
  const auto params = load_random(mha, rng);
  mha.forward_heads(a, 2, 4, after.data());
  EXPECT_NE(before, after);
  mha.forward_heads(a, 0, 4, full.data());
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 8; ++c) EXPECT_FLOAT_EQ(after[i * 8 + c], full[i * 16 + 8 + c]);
}

TEST(MhaConfigCheck, RejectsEmbedDimNotDivisibleByHeads) {
  try {
    MultiHeadAttention mha(config(10, 4));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.argument(), "embed_dim");
  }
  EXPECT_NO_THROW(MultiHeadAttention(config(10, 4, 0, 0, true, 3, 2)));  // free dims: allowed
}

}  // namespace
}  // namespace webattention

namespace webattention {
namespace {

// docs/attention-math/heads.md §5: scores through W_i equal the factored ones, head by head.
TEST(BilinearForm, ScoresThroughWiEqualFactoredScores) {
  std::mt19937 rng(5);
  MultiHeadAttention mha(config(12, 3, 7, 5, false));  // d_k = 4 < E·kdim/(E + kdim) ≈ 4.42: the factored form wins
  load_random(mha, rng);
  const int L = 4, S = 6, E = 12, kdim = 7, H = 3, dk = 4;
  auto x = random_floats(L * E, rng), y = random_floats(S * kdim, rng), v = random_floats(S * 5, rng);
  std::vector<float> out(L * E), weights(H * L * S);
  MhaForwardArgs a;
  a.L = L, a.S = S, a.query = x.data(), a.key = y.data(), a.value = v.data();
  a.output = out.data(), a.weights = weights.data(), a.average_weights = false;
  mha.forward(a);
  for (int h = 0; h < H; ++h) {
    const BilinearForm f = mha.head_bilinear_form(h);
    EXPECT_EQ(f.rows, E);
    EXPECT_EQ(f.cols, kdim);
    EXPECT_EQ(f.rank, dk);
    EXPECT_EQ(f.factored_parameters, static_cast<std::size_t>((E + kdim) * dk));
    EXPECT_EQ(f.full_parameters, static_cast<std::size_t>(E * kdim));
    std::vector<float> expected(L * S);
    for (int i = 0; i < L; ++i) {
      std::vector<double> s(S);
      double max = -1e300, sum = 0.0;
      for (int j = 0; j < S; ++j) {
        double dot = 0.0;
        for (int r = 0; r < E; ++r)
          for (int c = 0; c < kdim; ++c) dot += x[i * E + r] * f.matrix[r * kdim + c] * y[j * kdim + c];
        s[j] = dot / std::sqrt(static_cast<double>(dk));
        max = std::max(max, s[j]);
      }
      for (int j = 0; j < S; ++j) sum += (s[j] = std::exp(s[j] - max));
      for (int j = 0; j < S; ++j) expected[i * S + j] = static_cast<float>(s[j] / sum);
    }
    std::vector<float> actual(weights.begin() + h * L * S, weights.begin() + (h + 1) * L * S);
    EXPECT_TRUE(all_close(actual, expected, 1e-6, 1e-4)) << "head " << h;
  }
  EXPECT_THROW(mha.head_bilinear_form(3), ConfigError);
}

TEST(BilinearForm, RankIsCappedByEmbedDimAndNeedsWeights) {
  std::mt19937 rng(6);
  MultiHeadAttention wide(config(4, 1, 0, 0, false, 6, 4));  // d_k = 6 > E = 4
  EXPECT_THROW(wide.head_bilinear_form(0), StateDictError);
  load_random(wide, rng);
  EXPECT_EQ(wide.head_bilinear_form(0).rank, 4);
}

// 16-bit and int8 weights (§11): the module computes what f32 weights replaced by their stored
// values compute. Widths around the int8 block of 32: shorter, one block and a short one (40),
// several (72); separate Q/K/V weights of other widths.
INSTANTIATE_TEST_SUITE_P(
    Storage, MhaVsReference,
    ::testing::Values(
        MhaCase{"f16_self", config(40, 4, 0, 0, true, 0, 0, kF16), 2, 5, 5, kNo, kNo, false, true, true, true},
        MhaCase{"f16_cross", config(24, 3, 72, 9, true, 0, 0, kF16), 2, 5, 9, kBool, kNo, false, false, true, false},
        MhaCase{"bf16_self", config(40, 4, 0, 0, true, 0, 0, kBF16), 2, 5, 5, kNo, kAdd, false, false, true, true},
        MhaCase{"bf16_free_dims", config(16, 4, 0, 0, false, 5, 3, kBF16), 2, 6, 8, kNo, kNo, false, true, false, false},
        MhaCase{"i8_self", config(40, 4, 0, 0, true, 0, 0, kI8), 2, 5, 5, kNo, kNo, false, true, true, true},
        MhaCase{"i8_cross", config(24, 3, 72, 9, true, 0, 0, kI8), 2, 5, 9, kAdd, kNo, false, false, true, false},
        MhaCase{"i8_one_token", config(64, 2, 0, 0, true, 0, 0, kI8), 1, 1, 1, kNo, kNo, false, false, false, true}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace webattention
