// The kernel-level cases of tests/cases/kernel_cases.json (test mode) on one kernel family
// (kernel_case_support.h: family()), each against the float64 reference: the projection kernel
// (kernels::linear over pack_linear's panels), the flash attention kernel (kernels::attention_unit,
// unit by unit, as run_attention drives it) with and without attention weights, its decode rows
// (one query row per head, or a GQA group of rows, over a cache length), and rotary embedding.
// Cache appends go through the public KV cache: kernel_cases_cache_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/attention_problem.h"
#include "kernel_case_support.h"
#include "kernels/kernels.h"
#include "rotary.h"

namespace webattention::cases {
namespace {

using ::testing::Combine;
using ::testing::ValuesIn;

// ---- linear -----------------------------------------------------------------------------------

KERNEL_CASES(LinearCases, LinearCase, kLinearCases);

// Two targets in one pass (as the Q/K/V projections run), the second 3 columns wider; strided
// input and output rows, so that a kernel reading or writing past a row shows.
TEST_P(LinearCases, MatchesReference) {
  const auto& c = kase();
  const int x_stride = c.in + 3;
  const std::vector<float> x = uniform(static_cast<std::size_t>(c.rows) * x_stride, 1, c.amplitude);
  std::vector<float> x_dense;
  for (int r = 0; r < c.rows; ++r) x_dense.insert(x_dense.end(), x.begin() + r * x_stride, x.begin() + r * x_stride + c.in);
  const int outs[2] = {c.out, c.out + 3};
  std::vector<float> w[2], bias[2], y[2];
  kernels::PackedLinear packed[2];
  kernels::LinearTarget targets[2];
  for (int t = 0; t < 2; ++t) {
    w[t] = uniform(static_cast<std::size_t>(outs[t]) * c.in, 2 + t, 1.0 / std::sqrt(c.in));
    bias[t] = uniform(outs[t], 4 + t);
    packed[t] = kernels::pack_linear(w[t].data(), StorageType::f32, outs[t], c.in, weights_type(types()));
    if (c.bias) packed[t].set_bias(bias[t].data(), outs[t]);
    if (int8_activations(types())) kernels::use_int8_activations(packed[t]);
    y[t].assign(static_cast<std::size_t>(c.rows) * (outs[t] + 2), NAN);
    targets[t] = {&packed[t], y[t].data(), outs[t] + 2};
  }
  kernels::linear(x.data(), c.rows, x_stride, targets, 2);
  for (int t = 0; t < 2; ++t) {
    const std::vector<float> stored = stored_weights(w[t], outs[t], c.in, weights_type(types()));
    const std::vector<double> expected = kernel_reference::linear(projection_input(x_dense, c.in, types()), c.rows, c.in, stored, outs[t], c.bias ? &bias[t] : nullptr);
    for (int r = 0; r < c.rows; ++r) {
      const std::vector<double> row(expected.begin() + r * outs[t], expected.begin() + (r + 1) * outs[t]);
      EXPECT_TRUE(matches_reference(y[t].data() + r * (outs[t] + 2), row)) << "target " << t << ", row " << r;
    }
  }
}

// ---- flash attention and decode rows ----------------------------------------------------------

// Runs one attention problem on the kernel, unit by unit, as run_attention does (one thread).
void run_units(const AttentionProblem& p) {
  std::vector<float> workspace(kernels::attention_workspace_floats(p));
  for (int unit = 0; unit < p.units(); ++unit) kernels::attention_unit(p, unit, workspace.data());
}

// A mask view of the reference's mask: key padding [B, S] or attn_mask [B·H, L, S].
MaskView view(const kernel_reference::Mask& m, std::ptrdiff_t batch, std::ptrdiff_t head, std::ptrdiff_t row) {
  MaskView v;
  v.kind = m.kind;
  if (m.kind != MaskKind::kNone) v = {m.kind, m.data(), batch, head, row};
  return v;
}

// K [B, S, H_kv, dk] and V [B, S, H_kv, dv] as a KV cache of `type` packs them (attention_problem.h's
// PackedKv, in kv_layout.h's layout; capacity S rounded up to whole panels, so key j sits in slot j): the elements and the
// int8 scales, one per (batch, K/V head, slot).
struct NarrowCache {
  std::vector<unsigned char> k, v;
  std::vector<float> k_scales, v_scales;
  PackedKv packed;

