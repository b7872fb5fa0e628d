// MultiHeadAttention's forward without a cache: project, attend per head on strided views of the
// projections, project out (mha_cached_forward.cpp has the forward over a KV cache).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/attention_problem.h"
#include "mask_checks.h"
#include "checks.h"
#include "head_slice.h"
#include "kernels/kernels.h"
#include "projection.h"
#include "rotary.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

// RMSNorm of every head of `count` rows of `width` floats (heads of head_dim side by side):
// x <- x / sqrt(mean(x²) + eps) · w, the sum of squares in double. An all-zero head stays zero.
void rms_norm_heads(float* rows, std::size_t count, int width, int head_dim, const float* w, double eps) {
  for (std::size_t r = 0; r < count; ++r) {
    for (int h0 = 0; h0 < width; h0 += head_dim) {
      float* x = rows + r * width + h0;
      double squares = 0.0;
      for (int c = 0; c < head_dim; ++c) squares += static_cast<double>(x[c]) * x[c];
      const float inv = static_cast<float>(1.0 / std::sqrt(squares / head_dim + eps));
      for (int c = 0; c < head_dim; ++c) x[c] = x[c] * inv * w[c];
    }
  }
}

// A mask view moved to head `head`: per-head masks then index heads from 0.
MaskView from_head(MaskView m, int head) {
  if (m.empty() || m.head_stride == 0) return m;
  const std::size_t element = m.kind == MaskKind::kBoolean ? 1 : sizeof(float);
  m.data = static_cast<const char*>(m.data) + static_cast<std::size_t>(head) * m.head_stride * element;
  return m;
}

}  // namespace

// Projects the inputs of heads [head_begin, head_end) with weights wq, wk, wv packed for exactly
// those heads' columns (and their K/V heads'), into the front of scratch_. Not rotated yet.
MultiHeadAttention::Projected MultiHeadAttention::project_inputs(
    const MhaForwardArgs& a, int head_begin, int head_end, const kernels::PackedLinear& wq,
    const kernels::PackedLinear& wk, const kernels::PackedLinear& wv) const {
  const MhaConfig& c = config_;
  const int B = a.batch, L = a.L, S = a.S;
  Projected p;
  p.heads = head_end - head_begin;
  const int kv_heads = p.heads / kv_group_;
  p.q_width = p.heads * c.head_dim;
  p.k_width = kv_heads * c.head_dim;
  p.v_width = kv_heads * c.value_head_dim;
  const std::size_t q_floats = static_cast<std::size_t>(B) * L * p.q_width;
  const std::size_t k_floats = static_cast<std::size_t>(B) * S * p.k_width;
  const std::size_t v_floats = static_cast<std::size_t>(B) * S * p.v_width;
  if (scratch_.size() < q_floats + k_floats + v_floats) scratch_.resize(q_floats + k_floats + v_floats);
  p.q = scratch_.data();
  p.k = p.q + q_floats;
  p.v = p.k + k_floats;
  // Inputs that are the same tensor are read once for all their projections.
  using kernels::LinearTarget;
  const LinearTarget tq{&wq, p.q, p.q_width}, tk{&wk, p.k, p.k_width}, tv{&wv, p.v, p.v_width};
  const bool self = a.query == a.key && a.key == a.value && c.kdim == c.embed_dim &&
                    c.vdim == c.embed_dim && L == S;
  if (self) {
    const LinearTarget all[] = {tq, tk, tv};
    project(a.query, B * L, c.embed_dim, all, 3);
  } else {
    project(a.query, B * L, c.embed_dim, &tq, 1);
    project_keys_values(a.key, a.value, B * S, c.kdim, c.vdim, tk, tv);
  }
  return p;
}

// Attention of heads [head_begin, head_end) over projected inputs: no cache, positions from 0.
void MultiHeadAttention::attend(const MhaForwardArgs& a, int head_begin, int head_end,
                                const kernels::PackedLinear& wq, const kernels::PackedLinear& wk,
                                const kernels::PackedLinear& wv, float* heads_out) const {
  const MhaConfig& c = config_;
  const int B = a.batch, L = a.L, S = a.S, H = c.num_heads;
  const Projected x = project_inputs(a, head_begin, head_end, wq, wk, wv);
  rotate(x, B, L, S, 0, a.position_ids);

  AttentionProblem p = head_problem(B, x.heads, L, S, x.q, static_cast<std::ptrdiff_t>(L) * x.q_width,
                                    x.q_width, heads_out,
                                    static_cast<std::ptrdiff_t>(L) * x.heads * c.value_head_dim);
  if (p.sinks) p.sinks += head_begin;
  p.masks[0] = key_padding_view(a.key_padding_mask, B, S, "key_padding_mask");
  p.masks[1] = from_head(attn_mask_view(a.attn_mask, B, H, L, S, "attn_mask"), head_begin);
  p.k = {x.k, static_cast<std::ptrdiff_t>(S) * x.k_width, c.head_dim, x.k_width};
  p.v = {x.v, static_cast<std::ptrdiff_t>(S) * x.v_width, c.value_head_dim, x.v_width};
  p.causal = a.causal;
  p.weights = a.weights;
  p.average_weights = a.average_weights;
  p.averaged_heads = H;  // a head range writes its share of the module's average
  run_attention(p);
}

