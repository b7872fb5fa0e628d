// Incremental decoding in the core (docs/attention-math.md §7-§9), checked by equivalences that
// need no reference: grouped-query attention equals multi-head attention with its K/V weights
// repeated per query head; a KV cache fed in chunks equals one causal forward over the whole
// sequence; a sliding-window cache (past its ring's wrap) equals a forward with the window as an
// additive mask. PyTorch-generated parity is in tests/fixtures/decode_parity.json (JS tests).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "test_util.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

using testing::all_close;
using testing::random_floats;

constexpr int E = 16, H = 4;

// Loads random weights for every entry; returns them by name order.
std::vector<std::vector<float>> load_random(MultiHeadAttention& m, std::mt19937& rng) {
  std::vector<std::vector<float>> values;
  for (const auto& spec : m.parameter_specs()) {
    values.push_back(random_floats(spec.size(), rng, 0.4f));
    m.load_parameter(spec.name, values.back().data(), values.back().size());
  }
  return values;
}

std::vector<float> run(const MultiHeadAttention& m, const std::vector<float>& x, int B, int T,
                       MaskArg attn_mask = {}, bool causal = true) {
  std::vector<float> out(static_cast<std::size_t>(B) * T * E);
  MhaForwardArgs a = testing::self_attention_args(x.data(), B, T, out.data());
  a.attn_mask = attn_mask;
  a.causal = causal;
  m.forward(a);
  return out;
}

// Feeds x [B, T, E] to `cache` in `chunks`, returning the outputs of every row in order.
std::vector<float> run_cached(const MultiHeadAttention& m, KvCache& cache, const std::vector<float>& x,
                              int B, int T, const std::vector<int>& chunks) {
  std::vector<float> out(static_cast<std::size_t>(B) * T * E);
  int at = 0;
  for (int n : chunks) {
    std::vector<float> part(static_cast<std::size_t>(B) * n * E), got(part.size());
    for (int b = 0; b < B; ++b)
      std::copy_n(x.begin() + (static_cast<std::size_t>(b) * T + at) * E, n * E, part.begin() + static_cast<std::size_t>(b) * n * E);
    MhaForwardArgs a;
    a.batch = B;
    a.L = a.S = n;
    a.query = a.key = a.value = part.data();
    a.output = got.data();
    m.forward(a, cache);
    for (int b = 0; b < B; ++b)
      std::copy_n(got.begin() + static_cast<std::size_t>(b) * n * E, n * E, out.begin() + (static_cast<std::size_t>(b) * T + at) * E);
    at += n;
  }
  return out;
}

// A fresh cache of T positions fed x [B, T, E] in `chunks`: its outputs must be one causal
// forward's over the whole sequence. Returns the cache, filled.
std::unique_ptr<KvCache> expect_chunks_match(const MultiHeadAttention& m, const std::vector<float>& x, int B, int T,
                                             const std::vector<int>& chunks) {
  auto cache = m.create_cache({B, T, 0});
  EXPECT_TRUE(all_close(run_cached(m, *cache, x, B, T, chunks), run(m, x, B, T)));
  return cache;
}

TEST(Decoding, GroupedQueryAttentionIsMhaWithRepeatedKeyValueHeads) {
  std::mt19937 rng(1);
  MhaConfig gqa_config{E, H};
  gqa_config.num_kv_heads = 2;
  MultiHeadAttention gqa(gqa_config);
  const auto w = load_random(gqa, rng);  // q [16,16], k [8,16], v [8,16], bias [32], out, out bias
  MhaConfig mha_config{E, H};
  mha_config.head_dim = mha_config.value_head_dim = E / H;
  MultiHeadAttention mha(mha_config);
  ASSERT_EQ(mha.parameter_specs()[0].name, "in_proj_weight");
  const int d = E / H;
  // Query head i reads K/V head i / 2: repeat each K/V head's rows (and bias) twice.
  std::vector<float> in_proj(w[0]), bias(w[3].begin(), w[3].begin() + E);
  for (int part = 1; part <= 2; ++part) {
    for (int head = 0; head < H; ++head) {
      const float* rows = w[part].data() + static_cast<std::size_t>(head / 2) * d * E;
      in_proj.insert(in_proj.end(), rows, rows + d * E);
      const float* b = w[3].data() + E + (part - 1) * (E / 2) + (head / 2) * d;
      bias.insert(bias.end(), b, b + d);
    }
  }
  mha.load_parameter("in_proj_weight", in_proj.data(), in_proj.size());
  mha.load_parameter("in_proj_bias", bias.data(), bias.size());
  mha.load_parameter("out_proj.weight", w[4].data(), w[4].size());
  mha.load_parameter("out_proj.bias", w[5].data(), w[5].size());
  const auto x = random_floats(2 * 9 * E, rng);
  EXPECT_TRUE(all_close(run(gqa, x, 2, 9), run(mha, x, 2, 9)));
  EXPECT_TRUE(all_close(run(gqa, x, 2, 9, {}, false), run(mha, x, 2, 9, {}, false)));
}

