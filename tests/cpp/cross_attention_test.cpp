// Cross-attention through an encoded cache (MultiHeadAttention::encode(), docs/attention-math/decoding.md
// §9): each decoder step equals the full forward with the encoder's key and value, weights
// included, for key and value widths of their own, GQA, qk-norm and a key-padding mask; the cache
// is read-only and a rotary module refuses to encode.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "mha_test_support.h"
#include "test_util.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

using testing::random_floats;

constexpr int B = 2, S = 37, L = 3;

struct Outputs { std::vector<float> output, weights; };

// forward() of `query` [B, L, E] against key [B, S, kdim] and value [B, S, vdim]: through `cache`
// when given (null key and value), else the full cross-attention.
Outputs run(const MultiHeadAttention& m, const std::vector<float>& query, const std::vector<float>& key,
            const std::vector<float>& value, const std::vector<std::uint8_t>& padding, KvCache* cache) {
  const MhaConfig& c = m.config();
  Outputs o{std::vector<float>(static_cast<std::size_t>(B) * L * c.embed_dim), std::vector<float>(static_cast<std::size_t>(B) * L * S)};
  MhaForwardArgs a;
  a.batch = B, a.L = L, a.query = query.data(), a.output = o.output.data(), a.weights = o.weights.data();
  a.key_padding_mask = {MaskKind::kBoolean, padding.data(), {B, S}};
  if (cache) {
    m.forward(a, *cache);
  } else {
    a.S = S, a.key = key.data(), a.value = value.data();
    m.forward(a);
  }
  return o;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << what << " [" << i << "]";
  }
}

MhaConfig cross_config(int kdim, int vdim, int kv_heads, bool qk_norm) {
  MhaConfig c = testing::config(24, 4, kdim, vdim);
  c.num_kv_heads = kv_heads;
  c.qk_norm = qk_norm;
  return c;
}

TEST(CrossAttention, EncodedStepsEqualTheFullForward) {
  std::mt19937 rng(5);
  for (const MhaConfig& c : {cross_config(0, 0, 4, false), cross_config(10, 7, 2, false), cross_config(24, 24, 1, true)}) {
    MultiHeadAttention m(c);
    testing::load_random(m, rng);
    const auto key = random_floats(static_cast<std::size_t>(B) * S * m.config().kdim, rng);
    const auto value = random_floats(static_cast<std::size_t>(B) * S * m.config().vdim, rng);
    std::vector<std::uint8_t> padding(static_cast<std::size_t>(B) * S, 0);
    for (int s = 30; s < S; ++s) padding[S + s] = 1;  // batch 1's last positions are padding
    const auto shared = c.kdim == c.vdim ? key : value;  // one tensor for both, where widths allow
    for (const auto* v : {&value, &shared}) {
      std::unique_ptr<KvCache> encoded = m.encode(key.data(), v->data(), B, S);
      EXPECT_TRUE(encoded->read_only());
      EXPECT_EQ(encoded->length(), S);
      for (int step = 0; step < 3; ++step) {  // every step sees the same encoded keys; nothing appended
        const auto query = random_floats(static_cast<std::size_t>(B) * L * c.embed_dim, rng);
        const Outputs want = run(m, query, key, *v, padding, nullptr);
        const Outputs got = run(m, query, key, *v, padding, encoded.get());
        expect_close(got.output, want.output, "output");
        expect_close(got.weights, want.weights, "weights");
      }
      EXPECT_EQ(encoded->length(), S);
    }
  }
}

TEST(CrossAttention, TheEncodedCacheIsReadOnlyAndRotaryModulesRefuse) {
  std::mt19937 rng(9);
  MultiHeadAttention m(cross_config(0, 0, 4, false));
  testing::load_random(m, rng);
  const auto kv = random_floats(static_cast<std::size_t>(B) * S * 24, rng);
  std::unique_ptr<KvCache> encoded = m.encode(kv.data(), kv.data(), B, S);
  EXPECT_THROW(encoded->truncate(3), CacheError);
  std::vector<float> x(static_cast<std::size_t>(B) * L * 24, 0.5f), out(x.size());
  MhaForwardArgs a = testing::self_attention_args(x.data(), B, L, out.data());  // key and value given: an append
  EXPECT_THROW(m.forward(a, *encoded), CacheError);
  EXPECT_EQ(encoded->length(), S);
  EXPECT_TRUE(encoded->fork()->read_only());

  MhaConfig rotary = cross_config(0, 0, 4, false);
  rotary.rotary_dim = 6;
  MultiHeadAttention r(rotary);
  testing::load_random(r, rng);
  EXPECT_THROW(r.encode(kv.data(), kv.data(), B, S), ConfigError);
  MultiHeadAttention other(cross_config(0, 0, 4, false));
  testing::load_random(other, rng);
  a.S = 0, a.key = nullptr, a.value = nullptr;
  EXPECT_THROW(other.forward(a, *encoded), CacheError);  // another module's cache
}

}  // namespace
}  // namespace webattention
