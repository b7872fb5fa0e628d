// MhaForwardArgs::position_ids (docs/attention-math/decoding.md §8), checked by equivalences that need no
// reference: the default ids give the same bits as none; rows carry their ids with them (a batch
// entry computes alone what it computes beside another, and permuting rows together with their
// ids permutes the outputs of a maskless forward); a cache fed in chunks with ids equals one
// causal forward with the same ids; bad ids throw before the cache changes. Float64 truth with
// ids: tests/fixtures/checkpoints (JS tests).
#include <gtest/gtest.h>

#include <cstdint>
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

MultiHeadAttention rotary_module(std::mt19937& rng, int rotary_dim = 4) {
  MhaConfig c{E, H};
  c.num_kv_heads = 2;
  c.rotary_dim = rotary_dim;
  c.qk_norm = true;  // before RoPE: the norm must not see the ids
  MultiHeadAttention m(c);
  for (const auto& spec : m.parameter_specs()) {
    const auto w = random_floats(spec.size(), rng, 0.4f);
    m.load_parameter(spec.name, w.data(), w.size());
  }
  return m;
}

// Self-attention over x [B, L, E] at `ids` (null: the rows' own positions), optionally cached.
std::vector<float> run(const MultiHeadAttention& m, const std::vector<float>& x, int B, int L,
                       const std::int32_t* ids, bool causal = true, KvCache* cache = nullptr) {
  std::vector<float> out(static_cast<std::size_t>(B) * L * E);
  MhaForwardArgs a = testing::self_attention_args(x.data(), B, L, out.data());
  a.causal = causal;
  a.position_ids = ids;
  if (cache) {
    m.forward(a, *cache);
  } else {
    m.forward(a);
  }
  return out;
}

TEST(PositionIds, TheDefaultIdsGiveTheSameBitsAsNone) {
  std::mt19937 rng(1);
  const MultiHeadAttention m = rotary_module(rng);
  const int B = 2, L = 7;
  const auto x = random_floats(static_cast<std::size_t>(B) * L * E, rng);
  std::vector<std::int32_t> ids(B * L);
  for (int n = 0; n < B * L; ++n) ids[n] = n % L;
  EXPECT_EQ(run(m, x, B, L, ids.data()), run(m, x, B, L, nullptr));
  // Cached after 3 positions: the rows' own positions are 3 … 3 + L − 1.
  auto with = m.create_cache({B, 20, 0}), without = m.create_cache({B, 20, 0});
  const auto prompt = random_floats(static_cast<std::size_t>(B) * 3 * E, rng);
  run(m, prompt, B, 3, nullptr, true, with.get());
  run(m, prompt, B, 3, nullptr, true, without.get());
  for (auto& id : ids) id += 3;
  EXPECT_EQ(run(m, x, B, L, ids.data(), true, with.get()), run(m, x, B, L, nullptr, true, without.get()));
}

TEST(PositionIds, EachBatchEntryReadsItsOwnIds) {
  std::mt19937 rng(2);
  const MultiHeadAttention m = rotary_module(rng);
  const int L = 5;
  const auto x = random_floats(static_cast<std::size_t>(2) * L * E, rng);
  const std::vector<std::int32_t> ids = {9, 3, 3, 0, 100000, 2147483647, 4, 4, 1, 0};
  const auto both = run(m, x, 2, L, ids.data());
  for (int b = 0; b < 2; ++b) {
    const std::vector<float> xb(x.begin() + b * L * E, x.begin() + (b + 1) * L * E);
    const auto alone = run(m, xb, 1, L, ids.data() + b * L);
    EXPECT_EQ(alone, std::vector<float>(both.begin() + b * L * E, both.begin() + (b + 1) * L * E)) << "batch " << b;
  }
}

