// The score options of issue 20 in the core: the state-dict entries of per-projection biases and
// sinks, bad scale and softcap values, and a fully masked row with sinks. Their parity with the
// reference is multihead_attention_test.cpp's MhaVsReference cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "checks.h"
#include "mha_test_support.h"
#include "webattention/errors.h"

namespace webattention {
namespace {

using namespace testing;  // webattention::testing: test_util.h and mha_test_support.h

TEST(MhaStateDict, PerProjectionBiasEntries) {
  MultiHeadAttention mha(scored(config(8, 2), bias_of(true, false, true, false), 0, 0));
  std::vector<std::string> names;
  for (const auto& s : mha.parameter_specs()) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "q_proj_bias", "v_proj_bias", "out_proj.weight"}));
}

// A fully masked row with sinks: the sink takes all the mass, so the heads' output is zero (the
// output is out_proj.bias) and the weights are zero; the other batch matches the reference.
TEST(MhaSinks, FullyMaskedRowGivesZeroHeadsAndWeights) {
  std::mt19937 rng(9);
  const MhaConfig c = with_sinks(config(8, 2));
  MultiHeadAttention mha(c);
  reference::MhaParameters params = load_random(mha, rng);
  const std::vector<float> sinks = {4.0f, -1.5f};
  mha.load_parameter("sinks", sinks.data(), sinks.size());
  params.entries.back().second = sinks;
  const int B = 2, L = 3, S = 5;
  const auto x = random_floats(B * L * 8, rng), y = random_floats(B * S * 8, rng);
  std::vector<std::uint8_t> padding(B * S, 0);
  std::fill(padding.begin(), padding.begin() + S, 1);  // batch 0: every key masked
  MhaForwardArgs a;
  a.batch = B, a.L = L, a.S = S, a.query = x.data(), a.key = a.value = y.data();
  a.key_padding_mask = {MaskKind::kBoolean, padding.data(), {B, S}};
  a.average_weights = false;
  std::vector<float> out(B * L * 8), w(B * 2 * L * S, -1.0f), ref_out(out.size()), ref_w(w.size());
  a.output = out.data(), a.weights = w.data();
  mha.forward(a);
  a.output = ref_out.data(), a.weights = ref_w.data();
  reference::mha_forward(c, params, a);
  EXPECT_TRUE(all_close(out, ref_out, 1e-5, 1e-4));
  EXPECT_TRUE(all_close(w, ref_w, 1e-6, 1e-4));
  const std::vector<float>& out_bias = *params.find("out_proj.bias");
  for (int i = 0; i < L * 8; ++i) EXPECT_FLOAT_EQ(out[i], out_bias[i % 8]);
  for (int i = 0; i < 2 * L * S; ++i) EXPECT_EQ(w[i], 0.0f);
  // Batch 1's weights sum to less than 1: the sinks took their share.
  for (int h = 0; h < 2; ++h) {
    float total = 0.0f;
    for (int j = 0; j < S; ++j) total += w[((2 + h) * L) * S + j];
    EXPECT_LT(total, 0.99f) << h;
  }
}

// A +Inf sink is refused, naming the entry, as float32 and as float16 bits (0x7c00), and the
// sinks loaded before stay: the module's forward is bit-identical after the refusal.
TEST(MhaSinks, RefusesInfiniteSinkKeepingTheLoadedOnes) {
  std::mt19937 rng(11);
  MultiHeadAttention mha(with_sinks(config(8, 2)));
  load_random(mha, rng);
  std::vector<float> before(2), after(2);
  mha.read_parameter("sinks", before.data(), before.size());
  const std::vector<float> f32 = {0.5f, HUGE_VALF};
  const std::vector<std::uint16_t> f16 = {0x3800, 0x7c00};
  for (int source = 0; source < 2; ++source) {
    try {
      if (source == 0) mha.load_parameter("sinks", f32.data(), f32.size());
      else mha.load_parameter("sinks", f16.data(), f16.size(), StorageType::f16);
      ADD_FAILURE() << "a +Inf sink was loaded, source " << source;
    } catch (const StateDictError& e) {
      EXPECT_EQ(e.argument(), "sinks");
      EXPECT_NE(std::string(e.what()).find("[1]"), std::string::npos) << e.what();
    }
    mha.read_parameter("sinks", after.data(), after.size());
    EXPECT_EQ(after, before);
  }
}

// -Inf is no sink: the same outputs and weights as the module without sinks.
TEST(MhaSinks, MinusInfinityIsNoSink) {
  std::mt19937 rng(12), same(12);
  MultiHeadAttention with(with_sinks(config(8, 2))), without(config(8, 2));
  load_random(with, rng);
  load_random(without, same);
  const std::vector<float> none = {-HUGE_VALF, -HUGE_VALF};
  with.load_parameter("sinks", none.data(), none.size());
  const int L = 3, S = 4;
  const auto x = random_floats(L * 8, rng), y = random_floats(S * 8, rng);
  MhaForwardArgs a;
  a.batch = 1, a.L = L, a.S = S, a.query = x.data(), a.key = a.value = y.data();
  a.average_weights = false;
  std::vector<float> out(L * 8), w(2 * L * S), plain_out(out.size()), plain_w(w.size());
  a.output = out.data(), a.weights = w.data();
  with.forward(a);
  a.output = plain_out.data(), a.weights = plain_w.data();
  without.forward(a);
  EXPECT_TRUE(all_close(out, plain_out, 1e-6, 1e-5));
  EXPECT_TRUE(all_close(w, plain_w, 1e-6, 1e-5));
}

TEST(MhaConfigCheck, RejectsBadScaleAndSoftcap) {
  // 1e-46 rounds to 0 and 1e39 overflows in float32: never the default, never a NaN output.
  for (double bad : {-1.0, std::nan(""), HUGE_VAL, 1e-46, 1e39}) {
    for (const char* argument : {"scale", "softcap"}) {
      MhaConfig c = config(8, 2);
      if (std::string(argument) == "scale") c.scale = bad;
      else c.softcap = bad;
      try {
        MultiHeadAttention mha(c);
        ADD_FAILURE() << argument << " " << bad;
      } catch (const ConfigError& e) {
        EXPECT_EQ(e.argument(), argument) << e.what();
      }
    }
  }
}

// Error text writes numbers as std::to_string did, without printf (checks.h format_number).
TEST(ErrorText, NumbersAsToStringWritesThem) {
  std::vector<double> values = {-1.5, 0.0, -0.0, 0.1, 1e-7, 2.5e-7, 123456.789, 1e-46, 3.4e38 / 1e24, 65504.0,
                                std::nan(""), -std::nan(""), HUGE_VAL, -HUGE_VAL};
  for (int i = 1; i < 2000; ++i) values.push_back((i * 7919 % 100003) / 997.0 * std::pow(10.0, i % 20 - 8) * (i % 3 ? 1 : -1));
  for (double x : values) {
    if (std::fabs(x) >= 1e15) continue;
    EXPECT_EQ(format_number(x), std::to_string(x)) << x;
    EXPECT_EQ(format_number(static_cast<float>(x)), std::to_string(static_cast<float>(x))) << x;
  }
  EXPECT_EQ(format_number(1e20), "1.000000e+20");
  EXPECT_EQ(format_number(-1.2345678e15), "-1.234568e+15");
  EXPECT_EQ(format_number(9.9999999e16), "1.000000e+17");
  EXPECT_EQ(format_number(3.4028234663852886e38), "3.402823e+38");
}

}  // namespace
}  // namespace webattention
