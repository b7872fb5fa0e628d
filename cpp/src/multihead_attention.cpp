// Multi-head attention: project, attend per head on strided views of the projections, project out.
#include "webattention/multihead_attention.h"

#include <algorithm>
#include <cstdint>
#include <atomic>
#include <cmath>
#include <numeric>

#include "attention_problem.h"
#include "checks.h"
#include "kernels/kernels.h"
#include "projection.h"
#include "rotary.h"
#include "webattention/errors.h"

namespace webattention {
namespace {

void require(bool ok, const char* argument, const std::string& message) {
  if (!ok) throw ConfigError(argument, std::string(argument) + ": " + message);
}

// Packs new weights into `w`, keeping a bias loaded earlier.
void set_weights(kernels::PackedLinear& w, const float* data, int out, int in) {
  std::vector<float> bias = std::move(w.bias);
  w = kernels::pack_linear(data, out, in);
  w.bias = std::move(bias);
}

// Output columns [begin, end) of a packed layer (rows [begin, end) of PyTorch's [out, in]
// weight), packed on their own: the projection kernel then runs over those columns only.
kernels::PackedLinear slice_columns(const kernels::PackedLinear& w, int begin, int end) {
  const int cols = end - begin;
  std::vector<float> rows(static_cast<std::size_t>(cols) * w.in);
  for (int n = 0; n < cols; ++n)
    for (int k = 0; k < w.in; ++k) rows[static_cast<std::size_t>(n) * w.in + k] = w.weight(begin + n, k);
  kernels::PackedLinear s = kernels::pack_linear(rows.data(), cols, w.in);
  if (!w.bias.empty()) s.set_bias(w.bias.data() + begin, cols);
  return s;
}

void require_loaded(const std::vector<std::string>& missing) {
  if (!missing.empty()) {
    throw StateDictError(missing.front(), "state dict: '" + missing.front() +
                                              "' was not loaded (call loadStateDict() first)");
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

struct MultiHeadAttention::HeadSlice {
  int begin = 0, end = 0;
  kernels::PackedLinear q, k, v;
};

std::size_t ParameterSpec::size() const {
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1},
                         [](std::size_t a, int b) { return a * static_cast<std::size_t>(b); });
}

MultiHeadAttention::MultiHeadAttention(const MhaConfig& config) : config_(config) {
  static std::atomic<std::uint64_t> next_id{1};
  id_ = next_id++;
  MhaConfig& c = config_;
  require(c.embed_dim >= 1, "embed_dim", "expected an integer >= 1, got " +
                                             std::to_string(c.embed_dim));
  require(c.num_heads >= 1, "num_heads", "expected an integer >= 1, got " +
                                             std::to_string(c.num_heads));
  if (c.kdim == 0) c.kdim = c.embed_dim;
  if (c.vdim == 0) c.vdim = c.embed_dim;
  require(c.kdim >= 1, "kdim", "expected an integer >= 1, got " + std::to_string(c.kdim));
  require(c.vdim >= 1, "vdim", "expected an integer >= 1, got " + std::to_string(c.vdim));
  const bool default_dims = c.head_dim == 0 || c.value_head_dim == 0;
  if (default_dims) {
    require(c.embed_dim % c.num_heads == 0, "embed_dim",
            "expected a multiple of num_heads (" + std::to_string(c.num_heads) + "), got " +
                std::to_string(c.embed_dim));
  }
  if (c.head_dim == 0) c.head_dim = c.embed_dim / c.num_heads;
  if (c.value_head_dim == 0) c.value_head_dim = c.embed_dim / c.num_heads;
  require(c.head_dim >= 1, "head_dim", "expected an integer >= 1, got " +
                                           std::to_string(c.head_dim));
  require(c.value_head_dim >= 1, "value_head_dim",
          "expected an integer >= 1, got " + std::to_string(c.value_head_dim));
  if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
  require(c.num_kv_heads >= 1 && c.num_kv_heads <= c.num_heads && c.num_heads % c.num_kv_heads == 0,
          "num_kv_heads", "expected a divisor of num_heads (" + std::to_string(c.num_heads) +
                              "), got " + std::to_string(c.num_kv_heads));
  require(c.rotary_dim >= 0 && c.rotary_dim % 2 == 0 && c.rotary_dim <= c.head_dim, "rotary_dim",
          "expected an even integer in [0, head_dim = " + std::to_string(c.head_dim) + "], got " +
              std::to_string(c.rotary_dim));
  require(std::isfinite(c.rotary_base) && c.rotary_base > 0.0, "rotary_base",
          "expected a finite number > 0, got " + std::to_string(c.rotary_base));

  // Widths and weight counts in 64 bits first: int products of huge options would overflow.
  const std::int64_t H = c.num_heads, Hkv = c.num_kv_heads, E64 = c.embed_dim;
  const std::int64_t qk = H * c.head_dim, vw = H * c.value_head_dim;
  const std::int64_t kw = Hkv * c.head_dim, kvw = Hkv * c.value_head_dim;
  require_addressable("embed_dim", "a projection's weights",
                      std::max({qk * E64, kw * c.kdim, kvw * c.vdim, vw * E64, 3 * E64 * E64}));
  require_addressable("embed_dim", "the weights", qk * E64 + kw * c.kdim + kvw * c.vdim + vw * E64 + qk + kw + kvw + E64);
  qk_width_ = static_cast<int>(qk);
  v_width_ = static_cast<int>(vw);
  k_width_ = static_cast<int>(kw);
  kv_width_ = static_cast<int>(kvw);
  kv_group_ = c.num_heads / c.num_kv_heads;
  for (int j = 0; j < c.rotary_dim / 2; ++j)
    rotary_frequencies_.push_back(std::pow(c.rotary_base, -2.0 * j / c.rotary_dim));
  rotary_table_.resize(c.rotary_dim);
  const int E = c.embed_dim;
  // PyTorch packs the input projections only when every width equals embed_dim.
  const bool packed = c.kdim == E && c.vdim == E && qk_width_ == E && v_width_ == E && kv_group_ == 1;
  if (packed) {
    specs_.push_back({"in_proj_weight", {3 * E, E}});
  } else {
    specs_.push_back({"q_proj_weight", {qk_width_, E}});
    specs_.push_back({"k_proj_weight", {k_width_, c.kdim}});
    specs_.push_back({"v_proj_weight", {kv_width_, c.vdim}});
  }
  if (c.bias) specs_.push_back({"in_proj_bias", {qk_width_ + k_width_ + kv_width_}});
  specs_.push_back({"out_proj.weight", {E, v_width_}});
  if (c.bias) specs_.push_back({"out_proj.bias", {E}});
  loaded_.assign(specs_.size(), false);
  wq_ = std::make_unique<kernels::PackedLinear>();
  wk_ = std::make_unique<kernels::PackedLinear>();
  wv_ = std::make_unique<kernels::PackedLinear>();
  wo_ = std::make_unique<kernels::PackedLinear>();
}

MultiHeadAttention::~MultiHeadAttention() = default;
MultiHeadAttention::MultiHeadAttention(MultiHeadAttention&&) noexcept = default;
MultiHeadAttention& MultiHeadAttention::operator=(MultiHeadAttention&&) noexcept = default;

void MultiHeadAttention::load_parameter(const std::string& name, const float* data,
                                        std::size_t count) {
  auto it = std::find_if(specs_.begin(), specs_.end(),
                         [&](const ParameterSpec& s) { return s.name == name; });
  if (it == specs_.end()) {
    std::string expected;
    for (const auto& s : specs_) expected += (expected.empty() ? "" : ", ") + s.name;
    throw StateDictError(name, "state dict: unexpected key '" + name + "'; expected keys: " +
                                   expected);
  }
  if (count != it->size()) {
    throw StateDictError(name, "state dict '" + name + "': expected " +
                                   format_shape(it->shape) + " (" + std::to_string(it->size()) +
                                   " values), got " + std::to_string(count) + " values");
  }
  const MhaConfig& c = config_;
  const int E = c.embed_dim;
  const std::size_t qk_block = static_cast<std::size_t>(qk_width_) * E;
  if (name == "in_proj_weight") {
    set_weights(*wq_, data, qk_width_, E);
    set_weights(*wk_, data + qk_block, qk_width_, E);
    set_weights(*wv_, data + 2 * qk_block, v_width_, E);
  } else if (name == "q_proj_weight") {
    set_weights(*wq_, data, qk_width_, E);
  } else if (name == "k_proj_weight") {
    set_weights(*wk_, data, k_width_, c.kdim);
  } else if (name == "v_proj_weight") {
    set_weights(*wv_, data, kv_width_, c.vdim);
  } else if (name == "in_proj_bias") {
    wq_->set_bias(data, qk_width_);
    wk_->set_bias(data + qk_width_, k_width_);
    wv_->set_bias(data + qk_width_ + k_width_, kv_width_);
  } else if (name == "out_proj.weight") {
    set_weights(*wo_, data, E, v_width_);
  } else if (name == "out_proj.bias") {
    wo_->set_bias(data, E);
  }
  loaded_[static_cast<std::size_t>(it - specs_.begin())] = true;
  slices_.clear();
}

std::vector<std::string> MultiHeadAttention::missing_parameters() const {
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < specs_.size(); ++i)
    if (!loaded_[i]) missing.push_back(specs_[i].name);
  return missing;
}

std::size_t MultiHeadAttention::scratch_floats(int batch, int L, int S) const {
  const std::size_t B = static_cast<std::size_t>(batch);
  // projected Q [B, L, h·dk], K [B, S, h_kv·dk], V [B, S, h_kv·dv], heads [B, L, h·dv]
  return B * (static_cast<std::size_t>(L) * qk_width_ + static_cast<std::size_t>(S) * k_width_ +
              static_cast<std::size_t>(S) * kv_width_ + static_cast<std::size_t>(L) * v_width_);
}

void MultiHeadAttention::check_forward(const MhaForwardArgs& a) const {
  require_loaded(missing_parameters());
  require_positive("batch", a.batch);
  require_positive("L", a.L);
  require_positive("S", a.S);
  // The scratch of projected Q, K, V and heads, counted in 64 bits before scratch_floats() does.
  const std::int64_t B = a.batch, L = a.L, S = a.S;
  require_addressable("query", "the projections' scratch",
                      B * (L * qk_width_ + S * (k_width_ + std::int64_t{kv_width_}) + L * v_width_));
  require_addressable("query", "the rows", std::max(B * L * config_.embed_dim, B * S * std::int64_t{std::max(config_.kdim, config_.vdim)}));
}

const MultiHeadAttention::HeadSlice& MultiHeadAttention::head_slice(int head_begin,
                                                                    int head_end) const {
  for (const auto& s : slices_)
    if (s->begin == head_begin && s->end == head_end) return *s;
  // A worker keeps to one or two head ranges; bound the cache all the same.
  constexpr std::size_t kMaxSlices = 8;
  if (slices_.size() == kMaxSlices) slices_.erase(slices_.begin());
  const MhaConfig& c = config_;
  const int kv_begin = head_begin / kv_group_, kv_end = head_end / kv_group_;
  auto s = std::make_unique<HeadSlice>();
  s->begin = head_begin;
  s->end = head_end;
  s->q = slice_columns(*wq_, head_begin * c.head_dim, head_end * c.head_dim);
  s->k = slice_columns(*wk_, kv_begin * c.head_dim, kv_end * c.head_dim);
  s->v = slice_columns(*wv_, kv_begin * c.value_head_dim, kv_end * c.value_head_dim);
  slices_.push_back(std::move(s));
  return *slices_.back();
}

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
  const bool shared_kv = a.key == a.value && c.kdim == c.vdim;
  if (self) {
    const LinearTarget all[] = {tq, tk, tv};
    project(a.query, B * L, c.embed_dim, all, 3);
  } else {
    project(a.query, B * L, c.embed_dim, &tq, 1);
    if (shared_kv) {
      const LinearTarget kv[] = {tk, tv};
      project(a.key, B * S, c.kdim, kv, 2);
    } else {
      project(a.key, B * S, c.kdim, &tk, 1);
      project(a.value, B * S, c.vdim, &tv, 1);
    }
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
  rotate(x, B, L, S, 0);

  AttentionProblem p = head_problem(B, x.heads, L, S, x.q, static_cast<std::ptrdiff_t>(L) * x.q_width,
                                    x.q_width, heads_out,
                                    static_cast<std::ptrdiff_t>(L) * x.heads * c.value_head_dim);
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
  if (head_begin == 0 && head_end == H) {
    attend(a, 0, H, *wq_, *wk_, *wv_, heads_out);
    return;
  }
  const HeadSlice& s = head_slice(head_begin, head_end);
  attend(a, head_begin, head_end, s.q, s.k, s.v, heads_out);
}

void MultiHeadAttention::project_output(const float* heads, int rows, float* out) const {
  require_loaded(missing_parameters());
  require_positive("rows", rows);
  const kernels::LinearTarget to{wo_.get(), out, config_.embed_dim};
  project(heads, rows, v_width_, &to, 1);
}

}  // namespace webattention

namespace webattention {

void MultiHeadAttention::rotate(const Projected& x, int batch, int L, int S,
                                std::int64_t first_position) const {
  const MhaConfig& c = config_;
  if (c.rotary_dim == 0) return;
  const RotaryRows rows[] = {{x.q, L, x.q_width}, {x.k, S, x.k_width}};
  apply_rotary(rows, 2, batch, first_position,
               {c.head_dim, c.rotary_dim, c.rotary_interleaved, &rotary_frequencies_},
               rotary_table_.data());
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
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return p;
}

}  // namespace webattention