  NarrowCache(const FlashCase& c, StorageType type, const std::vector<float>& keys, const std::vector<float>& values) {
    const int capacity = kernels::whole_panels(c.S), blocks = c.batch * c.kv_heads;
    const std::size_t k_block = kernels::key_block_elements(capacity, c.dk), v_block = kernels::value_block_elements(capacity, c.dv);
    const int bytes = storage_element_bytes(type);
    k.assign(blocks * k_block * bytes, 0);
    v.assign(blocks * v_block * bytes, 0);
    k_scales.assign(static_cast<std::size_t>(blocks) * capacity, 0.0f);
    v_scales.assign(k_scales.size(), 0.0f);
    for (int b = 0; b < c.batch; ++b) {
      for (int g = 0; g < c.kv_heads; ++g) {
        const int block = b * c.kv_heads + g;
        for (int j = 0; j < c.S; ++j) {
          const std::size_t row = (static_cast<std::size_t>(b) * c.S + j) * c.kv_heads + g;
          k_scales[static_cast<std::size_t>(block) * capacity + j] =
              store(type, keys.data() + row * c.dk, c.dk, k.data() + block * k_block * bytes, [&](int f) { return kernels::key_index(c.dk, j, f); });
          v_scales[static_cast<std::size_t>(block) * capacity + j] =
              store(type, values.data() + row * c.dv, c.dv, v.data() + block * v_block * bytes, [&](int f) { return kernels::value_index(capacity, kernels::whole_panels(c.dv), j, f); });
        }
      }
    }
    packed = {k.data(), v.data(), static_cast<std::ptrdiff_t>(k_block), static_cast<std::ptrdiff_t>(v_block), capacity,
              type, type == StorageType::i8 ? k_scales.data() : nullptr, type == StorageType::i8 ? v_scales.data() : nullptr,
              finite(keys) && finite(values)};  // the cases' inputs are: f16 takes its finite-only widening
  }

  static bool finite(const std::vector<float>& x) {
    return std::all_of(x.begin(), x.end(), [](float v) { return std::isfinite(v) && std::fabs(v) < 65504.0f; });
  }

  // One row of n values into a block at the element indices `index(f)`; returns its int8 scale.
  template <class Index>
  static float store(StorageType type, const float* row, int n, unsigned char* block, Index&& index) {
    if (type == StorageType::i8) {
      std::vector<std::int8_t> q(n);
      const float scale = storage::quantise_q8(row, n, q.data());
      for (int f = 0; f < n; ++f) reinterpret_cast<std::int8_t*>(block)[index(f)] = q[f];
      return scale;
    }
    for (int f = 0; f < n; ++f) {
      if (type == StorageType::f32) reinterpret_cast<float*>(block)[index(f)] = row[f];
      else reinterpret_cast<std::uint16_t*>(block)[index(f)] = storage::narrow16(row[f], type);
    }
    return 0.0f;
  }
};

// Q [B, L, H, dk], K [B, S, H_kv, dk] and V [B, S, H_kv, dv] as the core's projections lay them
// out, through the kernel and the reference; with `with_weights`, the probabilities too. A narrow
// `kv` type reads K and V from a cache of that type (NarrowCache), and the reference its stored
// values.
void check_attention(const FlashCase& c, bool with_weights, StorageType kv) {
  const kernel_reference::AttentionShape s{c.batch, c.heads, c.kv_heads, c.L, c.S, c.dk, c.dv,
                                           c.causal, c.query_offset, c.window};
  const auto q = uniform(static_cast<std::size_t>(c.batch) * c.L * c.heads * c.dk, 11, c.amplitude);
  auto k = uniform(static_cast<std::size_t>(c.batch) * c.S * c.kv_heads * c.dk, 12, c.amplitude);
  auto v = uniform(static_cast<std::size_t>(c.batch) * c.S * c.kv_heads * c.dv, 13, c.amplitude);
  for (const auto& [keys, value] : {std::pair{c.nan_keys, NAN}, std::pair{c.inf_keys, INFINITY}}) {
    poison_keys(k, c.batch, c.S, c.kv_heads * c.dk, keys, value);
    poison_keys(v, c.batch, c.S, c.kv_heads * c.dv, keys, value);
  }
  const auto padding = key_padding_mask(c.key_padding, c.batch, c.S);
  const auto mask = attn_mask(c.attn_mask, c.batch, c.heads, c.L, c.S, c.masked_rows);

  AttentionProblem p;
  p.batch = c.batch;
  p.heads = c.heads;
  p.kv_group = c.heads / c.kv_heads;
  p.L = c.L;
  p.S = c.S;
  p.dk = c.dk;
  p.dv = c.dv;
  p.q = {q.data(), static_cast<std::ptrdiff_t>(c.L) * c.heads * c.dk, c.dk, c.heads * c.dk};
  p.k = {k.data(), static_cast<std::ptrdiff_t>(c.S) * c.kv_heads * c.dk, c.dk, c.kv_heads * c.dk};
  p.v = {v.data(), static_cast<std::ptrdiff_t>(c.S) * c.kv_heads * c.dv, c.dv, c.kv_heads * c.dv};
  std::vector<float> out(static_cast<std::size_t>(c.batch) * c.L * c.heads * c.dv, NAN);
  p.out = out.data();
  p.out_batch_stride = static_cast<std::ptrdiff_t>(c.L) * c.heads * c.dv;
  p.out_head_stride = c.dv;
  p.out_row_stride = c.heads * c.dv;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.dk)));
  p.causal = c.causal;
  p.positions.query0 = c.query_offset;
  p.positions.window = c.window;
  p.masks[0] = view(padding, c.S, 0, 0);
  p.masks[1] = view(mask, static_cast<std::ptrdiff_t>(c.heads) * c.L * c.S, static_cast<std::ptrdiff_t>(c.L) * c.S, c.S);
  std::vector<float> weights(with_weights ? static_cast<std::size_t>(c.batch) * c.heads * c.L * c.S : 0, NAN);
  p.weights = with_weights ? weights.data() : nullptr;
  const NarrowCache cache(c, kv, k, v);
  if (kv != StorageType::f32) p.cache = cache.packed;
  run_units(p);

  std::vector<double> expected_weights;
  const auto expected = kernel_reference::attention(s, q, stored_rows(k, c.dk, kv), stored_rows(v, c.dv, kv), padding, mask, &expected_weights);
  EXPECT_TRUE(matches_reference(out.data(), expected)) << "output";
  if (with_weights) {
    EXPECT_TRUE(matches_reference(weights.data(), expected_weights)) << "weights";
  }
}