void MultiHeadAttention::forward(const MhaForwardArgs& a) const {
  check_forward(a);
  // The attention kernels' optimised code (kernels.h), asked for before the projections: compiled
  // while they run, ready for the attention after them.
  kernels::request_optimised_attention();
  // Scratch: the projections at the front (attend), the heads after them.
  const std::size_t heads_floats = static_cast<std::size_t>(a.batch) * a.L * v_width_;
  const std::size_t total = scratch_floats(a.batch, a.L, a.S);
  scratch_.resize(total);
  float* heads = scratch_.data() + (total - heads_floats);  // attend() will not resize scratch_
  attend(a, 0, config_.num_heads, *wq_, *wk_, *wv_, heads);
  project_output(heads, a.batch * a.L, a.output);
}

void MultiHeadAttention::forward_heads(const MhaForwardArgs& a, int head_begin, int head_end,
                                       float* heads_out) const {
  const int H = config_.num_heads;
  require_index("head_begin", head_begin, H);
  if (head_end <= head_begin || head_end > H) {
    throw ConfigError("head_end", "head_end: expected an integer in [" +
                                      std::to_string(head_begin + 1) + ", " + std::to_string(H) +
                                      "], got " + std::to_string(head_end));
  }
  // A K/V head's query heads run together (attention_problem.h): a range holds whole groups.
  if (head_begin % kv_group_ != 0 || head_end % kv_group_ != 0) {
    throw ConfigError("head_begin", "head_begin, head_end: expected multiples of num_heads / "
                                    "num_kv_heads = " + std::to_string(kv_group_) + ", got " +
                                    std::to_string(head_begin) + ", " + std::to_string(head_end));
  }
  check_forward(a);
  kernels::request_optimised_attention();  // as forward() does
  if (head_begin == 0 && head_end == H) {
    attend(a, 0, H, *wq_, *wk_, *wv_, heads_out);
    return;
  }
  const HeadSlice& s = head_slice(head_begin, head_end);
  attend(a, head_begin, head_end, s.q, s.k, s.v, heads_out);
}

void MultiHeadAttention::project_output(const float* heads, int rows, float* out) const {
  require_loaded();
  require_positive("rows", rows);
  const kernels::LinearTarget to{wo_.get(), out, config_.embed_dim};
  project(heads, rows, v_width_, &to, 1);
}

void MultiHeadAttention::rotate_rows(const Projected& x, int batch, int L, int S, std::int64_t first_position,
                                     const std::int32_t* position_ids) const {
  const MhaConfig& c = config_;
  if (c.qk_norm) {
    rms_norm_heads(x.q, static_cast<std::size_t>(batch) * L, x.q_width, c.head_dim, q_norm_.data(), c.qk_norm_eps);
    rms_norm_heads(x.k, static_cast<std::size_t>(batch) * S, x.k_width, c.head_dim, k_norm_.data(), c.qk_norm_eps);
  }
  if (c.rotary_dim == 0) return;
  const std::int64_t table_positions = static_cast<std::int64_t>(rotary_cos_.size()) / (c.rotary_dim / 2);
  if (!position_ids && !rotary_cos_.empty() && first_position + std::max(L, S) > table_positions) {
    throw ShapeError("rotary", "rotary table: positions up to " + std::to_string(first_position + std::max(L, S) - 1) +
                                   " are rotated, the table has rows for 0 … " + std::to_string(table_positions - 1));
  }
  const RotaryRows rows[] = {{x.q, L, x.q_width}, {x.k, S, x.k_width}};
  RotarySpec spec{c.head_dim, c.rotary_dim, c.rotary_interleaved, &rotary_frequencies_};
  if (!rotary_cos_.empty()) spec.table_cos = rotary_cos_.data(), spec.table_sin = rotary_sin_.data();
  apply_rotary(rows, 2, batch, first_position, position_ids, spec, rotary_table_.data());
}

AttentionProblem MultiHeadAttention::head_problem(int batch, int heads, int L, int S,
                                                  const float* q, std::ptrdiff_t q_batch,
                                                  int q_width, float* out,
                                                  std::ptrdiff_t out_batch) const {
  const MhaConfig& c = config_;
  AttentionProblem p;
  p.batch = batch;
  p.heads = heads;
  p.kv_group = kv_group_;
  p.L = L;
  p.S = S;
  p.dk = c.head_dim;
  p.dv = c.value_head_dim;
  p.q = {q, q_batch, c.head_dim, q_width};
  p.out = out;
  p.out_batch_stride = out_batch;
  p.out_head_stride = c.value_head_dim;
  p.out_row_stride = static_cast<std::ptrdiff_t>(heads) * c.value_head_dim;
  p.scale = c.scale ? static_cast<float>(*c.scale) : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  p.softcap = static_cast<float>(c.softcap);
  p.sinks = sinks_.empty() ? nullptr : sinks_.data();  // from head 0: attend() moves it to its range
  return p;
}

void MultiHeadAttention::set_rotary_table(const float* cos, const float* sin, int positions) {
  const int half = config_.rotary_dim / 2;
  if (half == 0) throw ConfigError("rotary", "rotary table: the module has no rotary embedding");
  if (positions < 1) throw ConfigError("rotary", "rotary table: expected >= 1 positions, got " + std::to_string(positions));
  const std::size_t n = static_cast<std::size_t>(positions) * half;
  rotary_cos_.assign(cos, cos + n);
  rotary_sin_.assign(sin, sin + n);
}

}  // namespace webattention
