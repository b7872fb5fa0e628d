// libFuzzer harness of incremental decoding (docs/attention-math.md §7-§9), built with ASan + UBSan
// (scripts/fuzz.sh). Each input is read as a grouped-query / rotary module, a sequence, a sliding
// window (or none), a key-padding mask, a way of cutting the sequence into chunks (up to 160
// positions: a window's ring of W + 63 slots wraps), each chunk maybe with a verification mask
// among its rows, weights averaged, per head or none, and for a rotary module maybe position ids.
// Checks: nothing the sanitizers see; the chunks fed to a KV cache give the rows of one plain
// forward over the whole sequence with the causal window as an additive mask (outputs and weights);
// appending past max_length is a CacheError that leaves the cache; reset() then a second pass gives
// the same bits. Inputs with NaN or infinities run for memory safety only. Weights and the cache
// come in every storage type (docs/attention-math.md §11); a narrow cache is compared with one
// cache of its type fed the whole sequence in one call (the rows it stores are the same whatever
// the chunks), the f32 cache with the plain forward. Issue 20's options come from fuzz_options.h
// (int8 activations with integer weights, scale, softcap, sinks, qk-norm with all-zero heads, a
// bias per projection, RoPE scaling or a given table, position ids): a refusal of positions past
// the table or of negative ids must come exactly where it is due, for the plain forward and for the
// first chunk that reaches them, and must leave the cache as it was.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_bytes.h"
#include "fuzz_options.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace {

using namespace webattention;
using fuzz::Bytes;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "decode_fuzz: %s\n", what);
  std::abort();
}

// got within 1e-4 + 1e-4·|expected| of expected, plus allowance[i % allowance.size()] where given.
void check_close(const char* what, const float* got, const float* expected, std::size_t n,
                 const std::vector<double>& allowance = {}) {
  for (std::size_t i = 0; i < n; ++i) {
    const double a = got[i], b = expected[i];
    const double extra = allowance.empty() ? 0.0 : allowance[i % allowance.size()];
    if (!(std::fabs(a - b) <= 1e-4 + 1e-4 * std::fabs(b) + extra)) {
      std::fprintf(stderr, "decode_fuzz: %s[%zu] = %g, expected %g\n", what, i, a, b);
      std::abort();
    }
  }
}