KERNEL_CASES(FlashCases, FlashCase, kFlashCases);

TEST_P(FlashCases, MatchesReference) {
  const auto& c = kase();
  check_attention(c, false, kv_type(types()));
}

TEST_P(FlashCases, WithWeightsMatchesReference) {
  const auto& c = kase();
  check_attention(c, true, kv_type(types()));
}

KERNEL_CASES(DecodeCases, DecodeCase, kDecodeCases);

// One new row per query head at the last position of `length` keys: the flash kernel's one-row
// loops (row_scores, row_pv) with one query head per K/V head, its 4-row block with a GQA group.
TEST_P(DecodeCases, MatchesReference) {
  const auto& c = kase();
  FlashCase step{};
  step.name = c.name;
  step.batch = c.batch;
  step.heads = c.heads;
  step.kv_heads = c.kv_heads;
  step.L = 1;
  step.S = c.length;
  step.dk = c.dk;
  step.dv = c.dv;
  step.causal = true;
  step.query_offset = c.length - 1;
  step.window = c.window;
  step.key_padding = step.attn_mask = "none";
  step.amplitude = 1.0;
  step.nan_keys = c.nan_keys;
  step.inf_keys = c.inf_keys;
  check_attention(step, false, kv_type(types()));
}

// ---- rotary -----------------------------------------------------------------------------------

KERNEL_CASES(RotaryCases, RotaryCase, kRotaryCases);

// The rotary positions of a case's rows: its given positions of rows position0 … (the kernel's
// position ids), or none (the kernel's rows then follow position0).
std::vector<std::int32_t> given_positions(const RotaryCase& c) {
  if (c.positions.empty()) return {};
  return std::vector<std::int32_t>(c.positions.begin() + c.position0, c.positions.end());
}

// Q (heads wide) and K (one head) rotated in one call, as the core rotates them.
TEST_P(RotaryCases, MatchesReference) {
  const auto& c = kase();
  const int widths[2] = {c.heads * c.head_dim, c.head_dim};
  std::vector<float> x[2] = {uniform(static_cast<std::size_t>(c.rows) * widths[0], 21),
                             uniform(static_cast<std::size_t>(c.rows) * widths[1], 22)};
  const std::vector<float> before[2] = {x[0], x[1]};
  std::vector<double> frequencies;
  for (int j = 0; j < c.rotary_dim / 2; ++j) frequencies.push_back(std::pow(c.base, -2.0 * j / c.rotary_dim));
  const RotarySpec spec{c.head_dim, c.rotary_dim, c.interleaved, &frequencies};
  const RotaryRows rows[2] = {{x[0].data(), c.rows, widths[0]}, {x[1].data(), c.rows, widths[1]}};
  std::vector<float> table(c.rotary_dim);
  const std::vector<std::int32_t> ids = given_positions(c);
  apply_rotary(rows, 2, 1, c.position0, ids.empty() ? nullptr : ids.data(), spec, table.data());
  std::vector<std::int64_t> positions(ids.begin(), ids.end());
  for (int i = 0; ids.empty() && i < c.rows; ++i) positions.push_back(std::int64_t{c.position0} + i);
  for (int t = 0; t < 2; ++t) {
    EXPECT_TRUE(matches_reference(x[t].data(), kernel_reference::rotary(before[t], widths[t] / c.head_dim, c.head_dim,
                                                                        c.rotary_dim, c.interleaved, c.base, positions)))
        << (t ? "K" : "Q");
  }
}

}  // namespace
}  // namespace webattention::cases
