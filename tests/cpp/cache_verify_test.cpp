// Draft verification in the core (docs/attention-math/decoding.md §9), by equivalences: a cached forward
// with a verification mask among its new positions gives the rows of the plain forward over the
// whole sequence with that mask placed at the new positions (also over a window's ring, in
// several passes, weights included); keep() leaves a cache whose next step and read() equal a
// fresh cache fed the kept tokens alone, bit for bit, for every cache type; misuse changes nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
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
constexpr float kInf = std::numeric_limits<float>::infinity();

MultiHeadAttention make_module(int seed) {
  MhaConfig config{E, H};
  config.num_kv_heads = 2;
  config.rotary_dim = 4;
  MultiHeadAttention m(config);
  std::mt19937 rng(seed);
  for (const auto& spec : m.parameter_specs()) {
    const auto w = random_floats(spec.size(), rng, 0.4f);
    m.load_parameter(spec.name, w.data(), w.size());
  }
  return m;
}

// Rows `rows` of x [T, E] (one batch) appended to `cache` in one call, with `mask`; the outputs.
std::vector<float> step(const MultiHeadAttention& m, KvCache& cache, const std::vector<float>& x,
                        const std::vector<int>& rows, MaskArg mask = {}, float* weights = nullptr,
                        const std::int32_t* ids = nullptr) {
  const int n = static_cast<int>(rows.size());
  std::vector<float> part(static_cast<std::size_t>(n) * E), out(part.size());
  for (int i = 0; i < n; ++i) std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(rows[i]) * E, E, part.begin() + static_cast<std::ptrdiff_t>(i) * E);
  MhaForwardArgs a = testing::self_attention_args(part.data(), 1, n, out.data());
  a.attn_mask = mask;
  a.weights = weights;
  a.average_weights = false;
  a.position_ids = ids;
  m.forward(a, cache);
  return out;
}

std::vector<int> range(int first, int n) {
  std::vector<int> r(n);
  for (int i = 0; i < n; ++i) r[i] = first + i;
  return r;
}

// A window cache past its ring's wrap (window 6: 72 slots, 67 rows a pass), then 80 new rows in
// one call (two passes) with an additive mask among them: the rows and weights of the plain
// forward with the window's causal rule plus that mask at the new positions.
TEST(CacheVerify, MaskAmongNewPositionsEqualsThePlainForwardOverThePasses) {
  const auto m = make_module(3);
  std::mt19937 rng(4);
  const int W = 6, P = 90, L = 80, T = P + L;
  const auto x = random_floats(static_cast<std::size_t>(T) * E, rng);
  auto verify = random_floats(static_cast<std::size_t>(L) * L, rng, 0.5f);
  for (std::size_t k = 3; k < verify.size(); k += 7) verify[k] = -kInf;
  std::vector<float> full(static_cast<std::size_t>(T) * T, -kInf);
  for (int i = 0; i < T; ++i) {
    for (int j = std::max(0, i - W + 1); j <= i; ++j) {
      full[static_cast<std::size_t>(i) * T + j] = i >= P && j >= P ? verify[static_cast<std::size_t>(i - P) * L + j - P] : 0.0f;
    }
  }
  std::vector<float> out(static_cast<std::size_t>(T) * E), weights(static_cast<std::size_t>(H) * T * T);
  MhaForwardArgs a = testing::self_attention_args(x.data(), 1, T, out.data());
  a.attn_mask = {MaskKind::kAdditive, full.data(), {T, T}};
  a.weights = weights.data();
  a.average_weights = false;
  m.forward(a);

  auto cache = m.create_cache({1, 0, W});
  for (int at = 0; at < P; at += 30) step(m, *cache, x, range(at, 30));
  std::vector<float> w(static_cast<std::size_t>(H) * L * T);
  const auto got = step(m, *cache, x, range(P, L), {MaskKind::kAdditive, verify.data(), {L, L}}, w.data());
  EXPECT_TRUE(all_close(got, std::vector<float>(out.begin() + static_cast<std::ptrdiff_t>(P) * E, out.end())));
  std::vector<float> expected_w;
  for (int h = 0; h < H; ++h)
    for (int i = P; i < T; ++i)
      for (int j = 0; j < T; ++j) expected_w.push_back(weights[(static_cast<std::size_t>(h) * T + i) * T + j]);
  EXPECT_TRUE(all_close(w, expected_w));
}