// Under int8 activations (§11) the heads' output entering out_proj is quantised per block, and the
// chunks' attention and the plain forward's may differ in its last bits, so that a value near a
// rounding boundary takes neighbouring codes in the two (mha_fuzz bounds that from the
// reference's heads; here there is none). Per output column n: Σ_k |W_O[n, k]| · d_max, d_max a
// bound on any block's step: |heads| ≤ max |V| (each head's output is a weighted mean of value
// rows), and |V| ≤ Σ_k |x_k| · |W[j, k]| + |bias| over every input projection's rows j; 1.25 for the
// quantised weights and inputs (an int4 block's values move by up to 1/14 of its largest).
std::vector<double> act8_allowance(const std::vector<std::pair<ParameterSpec, std::vector<float>>>& loaded,
                                   const std::vector<float>& x, int E) {
  double v_max = 0.0, bias_max = 0.0;
  const std::vector<float>* out_w = nullptr;
  int out_rows = 0;
  for (const auto& [spec, values] : loaded) {
    if (spec.name == "out_proj.weight") {
      out_w = &values, out_rows = spec.shape[0];
    } else if (spec.shape.size() == 2 && spec.shape[1] == E) {
      for (std::size_t r = 0; r < x.size() / E; ++r)
        for (int j = 0; j < spec.shape[0]; ++j) {
          double sum = 0.0;
          for (int k = 0; k < E; ++k) sum += std::fabs(x[r * E + k]) * std::fabs(values[static_cast<std::size_t>(j) * E + k]);
          v_max = std::max(v_max, sum);
        }
    } else if (spec.name.find("bias") != std::string::npos && spec.name != "out_proj.bias") {
      for (float b : values) bias_max = std::max(bias_max, static_cast<double>(std::fabs(b)));
    }
  }
  const double step = 1.25 * 1.25 * (v_max + bias_max) / 127.0;
  std::vector<double> allowance(static_cast<std::size_t>(out_rows), 0.0);
  const std::size_t width = out_w->size() / out_rows;
  for (int n = 0; n < out_rows; ++n)
    for (std::size_t k = 0; k < width; ++k) allowance[n] += std::fabs((*out_w)[n * width + k]) * step;
  return allowance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  MhaConfig c;
  c.weights_dtype = fuzz::draw_storage_type(in, &StorageTypeInfo::weights);
  fuzz::draw_activations(in, c);
  const StorageType cache_dtype = fuzz::draw_storage_type(in, &StorageTypeInfo::cache);
  const int groups[] = {1, 2, 3, 4};
  c.num_kv_heads = in.in(1, 3);
  c.num_heads = c.num_kv_heads * groups[in.in(0, 3)];
  c.head_dim = 2 * in.in(1, 5);
  c.value_head_dim = in.in(1, 9);
  c.embed_dim = in.in(1, 12);
  fuzz::draw_score_options(in, c);
  if (in.coin()) fuzz::draw_rotary(in, c, c.head_dim);
  const int B = in.in(1, 2), T = in.coin() ? in.in(1, 20) : in.in(1, 160);
  const int window = in.coin() ? in.in(1, 9) : 0;
  const int E = c.embed_dim, H = c.num_heads;
  const int zero_head = c.qk_norm && in.coin() ? in.in(0, H - 1) : -1;
  bool non_finite = false;

  const std::unique_ptr<MultiHeadAttention> module = fuzz::module_or_refused(c);
  if (!module) return 0;  // an option value the core refuses (fuzz_options.h draws some)
  MultiHeadAttention& mha = *module;
  std::vector<std::pair<ParameterSpec, std::vector<float>>> loaded;  // for act8_allowance()
  for (const auto& spec : mha.parameter_specs()) {
    bool entry_non_finite = false;
    std::vector<float> values = fuzz::entry_values(in, spec, &entry_non_finite);
    if (zero_head >= 0) fuzz::zero_qk_head(spec, values, mha.config(), zero_head);
    try {
      mha.load_parameter(spec.name, values.data(), values.size());
    } catch (const StateDictError&) {
      if (!fuzz::refused_entry(spec, values, c)) throw;
      return 0;  // a non-finite int8 / int4 weight (§11) or a +Inf sink (§10) is refused
    }
    non_finite = non_finite || entry_non_finite;
    if (c.activations == StorageType::i8) loaded.emplace_back(spec, std::move(values));
  }
  std::vector<float> x(static_cast<std::size_t>(B) * T * E);
  for (auto& v : x) v = in.value(&non_finite);
  const std::vector<double> allowance = c.activations == StorageType::i8 && !non_finite ? act8_allowance(loaded, x, E) : std::vector<double>{};
  std::vector<std::uint8_t> padding;
  if (in.coin()) {
    padding.resize(static_cast<std::size_t>(B) * T);
    for (auto& p : padding) p = in.u8() % 4 == 0;
  }
  // The causal window of the whole sequence as an additive mask, for the plain forward.
  std::vector<float> window_mask(static_cast<std::size_t>(T) * T, -std::numeric_limits<float>::infinity());
  for (int i = 0; i < T; ++i)
    for (int j = window ? std::max(0, i - window + 1) : 0; j <= i; ++j) window_mask[static_cast<std::size_t>(i) * T + j] = 0.0f;
  const bool weights = in.coin(), average = in.coin();
  const int wh = average ? 1 : H;
  // position_ids (§8) for a rotary module: rows at positions of their own (repeated, out of
  // order, far, the largest int32, -1), the same ids for the plain forward and the chunks; and
  // maybe a given table, short of the positions now and then. With a window, the rows' own
  // positions: a cache counts the window in the ids (§9), which a plain forward's window mask over
  // the rows cannot follow (tests/contract/cache_verify.mjs checks ids that move the window).
  std::vector<std::int32_t> ids =
      c.rotary_dim > 0 && in.coin() ? fuzz::draw_position_ids(in, static_cast<std::size_t>(B) * T) : std::vector<std::int32_t>{};
  if (window) {
    for (std::size_t n = 0; n < ids.size(); ++n) ids[n] = static_cast<std::int32_t>(n % static_cast<std::size_t>(T));
  }
  const fuzz::RotaryTable table = fuzz::draw_rotary_table(in, c.rotary_dim / 2, 170, &non_finite);
  if (table.rows > 0) mha.set_rotary_table(table.cos.data(), table.sin.data(), table.rows);

  MhaForwardArgs full;
  full.batch = B;
  full.L = full.S = T;
  full.query = full.key = full.value = x.data();
  full.attn_mask = {MaskKind::kAdditive, window_mask.data(), {T, T}};
  if (!padding.empty()) full.key_padding_mask = {MaskKind::kBoolean, padding.data(), {B, T}};
  std::vector<float> expected(x.size() / E * E), expected_w(weights ? static_cast<std::size_t>(B) * wh * T * T : 0);
  full.output = expected.data();
  full.weights = weights ? expected_w.data() : nullptr;
  full.average_weights = average;
  full.position_ids = ids.empty() ? nullptr : ids.data();
  const KvCacheConfig cache_config{B, window && in.coin() ? 0 : T, window, cache_dtype};
  std::vector<int> chunks;
  for (int at = 0; at < T;) chunks.push_back(std::min(T - at, in.coin() ? 1 : in.in(1, 90))), at += chunks.back();
  // Verification masks (§9): a chunk may carry an additive mask among its own rows (some −∞), on
  // top of the causal window. The plain forward sees them as blocks of its mask; a whole-sequence
  // call on a cache as one verification mask [T, T], zero outside the blocks.
  std::vector<std::vector<float>> chunk_masks(chunks.size());
  std::vector<float> verify(static_cast<std::size_t>(T) * T, 0.0f);
  for (std::size_t k = 0, at = 0; k < chunks.size(); at += static_cast<std::size_t>(chunks[k]), ++k) {
    if (!in.coin()) continue;
    const std::size_t n = static_cast<std::size_t>(chunks[k]);
    std::uint32_t state = in.u8() | static_cast<std::uint32_t>(in.u8()) << 8;
    chunk_masks[k].resize(n * n);
    for (std::size_t e = 0; e < n * n; ++e) {
      state = state * 1664525u + 1013904223u;
      const std::uint32_t r = state >> 24;
      chunk_masks[k][e] = r % 5 == 0 ? -std::numeric_limits<float>::infinity() : (static_cast<float>(r) - 128.0f) / 64.0f;
      verify[(at + e / n) * T + at + e % n] = chunk_masks[k][e];
    }
  }
  for (std::size_t e = 0; e < window_mask.size(); ++e) window_mask[e] += verify[e];
  const bool full_refused = fuzz::refused_as_due(fuzz::positions_refused(ids, table, T - 1), "decode_fuzz", [&] {
    if (cache_dtype == StorageType::f32) {
      mha.forward(full);
    } else {  // the same storage, the whole sequence in one call, the chunks' masks as its own
      full.attn_mask = {MaskKind::kAdditive, verify.data(), {T, T}};
      auto whole = mha.create_cache(cache_config);
      mha.forward(full, *whole);
    }
  });

  auto cache = mha.create_cache(cache_config);
  std::vector<float> first;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<float> got(expected.size());
    int at = 0;
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      const int n = chunks[k];
      std::vector<float> part(static_cast<std::size_t>(B) * n * E), out(part.size());
      std::vector<std::uint8_t> pad(padding.empty() ? 0 : static_cast<std::size_t>(B) * (at + n));
      std::vector<std::int32_t> part_ids(ids.empty() ? 0 : static_cast<std::size_t>(B) * n);
      for (int b = 0; b < B; ++b) {
        std::copy_n(x.begin() + (static_cast<std::size_t>(b) * T + at) * E, n * E, part.begin() + static_cast<std::size_t>(b) * n * E);
        if (!pad.empty()) std::copy_n(padding.begin() + static_cast<std::size_t>(b) * T, at + n, pad.begin() + static_cast<std::size_t>(b) * (at + n));
        if (!part_ids.empty()) std::copy_n(ids.begin() + static_cast<std::size_t>(b) * T + at, n, part_ids.begin() + static_cast<std::size_t>(b) * n);
      }
      std::vector<float> w(weights ? static_cast<std::size_t>(B) * wh * n * (at + n) : 0);
      MhaForwardArgs a;
      a.batch = B;
      a.L = a.S = n;
      a.query = a.key = a.value = part.data();
      if (!pad.empty()) a.key_padding_mask = {MaskKind::kBoolean, pad.data(), {B, at + n}};
      a.output = out.data();
      a.weights = weights ? w.data() : nullptr;
      a.average_weights = average;
      a.position_ids = part_ids.empty() ? nullptr : part_ids.data();
      if (!chunk_masks[k].empty()) a.attn_mask = {MaskKind::kAdditive, chunk_masks[k].data(), {n, n}};
      if (fuzz::refused_as_due(fuzz::positions_refused(part_ids, table, at + n - 1), "decode_fuzz",
                               [&] { mha.forward(a, *cache); })) {
        if (cache->length() != at) fail("a refused append changed the cache's length");
        return 0;
      }
      for (int b = 0; b < B; ++b)
        std::copy_n(out.begin() + static_cast<std::size_t>(b) * n * E, n * E, got.begin() + (static_cast<std::size_t>(b) * T + at) * E);
      if (weights && !non_finite && !full_refused) {
        for (int g = 0; g < B * wh; ++g)
          for (int i = 0; i < n; ++i)
            check_close("weights", w.data() + (static_cast<std::size_t>(g) * n + i) * (at + n),
                        expected_w.data() + (static_cast<std::size_t>(g) * T + at + i) * T, at + n);
      }
      at += n;
    }
    if (full_refused) fail("the plain forward was refused, no chunk was");
    if (cache->length() != T) fail("cache length after the sequence");
    if (!non_finite) check_close("output", got.data(), expected.data(), got.size(), allowance);
    if (pass == 0) {
      first = got;
      if (cache->config().max_length == T) {  // full: one more position is refused, nothing changes
        MhaForwardArgs a;
        a.batch = B;
        a.L = a.S = 1;
        std::vector<float> one(static_cast<std::size_t>(B) * E), out(one.size());
        a.query = a.key = a.value = one.data();
        a.output = out.data();
        try {
          mha.forward(a, *cache);
          fail("an append past max_length was accepted");
        } catch (const CacheError&) {
        }
        if (cache->length() != T) fail("a refused append changed the length");
      }
      cache->reset();
    } else if (!std::equal(first.begin(), first.end(), got.begin(), [](float a, float b) {
                 return a == b || (std::isnan(a) && std::isnan(b));
               })) {
      fail("a second pass after reset() differs");
    }
  }
  return 0;
}
