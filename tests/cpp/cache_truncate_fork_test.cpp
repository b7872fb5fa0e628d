// KvCache::truncate() and fork() (docs/attention-math/decoding.md §9): a truncated cache continues exactly
// as a cache that never saw the dropped positions, and a fork is an independent copy, bit for bit,
// for every cache storage type, with a window's ring wrapped or not.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "test_util.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

using testing::random_floats;

constexpr int E = 16, H = 4, B = 2;

MultiHeadAttention make_module() {
  MhaConfig config{E, H};
  config.num_kv_heads = 2;
  MultiHeadAttention m(config);
  std::mt19937 rng(7);
  for (const auto& spec : m.parameter_specs()) {
    const auto w = random_floats(spec.size(), rng, 0.4f);
    m.load_parameter(spec.name, w.data(), w.size());
  }
  return m;
}

// Rows [at, at + n) of x [B, T, E] appended to `cache`; the outputs [B, n, E].
std::vector<float> step(const MultiHeadAttention& m, KvCache& cache, const std::vector<float>& x, int T, int at, int n) {
  std::vector<float> part(static_cast<std::size_t>(B) * n * E), out(part.size());
  for (int b = 0; b < B; ++b) {
    std::copy_n(x.begin() + (static_cast<std::size_t>(b) * T + at) * E, n * E, part.begin() + static_cast<std::size_t>(b) * n * E);
  }
  MhaForwardArgs a = testing::self_attention_args(part.data(), B, n, out.data());
  m.forward(a, cache);
  return out;
}

// Rows [0, n) of x into a new cache in steps of at most 16 rows; returns the last step's outputs.
std::vector<float> prefill(const MultiHeadAttention& m, KvCache& cache, const std::vector<float>& x, int T, int n) {
  std::vector<float> out;
  for (int at = 0; at < n; at += 16) out = step(m, cache, x, T, at, std::min(16, n - at));
  return out;
}

std::vector<float> read_all(const KvCache& cache) {
  const std::int64_t first = cache.length() - std::min<std::int64_t>(cache.length(), cache.config().window ? cache.config().window : cache.length());
  const int count = static_cast<int>(cache.length() - first);
  std::vector<float> k(static_cast<std::size_t>(B) * 2 * count * (E / H) * 2);
  cache.read(first, count, k.data(), k.data() + k.size() / 2);
  return k;
}

struct Layout { StorageType dtype; int max_length, window; };
const Layout kLayouts[] = {{StorageType::f32, 64, 0}, {StorageType::f16, 64, 0}, {StorageType::i8, 64, 0},
                           {StorageType::f32, 0, 8}, {StorageType::i8, 0, 8}};

KvCacheConfig config_of(const Layout& l) {
  KvCacheConfig c{B, l.max_length, l.window};
  c.dtype = l.dtype;
  return c;
}

// Prefill `kept` tokens, then `dropped` other ones, truncate back to `kept` and append `more`:
// each output, and read(), equals a cache that only ever saw the kept and the new tokens.
TEST(CacheTruncate, ContinuesAsIfTheDroppedPositionsWereNeverAppended) {
  const MultiHeadAttention m = make_module();
  std::mt19937 rng(3);
  for (const Layout& l : kLayouts) {
    const int kept = l.window ? 90 : 20, dropped = l.window ? 40 : 30, more = 5;  // a window's ring (72) wraps
    const int T = kept + dropped + more;
    const auto seen = random_floats(static_cast<std::size_t>(B) * T * E, rng);  // kept, dropped, new
    auto fresh_x = seen;  // kept, new
    for (int b = 0; b < B; ++b) {
      std::copy_n(seen.begin() + (static_cast<std::size_t>(b) * T + kept + dropped) * E, more * E,
                  fresh_x.begin() + (static_cast<std::size_t>(b) * T + kept) * E);
    }
    auto cache = m.create_cache(config_of(l));
    prefill(m, *cache, seen, T, kept + dropped);
    cache->truncate(kept);
    EXPECT_EQ(cache->length(), kept);
    const auto got = step(m, *cache, seen, T, kept + dropped, more);
    auto fresh = m.create_cache(config_of(l));
    prefill(m, *fresh, fresh_x, T, kept);
    EXPECT_EQ(got, step(m, *fresh, fresh_x, T, kept, more)) << static_cast<int>(l.dtype) << " window " << l.window;
    EXPECT_EQ(read_all(*cache), read_all(*fresh));
  }
}

