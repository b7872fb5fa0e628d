// MultiHeadAttention's weights: state-dict entries packed for the projection kernel as they are
// loaded, and the per-head-range slices of them that forward_heads() runs on.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "head_slice.h"
#include "kernels/kernels.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

// Where entry values are read: `count` elements of `source` type at `data`.
struct EntryData {
  const void* data;
  StorageType source;
  const void* at(std::size_t offset) const {
    return static_cast<const unsigned char*>(data) + offset * storage_element_bytes(source);
  }
};

// Packs new weights [out, in] into `w` in the module's storage type, keeping a bias loaded earlier.
void set_weights(kernels::PackedLinear& w, const EntryData& d, std::size_t offset, int out, int in,
                 StorageType storage) {
  std::vector<float> bias = std::move(w.bias);
  w = kernels::pack_linear(d.at(offset), d.source, out, in, storage);
  w.bias = std::move(bias);
}

// n values from offset, widened to f32 (biases, sinks and norm weights are always f32).
std::vector<float> widened(const EntryData& d, std::size_t offset, std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = storage::widen(d.data, d.source, offset + i);
  return values;
}

// A bias of n values from offset.
void set_bias(kernels::PackedLinear& w, const EntryData& d, std::size_t offset, int n) {
  const std::vector<float> values = widened(d, offset, static_cast<std::size_t>(n));
  w.set_bias(values.data(), n);
}

// int8 storage quantises blocks of 32 values by their largest magnitude, which a NaN or an
// infinity would make meaningless: refused, naming the first one's row and block.
void require_finite(const std::string& name, const EntryData& d, const std::vector<int>& shape) {
  const std::size_t cols = shape.size() > 1 ? static_cast<std::size_t>(shape[1]) : 1;
  const std::size_t count = static_cast<std::size_t>(shape[0]) * cols;
  for (std::size_t i = 0; i < count; ++i) {
    const float x = storage::widen(d.data, d.source, i);
    if (std::isfinite(x)) continue;
    const std::size_t row = i / cols, col = i % cols;
    throw StateDictError(name, "state dict '" + name + "': int8 weights must be finite, got " +
                                   std::to_string(x) + " at [" + std::to_string(row) + ", " +
                                   std::to_string(col) + "] (block " +
                                   std::to_string(col / storage::kQuantBlock) + " of row " +
                                   std::to_string(row) + ")");
  }
}

}  // namespace

void MultiHeadAttention::load_parameter(const std::string& name, const float* data,
                                        std::size_t count) {
  load_parameter(name, data, count, StorageType::f32);
}

void MultiHeadAttention::load_parameter(const std::string& name, const void* data,
                                        std::size_t count, StorageType source) {
  if (source == StorageType::i8) {
    throw ConfigError("source_dtype", "source_dtype: expected 'float32', 'float16' or 'bfloat16', got 'int8'");
  }
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
  const EntryData d{data, source};
  const StorageType st = config_.weights_dtype;
  const bool is_bias = it->shape.size() == 1;
  if (st == StorageType::i8 && !is_bias) require_finite(name, d, it->shape);
  const MhaConfig& c = config_;
  const int E = c.embed_dim;
  const std::size_t qk_block = static_cast<std::size_t>(qk_width_) * E;
  if (name == "in_proj_weight") {
    set_weights(*wq_, d, 0, qk_width_, E, st);
    set_weights(*wk_, d, qk_block, qk_width_, E, st);
    set_weights(*wv_, d, 2 * qk_block, v_width_, E, st);
  } else if (name == "q_proj_weight") {
    set_weights(*wq_, d, 0, qk_width_, E, st);
  } else if (name == "k_proj_weight") {
    set_weights(*wk_, d, 0, k_width_, c.kdim, st);
  } else if (name == "v_proj_weight") {
    set_weights(*wv_, d, 0, kv_width_, c.vdim, st);
  } else if (name == "in_proj_bias") {
    set_bias(*wq_, d, 0, qk_width_);
    set_bias(*wk_, d, qk_width_, k_width_);
    set_bias(*wv_, d, qk_width_ + k_width_, kv_width_);
  } else if (name == "q_proj_bias") {
    set_bias(*wq_, d, 0, qk_width_);
  } else if (name == "k_proj_bias") {
    set_bias(*wk_, d, 0, k_width_);
  } else if (name == "v_proj_bias") {
    set_bias(*wv_, d, 0, kv_width_);
  } else if (name == "out_proj.weight") {
    set_weights(*wo_, d, 0, E, v_width_, st);
  } else if (name == "out_proj.bias") {
    set_bias(*wo_, d, 0, E);
  } else if (name == "sinks") {
    sinks_ = widened(d, 0, count);
  } else if (name == "q_norm.weight") {
    q_norm_ = widened(d, 0, count);
  } else if (name == "k_norm.weight") {
    k_norm_ = widened(d, 0, count);
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
  s->q = kernels::slice_columns(*wq_, head_begin * c.head_dim, head_end * c.head_dim);
  s->k = kernels::slice_columns(*wk_, kv_begin * c.head_dim, kv_end * c.head_dim);
  s->v = kernels::slice_columns(*wv_, kv_begin * c.value_head_dim, kv_end * c.value_head_dim);
  slices_.push_back(std::move(s));
  return *slices_.back();
}

}  // namespace webattention
