// 16- and 8-bit storage (docs/attention-math/storage.md §11): the core's conversions against the
// oracle's independent rules, loading from 16-bit sources, the errors, non-finite values, and the
// memory a narrow module and cache hold. Each dtype's forward against the reference is in
// multihead_attention_test.cpp (Storage cases) and the kernel-level cases (kernel_cases.json's
// type sets).
#include <gtest/gtest.h>

#if defined(__EMSCRIPTEN__) || defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "reference/storage_reference.h"
#include "kernels/storage_convert.h"
#include "test_util.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

using testing::all_close;
using testing::load_identity;
using testing::random_floats;

bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || storage::bits_of(a) == storage::bits_of(b); }

TEST(StorageRounding, F16KnownValues) {
  EXPECT_EQ(storage::f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(storage::f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(storage::f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(storage::f32_to_f16(65519.99f), 0x7BFF);
  EXPECT_EQ(storage::f32_to_f16(65520.0f), 0x7C00);  // the tie rounds to even: Inf
  EXPECT_EQ(storage::f32_to_f16(-1e30f), 0xFC00);
  EXPECT_EQ(storage::f32_to_f16(1.0f + 0x1p-11f), 0x3C00);        // tie, to even
  EXPECT_EQ(storage::f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);    // tie, to even
  EXPECT_EQ(storage::f32_to_f16(0x1p-24f), 0x0001);               // smallest subnormal
  EXPECT_EQ(storage::f32_to_f16(0x1p-25f), 0x0000);               // tie with 0: to even
  EXPECT_EQ(storage::f32_to_f16(1.5f * 0x1p-25f), 0x0001);
  EXPECT_EQ(storage::f32_to_f16(0x1.ffcp-15f), 0x0400);           // rounds up into the normals
  EXPECT_TRUE(std::isnan(storage::f16_to_f32(storage::f32_to_f16(NAN))));
  EXPECT_TRUE(std::isinf(storage::f16_to_f32(0x7C00)));
}

TEST(StorageRounding, BF16KnownValues) {
  EXPECT_EQ(storage::f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(storage::f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);        // tie, to even
  EXPECT_EQ(storage::f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(storage::f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // overflow: Inf
  EXPECT_EQ(storage::f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  // A NaN whose payload is only in the low 16 bits stays NaN (not Inf).
  EXPECT_TRUE(std::isnan(storage::bf16_to_f32(storage::f32_to_bf16(storage::float_of(0x7F800001u)))));
}

// Every f16 pattern widens to a value that rounds back to the same pattern (NaNs to a NaN).
TEST(StorageRounding, F16RoundTripsEveryPattern) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = storage::f16_to_f32(static_cast<std::uint16_t>(h));
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    ASSERT_EQ(std::isnan(f), nan) << h;
    if (nan) continue;
    ASSERT_EQ(storage::f32_to_f16(f), h) << h;
    ASSERT_TRUE(same_value(f, reference::round_to_f16(f))) << h;
  }
}

// Random f32 bit patterns over every exponent: the core's bit-level rounding equals the oracle's.
TEST(StorageRounding, MatchesReferenceOnRandomBits) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const float x = storage::float_of(rng());
    ASSERT_TRUE(same_value(storage::f16_to_f32(storage::f32_to_f16(x)), reference::round_to_f16(x))) << x;
    ASSERT_TRUE(same_value(storage::bf16_to_f32(storage::f32_to_bf16(x)), reference::round_to_bf16(x))) << x;
  }
}

// int8 blocks: the core's quantise/dequantise equals the oracle's, for short blocks, ties,
// all-zero blocks and a non-finite value (the whole block NaN).
TEST(StorageRounding, Int8BlocksMatchReference) {
  std::mt19937 rng(8);
  std::vector<std::vector<float>> blocks = {{0.0f, 0.0f, 0.0f}, {1.0f, -0.5f, 127.0f, 63.5f, -126.5f},
                                            {1e-44f, -1e-45f}, {1.0f, INFINITY, 2.0f}, {NAN, 0.0f}};
  for (int n : {1, 7, 32}) blocks.push_back(random_floats(n, rng, 3.0f));
  for (const auto& x : blocks) {
    std::vector<std::int8_t> q(x.size());
    const float scale = storage::quantise_q8(x.data(), static_cast<int>(x.size()), q.data());
    const std::vector<float> expected = reference::stored(x, 1, static_cast<int>(x.size()), StorageType::i8, 32);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float got = storage::dequantise(q[i], scale);  // (q = -0 is 0)
      EXPECT_TRUE(got == expected[i] || (std::isnan(got) && std::isnan(expected[i]))) << "value " << x[i];
      EXPECT_LE(std::abs(q[i]), 127);
    }
  }
  std::int8_t q[2];
  EXPECT_EQ(storage::quantise_q8(std::vector<float>{0.0f, 0.0f}.data(), 2, q), 0.0f);  // all zero: scale 0
}

MhaConfig small_config(StorageType weights) {
  MhaConfig c;
  c.embed_dim = 40;
  c.num_heads = 4;
  c.weights_dtype = weights;
  return c;
}

std::vector<float> forward(const MultiHeadAttention& m, const std::vector<float>& x, int L) {
  std::vector<float> out(static_cast<std::size_t>(L) * m.config().embed_dim);
  MhaForwardArgs a;
  a.L = a.S = L;
  a.query = a.key = a.value = x.data();
  a.output = out.data();
  m.forward(a);
  return out;
}

// Entries given as f16 bits: an f32 module widens them exactly, a bf16 module rounds the widened
// value, and an f16 module keeps the bits (the same results as the f32 module).
TEST(StorageLoading, SixteenBitSources) {
  std::mt19937 rng(9);
  MultiHeadAttention f32(small_config(StorageType::f32)), f16(small_config(StorageType::f16)),
      bf16(small_config(StorageType::bf16)), widened(small_config(StorageType::f32)),
      rounded(small_config(StorageType::f32));
  for (const auto& spec : f32.parameter_specs()) {
    const std::vector<float> values = random_floats(spec.size(), rng, 0.3f);
    std::vector<std::uint16_t> bits(values.size());
    std::vector<float> wide(values.size()), to_bf16(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      bits[i] = storage::f32_to_f16(values[i]);
      wide[i] = storage::f16_to_f32(bits[i]);
      to_bf16[i] = spec.shape.size() == 2 ? reference::round_to_bf16(wide[i]) : wide[i];
    }
    for (MultiHeadAttention* m : {&f32, &f16, &bf16}) m->load_parameter(spec.name, bits.data(), bits.size(), StorageType::f16);
    widened.load_parameter(spec.name, wide.data(), wide.size());
    rounded.load_parameter(spec.name, to_bf16.data(), to_bf16.size());
  }
  const std::vector<float> x = random_floats(3 * 40, rng);
  const std::vector<float> expected = forward(widened, x, 3);
  EXPECT_EQ(forward(f32, x, 3), expected);
  EXPECT_TRUE(all_close(forward(f16, x, 3), expected, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(forward(bf16, x, 3), forward(rounded, x, 3), 1e-6, 1e-6));
}

TEST(StorageLoading, Int8RefusesNonFiniteWeightsNamingTheBlock) {
  MultiHeadAttention m(small_config(StorageType::i8));
  std::vector<float> w(3 * 40 * 40, 0.25f);
  w[2 * 40 + 35] = INFINITY;  // row 2, column 35: block 1
  testing::expect_refused_entry(m, "in_proj_weight", w, {"block 1 of row 2"});
  w[2 * 40 + 35] = NAN;
  EXPECT_THROW(m.load_parameter("in_proj_weight", w.data(), w.size()), StateDictError);
  // Still usable: finite weights load, and a NaN bias is allowed (biases are f32).
  w[2 * 40 + 35] = 1.0f;
  EXPECT_NO_THROW(m.load_parameter("in_proj_weight", w.data(), w.size()));
  std::vector<float> bias(120, NAN);
  EXPECT_NO_THROW(m.load_parameter("in_proj_bias", bias.data(), bias.size()));
  // int8 is a storage type, never a source.
  EXPECT_THROW(m.load_parameter("in_proj_bias", w.data(), 120, StorageType::i8), ConfigError);
}

TEST(StorageCache, RejectsBf16AndKeepsWorking) {
  MultiHeadAttention m(small_config(StorageType::f32));
  KvCacheConfig c;
  c.max_length = 8;
  c.dtype = StorageType::bf16;
  try {
    m.create_cache(c);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.argument(), "dtype");
  }
  c.dtype = StorageType::i8;
  EXPECT_NE(m.create_cache(c), nullptr);
}

// An int8 cache row (one position of one K/V head) with a non-finite value dequantises to NaN
// as a whole; an f16 cache rounds a large value to Inf. Either way the query rows that see it
// are NaN; an earlier row (it is a future key there) and the other batch are not; reset()
// clears it.
TEST(StorageCache, NonFiniteRows) {
  for (StorageType type : {StorageType::i8, StorageType::f16}) {
    SCOPED_TRACE(storage_type_name(type));
    MultiHeadAttention m(small_config(StorageType::f32));
    load_identity(m);
    KvCacheConfig c;
    c.batch = 2;
    c.max_length = 16;
    c.dtype = type;
    auto cache = m.create_cache(c);
    std::vector<float> x(2 * 2 * 40, 0.5f), out(x.size());
    x[40 + 3] = type == StorageType::i8 ? INFINITY : 1e6f;  // batch 0, row 1, head 0
    MhaForwardArgs a;
    a.batch = 2;
    a.L = a.S = 2;
    a.query = a.key = a.value = x.data();
    a.output = out.data();
    m.forward(a, *cache);
    for (int f = 0; f < 40; ++f) EXPECT_TRUE(std::isnan(out[40 + f])) << "batch 0, row 1, feature " << f;
    for (int f = 0; f < 40; ++f) EXPECT_FALSE(std::isnan(out[f])) << "batch 0, row 0 (before it), feature " << f;
    for (int f = 80; f < 160; ++f) EXPECT_FALSE(std::isnan(out[f])) << "batch 1, element " << f - 80;
    cache->reset();
    x[40 + 3] = 0.5f;
    m.forward(a, *cache);
    for (float v : out) EXPECT_FALSE(std::isnan(v));
  }
}

// A sequence fed to a cache one position at a time (decode steps: one-row projections) stores the
// same bits as the same sequence in one call (a prefill: the 4-row block), for every weights and
// cache type: a next step over either cache gives the same output bit for bit. Else a stored
// value at an exact rounding tie of a narrow cache would move by a whole step (found by
// decode_fuzz: int8 weights, whose one-row loop scaled each block's sum while the block loop
// multiplied dequantised weights).
TEST(StorageCache, DecodeStepsStoreWhatAPrefillStores) {
  for (StorageType weights : {StorageType::f32, StorageType::f16, StorageType::bf16, StorageType::i8, StorageType::q4}) {
    MultiHeadAttention m(small_config(weights));  // embed_dim 40: an int8 / int4 row's blocks of 32 and 8
    std::mt19937 rng(7);
    for (const auto& spec : m.parameter_specs()) {
      const std::vector<float> w = random_floats(spec.size(), rng, 0.3f);
      m.load_parameter(spec.name, w.data(), w.size());
    }
    const int T = 6, E = 40;
    const std::vector<float> x = random_floats(static_cast<std::size_t>(T + 1) * E, rng);
    for (StorageType kv : {StorageType::f32, StorageType::f16, StorageType::i8}) {
      SCOPED_TRACE(std::string("weights ") + storage_type_name(weights) + ", cache " + storage_type_name(kv));
      KvCacheConfig c;
      c.batch = 1;
      c.max_length = T + 1;
      c.dtype = kv;
      auto stepped = m.create_cache(c), whole = m.create_cache(c);
      std::vector<float> out(static_cast<std::size_t>(T) * E), next_stepped(E), next_whole(E);
      const auto step = [&](KvCache& cache, const float* rows, int L, float* y) {
        MhaForwardArgs a;
        a.L = a.S = L;
        a.query = a.key = a.value = rows;
        a.output = y;
        m.forward(a, cache);
      };
      for (int t = 0; t < T; ++t) step(*stepped, x.data() + t * E, 1, out.data() + t * E);
      step(*whole, x.data(), T, out.data());
      step(*stepped, x.data() + T * E, 1, next_stepped.data());
      step(*whole, x.data() + T * E, 1, next_whole.data());
      for (int f = 0; f < E; ++f) EXPECT_PRED2(same_value, next_stepped[f], next_whole[f]) << "feature " << f;
    }
  }
}

#if defined(__EMSCRIPTEN__) || (defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33))
// Bytes allocated on the heap (large glibc blocks are mmapped: counted apart).
std::size_t heap_in_use() {
#if defined(__EMSCRIPTEN__)
  return mallinfo().uordblks;
#else
  const auto i = mallinfo2();
  return i.uordblks + i.hblkhd;
#endif
}

// What a (256, 4) module with its weights loaded and a 1024-position cache hold, per dtype: half
// for 16-bit, under 1/3.5 for int8 (1 byte and 1/32 of a scale per weight, 1 + 4/64 per cached
// value), under 1/6 for int4 weights (4 + 1 + 1/8 bits per weight; its cache is int8's), with no
// f32 copy kept anywhere.
TEST(StorageMemory, NarrowModulesAndCachesHoldLess) {
  MhaConfig config;
  config.embed_dim = 256;
  config.num_heads = 4;
  std::size_t weights[5], caches[5];
  const StorageType types[5] = {StorageType::f32, StorageType::f16, StorageType::bf16, StorageType::i8, StorageType::q4};
  std::mt19937 rng(10);
  for (int t = 0; t < 5; ++t) {
    config.weights_dtype = types[t];
    const std::size_t before = heap_in_use();
    {
      MultiHeadAttention m(config);
      for (const auto& spec : m.parameter_specs()) {
        const std::vector<float> values = random_floats(spec.size(), rng);
        m.load_parameter(spec.name, values.data(), values.size());
      }
      weights[t] = heap_in_use() - before;
      KvCacheConfig c;
      c.max_length = 1024;
      c.dtype = types[t] == StorageType::bf16 ? StorageType::f16 : types[t] == StorageType::q4 ? StorageType::i8 : types[t];
      const std::size_t before_cache = heap_in_use();
      auto cache = m.create_cache(c);
      caches[t] = heap_in_use() - before_cache;
    }
  }
  for (int t = 1; t < 5; ++t) {
    SCOPED_TRACE(storage_type_name(types[t]));
    const bool quantised = types[t] == StorageType::i8 || types[t] == StorageType::q4;
    const double least = quantised ? 3.5 : 1.99;  // biases stay f32
    EXPECT_GE(static_cast<double>(weights[0]) / weights[t], types[t] == StorageType::q4 ? 6.0 : least) << weights[0] << " vs " << weights[t];
    EXPECT_GE(static_cast<double>(caches[0]) / caches[t], least) << caches[0] << " vs " << caches[t];
  }
}
#endif

}  // namespace
}  // namespace webattention