TEST(Decoding, ChunkedCacheEqualsTheFullCausalForward) {
  for (bool interleaved : {false, true}) {
    std::mt19937 rng(2);
    MhaConfig c{E, H};
    c.num_kv_heads = 1;
    c.rotary_dim = 2;
    c.rotary_interleaved = interleaved;
    MultiHeadAttention m(c);
    load_random(m, rng);
    const int B = 2, T = 12;
    const auto x = random_floats(static_cast<std::size_t>(B) * T * E, rng);
    auto cache = expect_chunks_match(m, x, B, T, {5, 1, 1, 4, 1});
    EXPECT_EQ(cache->length(), T);
    // Full: nothing changes on a refused append.
    EXPECT_THROW(run_cached(m, *cache, x, B, 1, {1}), CacheError);
    EXPECT_EQ(cache->length(), T);
    cache->reset();
    EXPECT_TRUE(all_close(run_cached(m, *cache, x, B, T, {1, 1, 10}), run(m, x, B, T)));
  }
}

// The score options reach the cached passes: scale, softcap, Qwen2's q/k/v-only biases, sinks
// and the qk-norm before RoPE.
TEST(Decoding, SoftcapScaleAndBiasesCacheEqualsTheFullCausalForward) {
  std::mt19937 rng(7);
  MhaConfig c{E, H};
  c.num_kv_heads = 2;
  c.rotary_dim = 4;
  c.bias.out = false;
  c.scale = 3.0;
  c.softcap = 0.8;
  c.sinks = true;
  c.qk_norm = true;
  MultiHeadAttention m(c);
  load_random(m, rng);
  const int B = 2, T = 11;
  expect_chunks_match(m, random_floats(static_cast<std::size_t>(B) * T * E, rng), B, T, {4, 1, 6});
}

// E, H with 2 K/V heads and rotary on the first rotary_dim features.
MhaConfig grouped_rotary(int rotary_dim) {
  MhaConfig c{E, H};
  c.num_kv_heads = 2;
  c.rotary_dim = rotary_dim;
  return c;
}

// KvCache::read: a ring past its wrap gives its held positions as a cache that keeps all does;
// positions no longer held are a CacheError.
TEST(Decoding, ReadGivesHeldPositionsInOrderPastTheWrap) {
  std::mt19937 rng(8);
  MultiHeadAttention m(grouped_rotary(2));
  load_random(m, rng);
  const int B = 2, T = 90, W = 3, d = E / H, G = 2;
  const auto x = random_floats(static_cast<std::size_t>(B) * T * E, rng);
  auto ring = m.create_cache({B, 0, W});
  auto whole = m.create_cache({B, T, 0});
  run_cached(m, *ring, x, B, T, {40, 1, 49});
  run_cached(m, *whole, x, B, T, {90});
  ASSERT_LT(ring->capacity(), T);
  const int held = ring->capacity(), first = T - held;
  std::vector<float> rk(static_cast<std::size_t>(B) * G * held * d), rv(rk.size());
  std::vector<float> wk(static_cast<std::size_t>(B) * G * T * d), wv(wk.size());
  ring->read(first, held, rk.data(), rv.data());
  whole->read(0, T, wk.data(), wv.data());
  for (int bg = 0; bg < B * G; ++bg) {
    for (int i = 0; i < held * d; ++i) {
      ASSERT_EQ(rk[static_cast<std::size_t>(bg) * held * d + i], wk[(static_cast<std::size_t>(bg) * T + first) * d + i]);
      ASSERT_EQ(rv[static_cast<std::size_t>(bg) * held * d + i], wv[(static_cast<std::size_t>(bg) * T + first) * d + i]);
    }
  }
  EXPECT_THROW(ring->read(first - 1, 1, rk.data(), rv.data()), CacheError);
  EXPECT_THROW(whole->read(T - 1, 2, wk.data(), wv.data()), CacheError);
}

TEST(Decoding, SlidingWindowRingEqualsAWindowMaskPastTheWrap) {
  std::mt19937 rng(3);
  MultiHeadAttention m(grouped_rotary(4));
  load_random(m, rng);
  const int W = 5, T = 150;  // the ring holds W + 63 (rounded to 72) slots: it wraps twice
  const auto x = random_floats(static_cast<std::size_t>(T) * E, rng);
  std::vector<float> window(static_cast<std::size_t>(T) * T, -std::numeric_limits<float>::infinity());
  for (int i = 0; i < T; ++i)
    for (int j = std::max(0, i - W + 1); j <= i; ++j) window[static_cast<std::size_t>(i) * T + j] = 0.0f;
  MaskArg mask;
  mask.kind = MaskKind::kAdditive;
  mask.data = window.data();
  mask.shape = {T, T};
  auto cache = m.create_cache({1, 0, W});
  EXPECT_GT(T, cache->capacity());
  // A 90-row chunk is more than one step of the ring (capacity - W + 1 rows).
  EXPECT_TRUE(all_close(run_cached(m, *cache, x, 1, T, {90, 1, 1, 30, 1, 27}), run(m, x, 1, T, mask, false)));
}