// T positions of layout `l`, the one at `poison` an Inf, cut back to `kept`, then `more` others:
// the same bits as a cache that never held the Inf.
void expect_no_trace(const MultiHeadAttention& m, const Layout& l, int T, int poison, int kept, int more) {
  std::mt19937 rng(T);
  const auto x = random_floats(static_cast<std::size_t>(B) * T * E, rng);
  auto poisoned = x;
  poisoned[static_cast<std::size_t>(poison) * E] = std::numeric_limits<float>::infinity();  // batch 0
  auto cache = m.create_cache(config_of(l)), fresh = m.create_cache(config_of(l));
  prefill(m, *cache, poisoned, T, T);
  cache->truncate(kept);
  prefill(m, *fresh, x, T, kept);
  EXPECT_EQ(step(m, *cache, x, T, kept, more), step(m, *fresh, x, T, kept, more))
      << static_cast<int>(l.dtype) << " window " << l.window;
}

// A dropped Inf does not stay in the cache: a truncated cache computes as one that never held it.
TEST(CacheTruncate, DroppedNonFiniteRowsLeaveNoTrace) {
  const MultiHeadAttention m = make_module();
  // Row 11 of 12 in 16 slots: not written again, the next step reads its slot as padding.
  for (StorageType dtype : {StorageType::f32, StorageType::f16}) expect_no_trace(m, {dtype, 16, 0}, 12, 11, 10, 1);
  // Where the dropped positions wrap past the ring's last slot (window 8: 72 slots): the Inf at
  // 147 (slot 3); the step reaching position 144 (slot 0) reads that panel.
  for (StorageType dtype : {StorageType::f32, StorageType::i8}) expect_no_trace(m, {dtype, 0, 8}, 150, 147, 140, 5);
}

// Out of range, or below what the ring still holds: a CacheError naming the length; nothing changes.
TEST(CacheTruncate, RefusesLengthsItCannotKeep) {
  const MultiHeadAttention m = make_module();
  std::mt19937 rng(5);
  const int T = 100;
  const auto x = random_floats(static_cast<std::size_t>(B) * T * E, rng);
  auto cache = m.create_cache(config_of({StorageType::f32, 0, 8}));  // capacity 72
  auto twin = m.create_cache(config_of({StorageType::f32, 0, 8}));
  prefill(m, *cache, x, T, 90);
  prefill(m, *twin, x, T, 90);
  EXPECT_EQ(cache->min_truncated_length(), 90 - 72 + 8);
  for (std::int64_t bad : {std::int64_t{-1}, std::int64_t{91}, std::int64_t{25}, std::int64_t{0}}) {
    try {
      cache->truncate(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const CacheError& e) {
      EXPECT_EQ(e.argument(), "length");
      if (bad == 25) EXPECT_NE(std::string(e.what()).find("left the ring"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(cache->length(), 90);
  EXPECT_EQ(step(m, *cache, x, T, 90, 3), step(m, *twin, x, T, 90, 3));
  EXPECT_EQ(cache->min_truncated_length(), 93 - 72 + 8);
  cache->truncate(29);  // the lowest it keeps
  EXPECT_EQ(cache->length(), 29);
}

// A fork and its source, each continued with other tokens, equal two caches fed separately.
TEST(CacheFork, IsAnIndependentCopy) {
  const MultiHeadAttention m = make_module();
  std::mt19937 rng(6);
  for (const Layout& l : kLayouts) {
    const int prefix = l.window ? 80 : 24, T = prefix + 6;
    const auto a = random_floats(static_cast<std::size_t>(B) * T * E, rng);
    auto b = a;  // the same prefix, other continuations
    for (int i = 0; i < B; ++i) {
      const auto tail = random_floats(6 * E, rng);
      std::copy(tail.begin(), tail.end(), b.begin() + (static_cast<std::size_t>(i) * T + prefix) * E);
    }
    auto cache = m.create_cache(config_of(l));
    prefill(m, *cache, a, T, prefix);
    auto fork = cache->fork();
    EXPECT_EQ(fork->length(), prefix);
    EXPECT_EQ(fork->config().dtype, l.dtype);
    const auto got_b = step(m, *fork, b, T, prefix, 6);
    const auto got_a = step(m, *cache, a, T, prefix, 6);
    auto fresh_a = m.create_cache(config_of(l)), fresh_b = m.create_cache(config_of(l));
    prefill(m, *fresh_a, a, T, prefix);
    prefill(m, *fresh_b, b, T, prefix);
    EXPECT_EQ(got_a, step(m, *fresh_a, a, T, prefix, 6)) << static_cast<int>(l.dtype) << " window " << l.window;
    EXPECT_EQ(got_b, step(m, *fresh_b, b, T, prefix, 6)) << static_cast<int>(l.dtype) << " window " << l.window;
    EXPECT_EQ(read_all(*fork), read_all(*fresh_b));
  }
}

}  // namespace
}  // namespace webattention