// A window counts in positionIds (§9): a tree of drafts (parents -1, 0, 0, 2: depths 0, 1, 1, 2)
// after a prompt of 30 at window 6, verified at its depths, gives each branch's rows of a fresh
// cache fed the prompt and the branch alone (draft 3, row 33 at depth 32, sees cached key 27,
// which a window in rows would leave out); ids below the length are a CacheError, nothing changed.
TEST(CacheVerify, TreeUnderAWindowCountsInPositionIds) {
  const auto m = make_module(9);
  std::mt19937 rng(10);
  const int W = 6, P = 30;
  const auto x = random_floats(static_cast<std::size_t>(P + 4) * E, rng);
  auto cache = m.create_cache({1, 0, W});
  step(m, *cache, x, range(0, P));
  const std::uint8_t tree[16] = {0, 1, 1, 1, 0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 0};  // masked: not an ancestor
  const std::int32_t below[] = {P - 1, P, P, P + 1}, depths[] = {P, P + 1, P + 1, P + 2};
  const MaskArg mask{MaskKind::kBoolean, tree, {4, 4}};
  EXPECT_THROW(step(m, *cache, x, range(P, 4), mask, nullptr, below), CacheError);
  EXPECT_EQ(cache->length(), P);
  const auto got = step(m, *cache, x, range(P, 4), mask, nullptr, depths);
  for (const std::vector<int>& branch : {std::vector<int>{0, 1}, {0, 2, 3}}) {
    auto fresh = m.create_cache({1, 0, W});
    step(m, *fresh, x, range(0, P));
    std::vector<int> rows;
    for (int i : branch) rows.push_back(P + i);
    const auto want = step(m, *fresh, x, rows);
    std::vector<float> mine;
    for (int i : branch) mine.insert(mine.end(), got.begin() + static_cast<std::ptrdiff_t>(i) * E, got.begin() + static_cast<std::ptrdiff_t>(i + 1) * E);
    EXPECT_TRUE(all_close(mine, want)) << "branch of " << branch.size();
  }
}

std::vector<float> read_all(const KvCache& cache) {
  const int n = static_cast<int>(cache.length());
  std::vector<float> kv(static_cast<std::size_t>(2) * 2 * n * (E / H));
  cache.read(0, n, kv.data(), kv.data() + kv.size() / 2);
  return kv;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Draft 4 after a prompt of 5, keep({1, 3}) (both keys move: rotated again at their new
// positions), then one more token: the same bits as a cache fed the prompt, drafts 1 and 3 and
// the token, in every cache type.
TEST(CacheVerify, KeepEqualsAFreshRunBitForBit) {
  const auto m = make_module(5);
  std::mt19937 rng(6);
  const auto x = random_floats(static_cast<std::size_t>(10) * E, rng);
  for (StorageType dtype : {StorageType::f32, StorageType::f16, StorageType::i8}) {
    auto cache = m.create_cache({1, 16, 0, dtype});
    auto fresh = m.create_cache({1, 16, 0, dtype});
    step(m, *cache, x, range(0, 5));
    step(m, *cache, x, range(5, 4));
    const std::int32_t kept[] = {1, 3};
    m.keep(*cache, kept, 2);
    EXPECT_EQ(cache->length(), 7);
    step(m, *fresh, x, {0, 1, 2, 3, 4, 6, 8});
    EXPECT_TRUE(same_bits(read_all(*cache), read_all(*fresh))) << storage_type_name(dtype);
    EXPECT_TRUE(same_bits(step(m, *cache, x, {9}), step(m, *fresh, x, {9}))) << storage_type_name(dtype);
  }
}

// Misuse is a CacheError that leaves the cache as it was: no call to keep among, indices out of
// range, repeated or unsorted.
TEST(CacheVerify, MisuseOfKeepChangesNothing) {
  const auto m = make_module(7);
  std::mt19937 rng(8);
  const auto x = random_floats(static_cast<std::size_t>(10) * E, rng);
  auto cache = m.create_cache({1, 16, 0});
  const std::int32_t none[] = {0};
  EXPECT_THROW(m.keep(*cache, none, 1), CacheError);
  step(m, *cache, x, range(0, 4));
  const auto before = read_all(*cache);
  for (const std::vector<std::int32_t>& bad : {std::vector<std::int32_t>{4}, {-1}, {1, 1}, {2, 1}}) {
    EXPECT_THROW(m.keep(*cache, bad.data(), static_cast<int>(bad.size())), CacheError);
  }
  EXPECT_EQ(cache->length(), 4);
  EXPECT_TRUE(same_bits(read_all(*cache), before));
  m.keep(*cache, none, 1);
  EXPECT_EQ(cache->length(), 1);
  EXPECT_THROW(m.keep(*cache, none, 1), CacheError);  // kept already: no call since
}

}  // namespace
}  // namespace webattention