// Past the ring's wrap, the key-padding mask [B, length] and the weights [B, h, L, length] are
// indexed by position, as without a ring: a cached forward in chunks (one longer than a pass)
// gives the rows of the plain forward with the window as a mask, weights included.
TEST(Decoding, RingReadsPaddingAndWritesWeightsByPosition) {
  std::mt19937 rng(5);
  MhaConfig c{E, H};
  c.num_kv_heads = 2;
  MultiHeadAttention m(c);
  load_random(m, rng);
  const int W = 6, T = 160;
  const auto x = random_floats(static_cast<std::size_t>(T) * E, rng);
  std::vector<std::uint8_t> padding(T);
  for (int j = 0; j < T; ++j) padding[j] = j % 7 == 3;
  std::vector<float> window(static_cast<std::size_t>(T) * T, -std::numeric_limits<float>::infinity());
  for (int i = 0; i < T; ++i)
    for (int j = std::max(0, i - W + 1); j <= i; ++j) window[static_cast<std::size_t>(i) * T + j] = 0.0f;
  std::vector<float> out(static_cast<std::size_t>(T) * E), weights(static_cast<std::size_t>(H) * T * T);
  MhaForwardArgs full;
  full.L = full.S = T;
  full.query = full.key = full.value = x.data();
  full.attn_mask = {MaskKind::kAdditive, window.data(), {T, T}};
  full.key_padding_mask = {MaskKind::kBoolean, padding.data(), {1, T}};
  full.output = out.data();
  full.weights = weights.data();
  full.average_weights = false;
  m.forward(full);

  auto cache = m.create_cache({1, 0, W});
  int at = 0;
  for (int n : {100, 1, 1, 58}) {  // 100 rows: two passes of the 72-slot ring (67 rows at most)
    std::vector<float> got(static_cast<std::size_t>(n) * E), w(static_cast<std::size_t>(H) * n * (at + n), -1.0f);
    MhaForwardArgs a;
    a.L = a.S = n;
    a.query = a.key = a.value = x.data() + static_cast<std::size_t>(at) * E;
    a.key_padding_mask = {MaskKind::kBoolean, padding.data(), {1, at + n}};
    a.output = got.data();
    a.weights = w.data();
    a.average_weights = false;
    m.forward(a, *cache);
    std::vector<float> expected_w;
    for (int h = 0; h < H; ++h)
      for (int i = at; i < at + n; ++i)
        for (int j = 0; j < at + n; ++j) expected_w.push_back(weights[(static_cast<std::size_t>(h) * T + i) * T + j]);
    EXPECT_TRUE(all_close(got, std::vector<float>(out.begin() + static_cast<std::ptrdiff_t>(at) * E,
                                                  out.begin() + static_cast<std::ptrdiff_t>(at + n) * E)));
    EXPECT_TRUE(all_close(w, expected_w)) << "chunk at " << at;
    at += n;
  }
}

// The storage rule of kv_cache.h, value by value (web/src/kv_ring.js answers the same).
TEST(Decoding, RingGeometryIsTheDocumentedRule) {
  struct Case { int max_length, window; std::int64_t capacity, rows_per_pass; };
  for (const Case& k : {Case{100, 0, 104, 104},      // no window: max_length, whole panels
                        Case{0, 10, 80, 71},         // a ring of W + 63 = 73 -> 80 slots
                        Case{0, 1, 64, 64},
                        Case{1000, 512, 576, 65},    // 575 -> 576 < max_length: it wraps
                        Case{66, 2, 72, 72},         // 65 -> 72 >= max_length: never wraps
                        Case{40, 10, 40, 40}}) {     // max_length smaller than the ring
    const RingGeometry g = ring_geometry(k.max_length, k.window);
    EXPECT_EQ(g.capacity, k.capacity) << k.max_length << ", " << k.window;
    EXPECT_EQ(g.rows_per_pass, k.rows_per_pass) << k.max_length << ", " << k.window;
  }
  EXPECT_THROW(ring_geometry(0, 0), ConfigError);
  EXPECT_THROW(ring_geometry(10, -1), ConfigError);
  EXPECT_THROW(ring_geometry(-1, 4), ConfigError);
}

TEST(Decoding, MisuseIsATypedErrorThatLeavesTheCache) {
  std::mt19937 rng(4);
  MultiHeadAttention a(MhaConfig{E, H}), b(MhaConfig{E, H});
  load_random(a, rng);
  load_random(b, rng);
  auto cache = a.create_cache({1, 8, 0});
  const auto x = random_floats(E, rng);
  EXPECT_THROW(run_cached(b, *cache, x, 1, 1, {1}), CacheError);
  EXPECT_EQ(cache->length(), 0);
  std::vector<float> out(E);
  MhaForwardArgs bad;
  bad.L = 1;
  bad.S = 2;
  bad.query = bad.key = bad.value = x.data();
  bad.output = out.data();
  EXPECT_THROW(a.forward(bad, *cache), ShapeError);
  EXPECT_THROW(a.create_cache({0, 8, 0}), ConfigError);
  EXPECT_THROW(a.create_cache({1, 0, 0}), ConfigError);
  EXPECT_EQ(cache->length(), 0);
}

}  // namespace
}  // namespace webattention
