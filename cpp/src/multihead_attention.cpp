// Multi-head attention: project, attend per head on strided views of the projections, project out.
#include "webattention/multihead_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/kernels.h"
#include "webattention/attention.h"
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

}  // namespace

std::size_t ParameterSpec::size() const {
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1},
                         [](std::size_t a, int b) { return a * static_cast<std::size_t>(b); });
}

MultiHeadAttention::MultiHeadAttention(const MhaConfig& config) : config_(config) {
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

  qk_width_ = c.num_heads * c.head_dim;
  v_width_ = c.num_heads * c.value_head_dim;
  const int E = c.embed_dim;
  // PyTorch packs the input projections only when every width equals embed_dim.
  const bool packed = c.kdim == E && c.vdim == E && qk_width_ == E && v_width_ == E;
  if (packed) {
    specs_.push_back({"in_proj_weight", {3 * E, E}});
  } else {
    specs_.push_back({"q_proj_weight", {qk_width_, E}});
    specs_.push_back({"k_proj_weight", {qk_width_, c.kdim}});
    specs_.push_back({"v_proj_weight", {v_width_, c.vdim}});
  }
  if (c.bias) specs_.push_back({"in_proj_bias", {2 * qk_width_ + v_width_}});
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
    set_weights(*wk_, data, qk_width_, c.kdim);
  } else if (name == "v_proj_weight") {
    set_weights(*wv_, data, v_width_, c.vdim);
  } else if (name == "in_proj_bias") {
    wq_->bias.assign(data, data + qk_width_);
    wk_->bias.assign(data + qk_width_, data + 2 * qk_width_);
    wv_->bias.assign(data + 2 * qk_width_, data + 2 * qk_width_ + v_width_);
  } else if (name == "out_proj.weight") {
    set_weights(*wo_, data, E, v_width_);
  } else if (name == "out_proj.bias") {
    wo_->bias.assign(data, data + E);
  }
  loaded_[static_cast<std::size_t>(it - specs_.begin())] = true;
}

std::vector<std::string> MultiHeadAttention::missing_parameters() const {
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < specs_.size(); ++i)
    if (!loaded_[i]) missing.push_back(specs_[i].name);
  return missing;
}

std::size_t MultiHeadAttention::scratch_floats(int batch, int L, int S) const {
  const std::size_t B = static_cast<std::size_t>(batch);
  // projected Q [B, L, h·dk], K [B, S, h·dk], V [B, S, h·dv], heads [B, L, h·dv]
  return B * (static_cast<std::size_t>(L) * qk_width_ + static_cast<std::size_t>(S) * qk_width_ +
              static_cast<std::size_t>(S) * v_width_ + static_cast<std::size_t>(L) * v_width_);
}

void MultiHeadAttention::forward(const MhaForwardArgs& a) const {
  const auto missing = missing_parameters();
  if (!missing.empty()) {
    throw StateDictError(missing.front(), "state dict: '" + missing.front() +
                                              "' was not loaded (call load_state_dict first)");
  }
  for (auto [name, value] : {std::pair{"batch", a.batch}, {"L", a.L}, {"S", a.S}}) {
    if (value < 1) {
      throw ShapeError(name, std::string(name) + ": expected a size >= 1, got " +
                                 std::to_string(value));
    }
  }
  const MhaConfig& c = config_;
  const int B = a.batch, L = a.L, S = a.S, H = c.num_heads;

  AttentionProblem p;
  p.masks[0] = key_padding_view(a.key_padding_mask, B, S, "key_padding_mask");
  p.masks[1] = attn_mask_view(a.attn_mask, B, H, L, S, "attn_mask");

  scratch_.resize(scratch_floats(B, L, S));
  float* q = scratch_.data();
  float* k = q + static_cast<std::size_t>(B) * L * qk_width_;
  float* v = k + static_cast<std::size_t>(B) * S * qk_width_;
  float* heads = v + static_cast<std::size_t>(B) * S * v_width_;
  // Projections. Inputs that are the same tensor are read once for all their projections.
  using kernels::LinearTarget;
  const LinearTarget tq{wq_.get(), q, qk_width_}, tk{wk_.get(), k, qk_width_},
      tv{wv_.get(), v, v_width_};
  const bool self = a.query == a.key && a.key == a.value && c.kdim == c.embed_dim &&
                    c.vdim == c.embed_dim;
  const bool shared_kv = a.key == a.value && c.kdim == c.vdim;
  if (self) {
    const LinearTarget all[] = {tq, tk, tv};
    kernels::linear(a.query, B * L, c.embed_dim, all, 3);
  } else {
    kernels::linear(a.query, B * L, c.embed_dim, &tq, 1);
    if (shared_kv) {
      const LinearTarget kv[] = {tk, tv};
      kernels::linear(a.key, B * S, c.kdim, kv, 2);
    } else {
      kernels::linear(a.key, B * S, c.kdim, &tk, 1);
      kernels::linear(a.value, B * S, c.vdim, &tv, 1);
    }
  }

  p.batch = B;
  p.heads = H;
  p.L = L;
  p.S = S;
  p.dk = c.head_dim;
  p.dv = c.value_head_dim;
  p.q = {q, static_cast<std::ptrdiff_t>(L) * qk_width_, c.head_dim, qk_width_};
  p.k = {k, static_cast<std::ptrdiff_t>(S) * qk_width_, c.head_dim, qk_width_};
  p.v = {v, static_cast<std::ptrdiff_t>(S) * v_width_, c.value_head_dim, v_width_};
  p.out = heads;
  p.out_batch_stride = static_cast<std::ptrdiff_t>(L) * v_width_;
  p.out_head_stride = c.value_head_dim;
  p.out_row_stride = v_width_;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  p.causal = a.causal;
  p.weights = a.weights;
  p.average_weights = a.average_weights;
  run_attention(p);

  const LinearTarget to{wo_.get(), a.output, c.embed_dim};
  kernels::linear(heads, B * L, v_width_, &to, 1);
}

}  // namespace webattention
