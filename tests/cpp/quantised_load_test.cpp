// Weights quantised already (a checkpoint's GGUF Q8_0 / Q4_0 or ORT MatMulNBits blocks, taken as
// stored: MultiHeadAttention::load_quantised_parameter, kernels::pack_quantised): packed and read
// back as (code - zero point) · scale exactly, odd shapes with short last blocks and padding
// columns included; a forward of the module equals the f32 module's with the dequantised weights
// (to the contract's tolerance); refusals (another weights dtype, a bias, a non-finite scale, a
// code or zero point past 15) change nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "mha_test_support.h"
#include "reference/reference.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

struct Blocks {
  std::vector<std::uint8_t> codes;  // int8 codes as their bytes, or int4 codes 0-15
  std::vector<float> scales;
  std::vector<std::uint8_t> zeros;
  std::vector<float> values;  // (code - zero) · scale, row-major
};

Blocks random_blocks(int out, int in, StorageType type, unsigned seed) {
  std::mt19937 rng(seed);
  const int blocks = (in + 31) / 32;
  Blocks b;
  b.codes.resize(static_cast<std::size_t>(out) * in);
  b.scales.resize(static_cast<std::size_t>(out) * blocks);
  b.zeros.resize(b.scales.size());
  for (float& s : b.scales) s = std::ldexp(static_cast<float>(rng() % 2048), -14) * (rng() % 2 ? 1.0f : -1.0f);
  for (auto& z : b.zeros) z = static_cast<std::uint8_t>(rng() % 16);
  for (auto& c : b.codes) c = static_cast<std::uint8_t>(type == StorageType::q4 ? rng() % 16 : rng() % 256);
  b.values.resize(b.codes.size());
  for (int n = 0; n < out; ++n) {
    for (int k = 0; k < in; ++k) {
      const std::size_t i = static_cast<std::size_t>(n) * in + k, blk = static_cast<std::size_t>(n) * blocks + k / 32;
      const float code = type == StorageType::q4 ? static_cast<float>(b.codes[i] - b.zeros[blk])
                                                 : static_cast<float>(static_cast<std::int8_t>(b.codes[i]));
      b.values[i] = code * b.scales[blk];
    }
  }
  return b;
}

TEST(QuantisedPacking, RoundTripExactWithShortBlocksAndPadding) {
  for (StorageType type : {StorageType::i8, StorageType::q4}) {
    for (const auto& [out, in] : {std::pair{1, 1}, {7, 33}, {9, 64}, {17, 70}}) {
      const Blocks b = random_blocks(out, in, type, 7u + static_cast<unsigned>(out));
      const kernels::QuantisedSource src{b.codes.data(), b.scales.data(), type == StorageType::q4 ? b.zeros.data() : nullptr};
      const kernels::PackedLinear w = kernels::pack_quantised(src, out, in, type);
      for (int n = 0; n < kernels::whole_panels(out); ++n) {
        for (int k = 0; k < in; ++k) {
          const float want = n < out ? b.values[static_cast<std::size_t>(n) * in + k] : 0.0f;
          ASSERT_EQ(w.weight(n, k), want) << storage_type_name(type) << " (" << out << ", " << in << ") at " << n << ", " << k;
        }
      }
    }
  }
}

MhaConfig config(StorageType weights) { return testing::config(40, 4, 0, 0, true, 0, 0, weights); }

TEST(QuantisedLoading, ComputesWithTheDequantisedWeights) {
  for (StorageType type : {StorageType::i8, StorageType::q4}) {
    MultiHeadAttention q(config(type)), f(config(StorageType::f32));
    const Blocks in = random_blocks(120, 40, type, 3), out = random_blocks(40, 40, type, 4);
    q.load_quantised_parameter("in_proj_weight", {in.codes.data(), in.scales.data(), in.zeros.data()}, in.codes.size(), type);
    q.load_quantised_parameter("out_proj.weight", {out.codes.data(), out.scales.data(), out.zeros.data()}, out.codes.size(), type);
    f.load_parameter("in_proj_weight", in.values.data(), in.values.size());
    f.load_parameter("out_proj.weight", out.values.data(), out.values.size());
    std::vector<float> bias(120, 0.25f);
    for (MultiHeadAttention* m : {&q, &f}) {
      m->load_parameter("in_proj_bias", bias.data(), 120);
      m->load_parameter("out_proj.bias", bias.data(), 40);
    }
    std::vector<float> read(in.values.size());
    q.read_parameter("in_proj_weight", read.data(), read.size());
    EXPECT_EQ(read, in.values);
    std::vector<float> x(2 * 5 * 40);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.37f);
    std::vector<float> a(x.size()), b(x.size());
    for (auto [m, y] : {std::pair{&q, &a}, {&f, &b}}) {
      MhaForwardArgs args;
      args.batch = 2, args.L = 5, args.S = 5;
      args.query = args.key = args.value = x.data();
      args.output = y->data();
      m->forward(args);
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_NEAR(a[i], b[i], 1e-4 + 1e-4 * std::fabs(b[i])) << storage_type_name(type) << " at " << i;
    }
  }
}

