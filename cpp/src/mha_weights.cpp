// MultiHeadAttention's weights: state-dict entries packed for the projection kernel as they are
// loaded, and the per-head-range slices of them that forward_heads() runs on.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "head_slice.h"
#include "kernels/kernels.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

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

}  // namespace

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
  } else if (name == "q_proj_bias") {
    wq_->set_bias(data, qk_width_);
  } else if (name == "k_proj_bias") {
    wk_->set_bias(data, k_width_);
  } else if (name == "v_proj_bias") {
    wv_->set_bias(data, kv_width_);
  } else if (name == "out_proj.weight") {
    set_weights(*wo_, data, E, v_width_);
  } else if (name == "out_proj.bias") {
    wo_->set_bias(data, E);
  } else if (name == "sinks") {
    sinks_.assign(data, data + count);
  } else if (name == "q_norm.weight") {
    q_norm_.assign(data, data + count);
  } else if (name == "k_norm.weight") {
    k_norm_.assign(data, data + count);
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

void MultiHeadAttention::require_loaded() const {
  const std::vector<std::string> missing = missing_parameters();
  if (!missing.empty()) {
    throw StateDictError(missing.front(), "state dict: '" + missing.front() +
                                              "' was not loaded (call loadStateDict() first)");
  }
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

}  // namespace webattention
