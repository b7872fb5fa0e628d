// A batched KvCache's rows of different lengths (docs/attention-math/decoding.md §9): a call on some rows
// (MhaForwardArgs::rows), or on every row of a cache whose rows differ, equals one batch-1 cache
// per row, bit for bit, for every cache storage type, with RoPE, GQA, a softcap and a window whose
// ring wraps; truncate_rows() cuts each row on its own; a misuse changes nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "mha_test_support.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

using testing::random_floats;

constexpr int E = 16, H = 4, B = 4, T = 120;

MultiHeadAttention make_module() {
  MhaConfig config = testing::config(E, H);
  config.num_kv_heads = 2, config.rotary_dim = E / H, config.softcap = 20.0;
  MultiHeadAttention m(config);
  std::mt19937 rng(11);
  testing::load_random(m, rng);
  return m;
}

struct Layout { StorageType dtype; int max_length, window; };
const Layout kLayouts[] = {{StorageType::f32, T, 0}, {StorageType::f16, T, 0}, {StorageType::i8, T, 0},
                           {StorageType::f32, 0, 8}, {StorageType::f16, 0, 8}};

KvCacheConfig config_of(const Layout& l, int batch) {
  KvCacheConfig c{batch, l.max_length, l.window};
  c.dtype = l.dtype;
  return c;
}

// The batched cache and one batch-1 cache per row, fed the same tokens: x [B, T, E], row b's
// token t at x[b][t].
struct Pair {
  const MultiHeadAttention& m;
  std::vector<float> x;
  std::unique_ptr<KvCache> batched;
  std::vector<std::unique_ptr<KvCache>> alone;

  // n tokens on `rows` (empty: every row, no rows given): the batched call's outputs, each row's
  // equal to its own cache's.
  void step(const std::vector<std::int32_t>& rows, int n) {
    const int count = rows.empty() ? B : static_cast<int>(rows.size());
    std::vector<float> in(static_cast<std::size_t>(count) * n * E), out(in.size());
    for (int i = 0; i < count; ++i) {
      const int b = rows.empty() ? i : rows[static_cast<std::size_t>(i)];
      const std::int64_t at = batched->row_length(b);
      std::copy_n(x.begin() + (static_cast<std::size_t>(b) * T + at) * E, n * E, in.begin() + static_cast<std::size_t>(i) * n * E);
    }
    MhaForwardArgs a = testing::self_attention_args(in.data(), count, n, out.data());
    if (!rows.empty()) a.rows = rows.data();
    m.forward(a, *batched);
    for (int i = 0; i < count; ++i) {
      const int b = rows.empty() ? i : rows[static_cast<std::size_t>(i)];
      std::vector<float> one(static_cast<std::size_t>(n) * E);
      MhaForwardArgs s = testing::self_attention_args(in.data() + static_cast<std::size_t>(i) * n * E, 1, n, one.data());
      m.forward(s, *alone[static_cast<std::size_t>(b)]);
      const std::vector<float> got(out.begin() + static_cast<std::ptrdiff_t>(i) * n * E, out.begin() + static_cast<std::ptrdiff_t>(i + 1) * n * E);
      ASSERT_EQ(got, one) << "row " << b << " at length " << batched->row_length(b);
      ASSERT_EQ(batched->row_length(b), alone[static_cast<std::size_t>(b)]->length());
    }
  }
};

Pair make_pair(const MultiHeadAttention& m, const Layout& l, std::mt19937& rng) {
  Pair p{m, random_floats(static_cast<std::size_t>(B) * T * E, rng), m.create_cache(config_of(l, B)), {}};
  for (int b = 0; b < B; ++b) p.alone.push_back(m.create_cache(config_of(l, 1)));
  return p;
}

// body(pair) for a batched cache and its batch-1 twins of every layout, with seeded tokens.
template <class Body>
void for_each_layout(unsigned seed, Body&& body) {
  const MultiHeadAttention m = make_module();
  std::mt19937 rng(seed);
  for (const Layout& l : kLayouts) {
    SCOPED_TRACE(::testing::Message() << static_cast<int>(l.dtype) << " window " << l.window);
    Pair p = make_pair(m, l, rng);
    body(p);
  }
}

TEST(CacheRows, EachRowEqualsItsOwnCache) {
  for_each_layout(5, [](Pair& p) {
    p.step({}, 3);
    p.step({1, 2, 3}, 6);
    p.step({2, 3}, 11);
    p.step({3}, 70);  // row 3 at 90: a window's ring (72 slots) wraps
    p.step({0, 2}, 1);
    p.step({}, 2);  // every row, each from its own length
    p.step({0, 1, 3}, 1);
    EXPECT_FALSE(p.batched->uniform());
    EXPECT_EQ(p.batched->length(), 93);  // the longest row's
  });
}

TEST(CacheRows, TruncateRowsCutsEachRowOnItsOwn) {
  for_each_layout(6, [](Pair& p) {
    p.step({}, 40);
    const std::int64_t lengths[] = {10, 40, 0, 25};
    p.batched->truncate_rows(lengths);
    for (int b = 0; b < B; ++b) p.alone[static_cast<std::size_t>(b)]->truncate(lengths[b]);
    p.step({}, 3);
    p.step({0, 2}, 5);
  });
}

// Each misuse throws the named error and leaves the cache as it was: the next step still equals
// the separate caches.
TEST(CacheRows, MisuseChangesNothing) {
  const MultiHeadAttention m = make_module();
  std::mt19937 rng(8);
  Pair p = make_pair(m, kLayouts[0], rng);
  p.step({}, 4);
  p.step({1}, 2);
  std::vector<float> in(static_cast<std::size_t>(B) * E), out(in.size());
  const auto refused = [&](std::vector<std::int32_t> rows, int batch, const char* argument) {
    MhaForwardArgs a = testing::self_attention_args(in.data(), batch, 1, out.data());
    a.rows = rows.data();
    try {
      m.forward(a, *p.batched);
      ADD_FAILURE() << "accepted rows of size " << rows.size();
    } catch (const Error& e) {
      EXPECT_EQ(e.argument(), argument) << e.what();
    }
  };
  refused({0, 4}, 2, "rows");       // out of range
  refused({-1}, 1, "rows");
  refused({1, 1}, 2, "rows");       // repeated
  refused({2, 0}, 2, "rows");       // unsorted
  refused({0, 1, 2, 3, 3}, 5, "rows");  // more rows than the cache's
  const std::int64_t too_long[] = {4, 7, 4, 4}, negative[] = {4, 6, -1, 4};
  for (const std::int64_t* lengths : {too_long, negative}) {
    EXPECT_THROW(p.batched->truncate_rows(lengths), CacheError);
  }
  EXPECT_EQ(p.batched->row_length(1), 6);
  EXPECT_EQ(p.batched->row_length(0), 4);
  std::vector<float> k(static_cast<std::size_t>(B) * 2 * 4 * 4 * 2);
  EXPECT_THROW(p.batched->read(0, 4, k.data(), k.data() + k.size() / 2), CacheError);  // rows of unequal lengths
  const std::int32_t kept[] = {0};
  EXPECT_THROW(m.keep(*p.batched, kept, 1), CacheError);  // after a call on rows of their own
  p.step({0, 2, 3}, 1);
  p.step({}, 1);
}

}  // namespace
}  // namespace webattention