TEST(PositionIds, RowsPermutedWithTheirIdsPermuteTheOutputs) {
  std::mt19937 rng(3);
  const MultiHeadAttention m = rotary_module(rng, 2);
  const int L = 6;
  const auto x = random_floats(static_cast<std::size_t>(L) * E, rng);
  const std::vector<std::int32_t> ids = {0, 1, 2, 3, 4, 5};
  const std::vector<int> order = {4, 0, 5, 2, 1, 3};
  std::vector<float> px(x.size());
  std::vector<std::int32_t> pids(L);
  for (int i = 0; i < L; ++i) {
    std::copy_n(x.begin() + order[i] * E, E, px.begin() + i * E);
    pids[i] = ids[order[i]];
  }
  const auto out = run(m, x, 1, L, ids.data(), false);
  const auto permuted = run(m, px, 1, L, pids.data(), false);
  std::vector<float> expected(out.size());
  for (int i = 0; i < L; ++i) std::copy_n(out.begin() + order[i] * E, E, expected.begin() + i * E);
  EXPECT_TRUE(all_close(permuted, expected));
  // Not the rows' own positions: the ids moved with the rows, not the rotation.
  EXPECT_FALSE(all_close(run(m, px, 1, L, nullptr, false), expected));
}

TEST(PositionIds, ACacheFedInChunksEqualsTheCausalForwardWithTheSameIds) {
  std::mt19937 rng(4);
  const MultiHeadAttention m = rotary_module(rng);
  const int B = 2, T = 8;
  const auto x = random_floats(static_cast<std::size_t>(B) * T * E, rng);
  const std::vector<std::int32_t> ids = {7, 7, 2, 0, 50, 51, 3, 1, 0, 0, 0, 9, 8, 7, 6, 40000};
  const auto whole = run(m, x, B, T, ids.data());
  auto cache = m.create_cache({B, T, 0});
  std::vector<float> assembled(whole.size());
  int at = 0;
  for (int n : {3, 1, 4}) {
    std::vector<float> part(static_cast<std::size_t>(B) * n * E);
    std::vector<std::int32_t> part_ids(B * n);
    for (int b = 0; b < B; ++b) {
      std::copy_n(x.begin() + (b * T + at) * E, n * E, part.begin() + b * n * E);
      std::copy_n(ids.begin() + b * T + at, n, part_ids.begin() + b * n);
    }
    const auto got = run(m, part, B, n, part_ids.data(), true, cache.get());
    for (int b = 0; b < B; ++b) std::copy_n(got.begin() + b * n * E, n * E, assembled.begin() + (b * T + at) * E);
    at += n;
  }
  EXPECT_TRUE(all_close(assembled, whole));
}

TEST(PositionIds, BadIdsThrowBeforeTheCacheChanges) {
  std::mt19937 rng(5);
  MultiHeadAttention m = rotary_module(rng);
  const int B = 1, L = 3;
  const auto x = random_floats(static_cast<std::size_t>(B) * L * E, rng);
  auto cache = m.create_cache({B, 10, 0});
  const std::vector<std::int32_t> negative = {0, -1, 2};
  EXPECT_THROW(run(m, x, B, L, negative.data(), true, cache.get()), ConfigError);
  EXPECT_EQ(cache->length(), 0);
  // A given table of 4 rows (rotary_dim 4: 2 pairs): ids 0 … 3 only.
  const std::vector<float> cos(8, 1.0f), sin(8, 0.0f);
  m.set_rotary_table(cos.data(), sin.data(), 4);
  const std::vector<std::int32_t> past = {3, 4, 0}, inside = {3, 0, 3};
  EXPECT_THROW(run(m, x, B, L, past.data(), true, cache.get()), ConfigError);
  EXPECT_EQ(cache->length(), 0);
  run(m, x, B, L, inside.data(), true, cache.get());
  EXPECT_EQ(cache->length(), L);
  // Cross-attention without a cache: a key row would have no id.
  std::vector<float> out(static_cast<std::size_t>(L) * E);
  MhaForwardArgs a;
  a.L = L;
  a.S = 2;
  a.query = a.key = a.value = x.data();
  a.output = out.data();
  a.position_ids = inside.data();
  EXPECT_THROW(m.forward(a), ShapeError);
  // No rotary: nothing to place.
  MultiHeadAttention plain(MhaConfig{E, H});
  for (const auto& spec : plain.parameter_specs()) {
    const auto w = random_floats(spec.size(), rng);
    plain.load_parameter(spec.name, w.data(), w.size());
  }
  EXPECT_THROW(run(plain, x, B, L, inside.data()), ConfigError);
}

}  // namespace
}  // namespace webattention