// activations 'int8' holds for weights loaded as blocks too (a fuzzer found them computed from
// float32 inputs): the module matches the reference that quantises its inputs, and not the float one.
TEST(QuantisedLoading, Int8ActivationsApplyToBlocks) {
  for (StorageType type : {StorageType::i8, StorageType::q4}) {
    MhaConfig c = config(type);
    c.bias = false;
    c.activations = StorageType::i8;
    MultiHeadAttention m(c);
    const Blocks in = random_blocks(120, 40, type, 11), out = random_blocks(40, 40, type, 12);
    m.load_quantised_parameter("in_proj_weight", {in.codes.data(), in.scales.data(), in.zeros.data()}, in.codes.size(), type);
    m.load_quantised_parameter("out_proj.weight", {out.codes.data(), out.scales.data(), out.zeros.data()}, out.codes.size(), type);
    reference::MhaParameters params;
    params.entries = {{"in_proj_weight", in.values}, {"out_proj.weight", out.values}};
    std::vector<float> x(3 * 40);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 3.0f * std::sin(static_cast<float>(i) * 0.37f);
    std::vector<float> got(x.size()), act8(x.size()), f32(x.size());
    MhaForwardArgs args;
    args.batch = 1, args.L = 3, args.S = 3;
    args.query = args.key = args.value = x.data();
    args.output = got.data();
    m.forward(args);
    reference::Sensitivity sensitivity;
    args.output = act8.data();
    reference::mha_forward(c, params, args, &sensitivity);
    const std::vector<double>& slack = sensitivity.out_slack;
    MhaConfig float_inputs = c;
    float_inputs.activations = StorageType::f32;
    args.output = f32.data();
    reference::mha_forward(float_inputs, params, args);
    double apart = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], act8[i], 1e-4 + 1e-4 * std::fabs(act8[i]) + slack[i]) << storage_type_name(type) << " at " << i;
      apart = std::max(apart, std::fabs(static_cast<double>(act8[i]) - f32[i]));
    }
    EXPECT_GT(apart, 1e-3) << "the case cannot tell int8 inputs from float32 ones";
  }
}

TEST(QuantisedLoading, RefusalsKeepTheWeights) {
  MultiHeadAttention m(config(StorageType::q4));
  const Blocks b = random_blocks(40, 40, StorageType::q4, 5);
  const auto load = [&](const Blocks& x, const std::string& name = "out_proj.weight", StorageType type = StorageType::q4) {
    m.load_quantised_parameter(name, {x.codes.data(), x.scales.data(), x.zeros.data()}, x.codes.size(), type);
  };
  load(b);
  const auto read = [&m] {
    std::vector<float> v(40 * 40);
    m.read_parameter("out_proj.weight", v.data(), v.size());
    return v;
  };
  const std::vector<float> before = read();
  const auto refused = [&](auto&& call, const std::string& text) {
    try {
      call();
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
    EXPECT_EQ(read(), before) << text;
  };
  Blocks bad = random_blocks(40, 40, StorageType::q4, 6);
  refused([&] { load(bad, "out_proj.weight", StorageType::i8); }, "a module with weightsDtype 'int8', got 'int4'");
  refused([&] { load(random_blocks(40, 1, StorageType::q4, 8), "out_proj.bias"); }, "weight matrices only");
  bad.scales[17] = NAN;
  refused([&] { load(bad); }, "scales must be finite");
  bad.scales[17] = 1.0f;
  bad.codes[300] = 16;
  refused([&] { load(bad); }, "codes must be 0-15");
  bad.codes[300] = 3;
  bad.zeros[2] = 200;
  refused([&] { load(bad); }, "zero points must be 0-15");
}

}  // namespace
}  // namespace webattention
