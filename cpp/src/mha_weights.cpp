// MultiHeadAttention's weights: state-dict entries packed for the projection kernel as they are
// loaded, and the per-head-range slices of them that forward_heads() runs on.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "checks.h"
#include "head_slice.h"
#include "kernels/kernels.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"
#include "webattention/state_dict_entries.h"

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

// New packed weights into `w`, keeping a bias loaded earlier (entries come in any order), and
// multiplied by int8 activations where the config says so: every way of loading weights (values,
// quantised blocks, in place) comes through here.
void replace_weights(kernels::PackedLinear& w, kernels::PackedLinear packed, const MhaConfig& config) {
  packed.bias = std::move(w.bias);
  if (config.activations == StorageType::i8) kernels::use_int8_activations(packed);
  w = std::move(packed);
}

// Packs new weights [out, in] into `w` in the module's storage type.
void set_weights(kernels::PackedLinear& w, const EntryData& d, std::size_t offset, int out, int in,
                 const MhaConfig& config) {
  replace_weights(w, kernels::pack_linear(d.at(offset), d.source, out, in, config.weights_dtype), config);
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

// int8 and int4 storage quantise blocks of 32 values by their largest magnitude, which a NaN or
// an infinity would make meaningless: refused, naming the first one's row and block.
void require_finite(const std::string& name, const EntryData& d, const std::vector<int>& shape, StorageType storage) {
  const std::size_t cols = shape.size() > 1 ? static_cast<std::size_t>(shape[1]) : 1;
  const std::size_t count = static_cast<std::size_t>(shape[0]) * cols;
  for (std::size_t i = 0; i < count; ++i) {
    const float x = storage::widen(d.data, d.source, i);
    if (std::isfinite(x)) continue;
    const std::size_t row = i / cols, col = i % cols;
    throw StateDictError(name, "state dict '" + name + "': " + storage_type_name(storage) + " weights must be finite, got " +
                                   format_number(x) + " at [" + std::to_string(row) + ", " +
                                   std::to_string(col) + "] (block " +
                                   std::to_string(col / storage::kQuantBlock) + " of row " +
                                   std::to_string(row) + ")");
  }
}

// A sink of +Inf would take all of its head's softmax mass, but the running max would compute
// Inf − Inf = NaN on every backend: refused (docs/attention-math/scores.md §10, attention sinks). NaN
// stays a NaN input (NaN rows) and −Inf means no sink (exp(−Inf) = 0).
void require_no_infinite_sink(const std::vector<float>& sinks) {
  for (std::size_t h = 0; h < sinks.size(); ++h) {
    if (!(std::isinf(sinks[h]) && sinks[h] > 0)) continue;
    throw StateDictError("sinks", "state dict 'sinks': expected logits below +Infinity (-Infinity: no sink), got " +
                                      format_number(sinks[h]) + " at [" + std::to_string(h) + "]");
  }
}

}  // namespace

void MultiHeadAttention::load_parameter(const std::string& name, const float* data,
                                        std::size_t count) {
  load_parameter(name, data, count, StorageType::f32);
}

namespace {

// checked_spec()'s errors, out of line: V8 compiles a WASM function on its first call, so code
// that never runs costs a cold start's loadStateDict nothing here, where inlined it would.
[[noreturn, gnu::noinline, gnu::cold]] void unexpected_key(const std::string& name,
                                                        const std::vector<ParameterSpec>& specs) {
  std::string expected;
  for (const auto& s : specs) expected += (expected.empty() ? "" : ", ") + s.name;
  throw StateDictError(name, "state dict: unexpected key '" + name + "'; expected keys: " + expected);
}

[[noreturn, gnu::noinline, gnu::cold]] void wrong_count(const std::string& name, const ParameterSpec& spec,
                                                     std::size_t count) {
  throw StateDictError(name, "state dict '" + name + "': expected " + format_shape(spec.shape) + " (" +
                                 std::to_string(spec.size()) + " values), got " + std::to_string(count) +
                                 " values");
}

}  // namespace

const ParameterSpec& MultiHeadAttention::checked_spec(const std::string& name,
                                                      std::size_t count) const {
  auto it = std::find_if(specs_.begin(), specs_.end(),
                         [&](const ParameterSpec& s) { return s.name == name; });
  if (it == specs_.end()) unexpected_key(name, specs_);
  if (count != it->size()) wrong_count(name, *it, count);
  return *it;
}

std::vector<MultiHeadAttention::EntryPart> MultiHeadAttention::entry_parts(
    const ParameterSpec& spec) const {
  using P = EntryPart;
  using M = MultiHeadAttention;
  using S = StateDictEntry;
  const MhaConfig& c = config_;
  const int E = c.embed_dim;
  const std::size_t qk_block = static_cast<std::size_t>(qk_width_) * E;
  const int n = static_cast<int>(spec.size());
  switch (state_dict_entry(spec.name.c_str())) {
    case S::kInProjWeight:
      return {{P::kWeights, &M::wq_, nullptr, 0, qk_width_, E},
              {P::kWeights, &M::wk_, nullptr, qk_block, qk_width_, E},
              {P::kWeights, &M::wv_, nullptr, 2 * qk_block, v_width_, E}};
    case S::kQProjWeight: return {{P::kWeights, &M::wq_, nullptr, 0, qk_width_, E}};
    case S::kKProjWeight: return {{P::kWeights, &M::wk_, nullptr, 0, k_width_, c.kdim}};
    case S::kVProjWeight: return {{P::kWeights, &M::wv_, nullptr, 0, kv_width_, c.vdim}};
    case S::kInProjBias:
      return {{P::kBias, &M::wq_, nullptr, 0, qk_width_, 1},
              {P::kBias, &M::wk_, nullptr, static_cast<std::size_t>(qk_width_), k_width_, 1},
              {P::kBias, &M::wv_, nullptr, static_cast<std::size_t>(qk_width_) + k_width_, kv_width_, 1}};
    case S::kQProjBias: return {{P::kBias, &M::wq_, nullptr, 0, qk_width_, 1}};
    case S::kKProjBias: return {{P::kBias, &M::wk_, nullptr, 0, k_width_, 1}};
    case S::kVProjBias: return {{P::kBias, &M::wv_, nullptr, 0, kv_width_, 1}};
    case S::kOutProjWeight: return {{P::kWeights, &M::wo_, nullptr, 0, E, v_width_}};
    case S::kOutProjBias: return {{P::kBias, &M::wo_, nullptr, 0, E, 1}};
    case S::kSinks: return {{P::kVector, nullptr, &M::sinks_, 0, n, 1}};
    case S::kQNormWeight: return {{P::kVector, nullptr, &M::q_norm_, 0, n, 1}};
    case S::kKNormWeight: return {{P::kVector, nullptr, &M::k_norm_, 0, n, 1}};
    case S::kCount: break;
  }
  return {};
}

void MultiHeadAttention::load_parameter(const std::string& name, const void* data,
                                        std::size_t count, StorageType source) {
  if (source == StorageType::i8 || source == StorageType::q4) {
    throw ConfigError("source_dtype", std::string("source_dtype: expected 'float32', 'float16' or 'bfloat16', got '") +
                                          storage_type_name(source) + "'");
  }
  const ParameterSpec& spec = checked_spec(name, count);
  const EntryData d{data, source};
  const StorageType st = config_.weights_dtype;
  if ((st == StorageType::i8 || st == StorageType::q4) && spec.shape.size() > 1) require_finite(name, d, spec.shape, st);
  if (name == entry_name(StateDictEntry::kSinks)) require_no_infinite_sink(widened(d, 0, spec.size()));
  for (const EntryPart& part : entry_parts(spec)) {
    switch (part.kind) {
      case EntryPart::kWeights: set_weights(*(this->*part.linear), d, part.offset, part.rows, part.cols, config_); break;
      case EntryPart::kBias: set_bias(*(this->*part.linear), d, part.offset, part.rows); break;
      case EntryPart::kVector: this->*part.values = widened(d, part.offset, static_cast<std::size_t>(part.rows)); break;
    }
  }
  entry_loaded(static_cast<std::size_t>(&spec - specs_.data()));
}

namespace {

// A pre-quantised entry's scales, codes and zero points checked before anything is packed.
void require_valid_blocks(const std::string& name, const MultiHeadAttention::QuantisedEntry& q, const ParameterSpec& spec,
                          StorageType type) {
  const std::size_t rows = static_cast<std::size_t>(spec.shape[0]), cols = static_cast<std::size_t>(spec.shape[1]);
  const std::size_t blocks = rows * storage::quant_blocks(static_cast<int>(cols));
  const std::string at = "state dict '" + name + "': ";
  for (std::size_t i = 0; i < blocks; ++i) {
    if (!std::isfinite(q.scales[i])) throw StateDictError(name, at + "scales must be finite, got " + format_number(q.scales[i]) + " at block " + std::to_string(i));
  }
  if (type != StorageType::q4) return;
  const auto* codes = static_cast<const std::uint8_t*>(q.codes);
  for (std::size_t i = 0; i < rows * cols; ++i) {
    if (codes[i] > 15) throw StateDictError(name, at + "int4 codes must be 0-15, got " + std::to_string(codes[i]) + " at " + std::to_string(i));
  }
  for (std::size_t i = 0; i < blocks; ++i) {
    if (q.zero_points[i] > 15) throw StateDictError(name, at + "int4 zero points must be 0-15, got " + std::to_string(q.zero_points[i]) + " at block " + std::to_string(i));
  }
}

}  // namespace

void MultiHeadAttention::load_quantised_parameter(const std::string& name, const QuantisedEntry& q, std::size_t count,
                                                  StorageType type) {
  if ((type != StorageType::i8 && type != StorageType::q4) || type != config_.weights_dtype) {
    throw ConfigError("weightsDtype", std::string("weightsDtype: ") + storage_type_name(type) + " blocks load into a module with weightsDtype '" +
                                          storage_type_name(type) + "', got '" + storage_type_name(config_.weights_dtype) + "'");
  }
  const ParameterSpec& spec = checked_spec(name, count);
  const std::vector<EntryPart> parts = entry_parts(spec);
  if (spec.shape.size() != 2 || !std::all_of(parts.begin(), parts.end(), [](const EntryPart& p) { return p.kind == EntryPart::kWeights; })) {
    throw StateDictError(name, "state dict '" + name + "': quantised blocks load into weight matrices only");
  }
  require_valid_blocks(name, q, spec, type);
  const int cols = spec.shape[1];
  const std::size_t blocks = static_cast<std::size_t>(storage::quant_blocks(cols));
  std::vector<kernels::PackedLinear> packed;  // every part packed before any goes in
  for (const EntryPart& part : parts) {
    const std::size_t row0 = part.offset / static_cast<std::size_t>(cols);
    // One byte per code for int8 and int4 alike.
    const kernels::QuantisedSource src{static_cast<const unsigned char*>(q.codes) + part.offset, q.scales + row0 * blocks,
                                       q.zero_points ? q.zero_points + row0 * blocks : nullptr};
    packed.push_back(kernels::pack_quantised(src, part.rows, part.cols, type));
  }
  for (std::size_t i = 0; i < parts.size(); ++i) replace_weights(*(this->*parts[i].linear), std::move(packed[i]), config_);
  entry_loaded(static_cast<std::size_t>(&spec - specs_.data()));
}

std::vector<MultiHeadAttention::InPlacePart> MultiHeadAttention::begin_load_in_place(
    const std::string& name, std::size_t count, StorageType source) {
  pending_.clear();
  const ParameterSpec& spec = checked_spec(name, count);
  const std::vector<EntryPart> parts = entry_parts(spec);
  const auto weights = [](const EntryPart& p) { return p.kind == EntryPart::kWeights; };
  if (source != StorageType::f32 || config_.weights_dtype != StorageType::f32 || !std::all_of(parts.begin(), parts.end(), weights)) {
    return {};
  }
  std::vector<std::unique_ptr<kernels::PackedLinear>> storage;
  std::vector<InPlacePart> places;
  for (const EntryPart& part : parts) {
    storage.push_back(std::make_unique<kernels::PackedLinear>(kernels::rows_for_packing(part.rows, part.cols)));
    places.push_back({storage.back()->elements<float>().data, part.offset,
                      static_cast<std::size_t>(part.rows) * part.cols});
  }
  pending_ = std::move(storage);
  pending_entry_ = static_cast<std::size_t>(&spec - specs_.data());
  return places;
}

void MultiHeadAttention::finish_load_in_place() {
  if (pending_.empty()) throw StateDictError("", "state dict: finish_load_in_place() without begin_load_in_place()");
  const std::vector<EntryPart> parts = entry_parts(specs_[pending_entry_]);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    kernels::pack_rows_in_place(*pending_[i]);
    replace_weights(*(this->*parts[i].linear), std::move(*pending_[i]), config_);
  }
  pending_.clear();
  entry_loaded(pending_entry_);
}

void MultiHeadAttention::entry_loaded(std::size_t index) {
  loaded_[index] = true;
  slices_.clear();
  // A module with all its weights asks for the projection kernel's optimised code (kernels.h):
  // compiled while the app goes on to its first forward.
  if (std::find(loaded_.begin(), loaded_.end(), false) == loaded_.end()) kernels::request_optimised_linear(*wq_);
}

void MultiHeadAttention::read_parameter(const std::string& name, float* out,
                                        std::size_t count) const {
  const ParameterSpec& spec = checked_spec(name, count);
  if (!loaded_[static_cast<std::size_t>(&spec - specs_.data())]) {
    throw StateDictError(name, "state dict: '" + name + "' was not loaded (call loadStateDict() first)");
  }
  for (const EntryPart& part : entry_parts(spec)) {
    float* to = out + part.offset;
    switch (part.kind) {
      case EntryPart::kWeights: {
        const kernels::PackedLinear& w = *(this->*part.linear);
        const std::size_t cols = static_cast<std::size_t>(part.cols);
        if (w.type == StorageType::f32) {  // the panels read directly: no conversion per element
          const kernels::PanelMatrix<const float> m = w.elements<const float>();
          for (int n = 0; n < part.rows; ++n)
            for (int k = 0; k < part.cols; ++k) to[n * cols + k] = m.at(n, k);
        } else {
          for (int n = 0; n < part.rows; ++n)
            for (int k = 0; k < part.cols; ++k) to[n * cols + k] = w.weight(n, k);
        }
        break;
      }
      case EntryPart::kBias: std::copy_n((this->*part.linear)->bias.data(), part.rows, to); break;
      case EntryPart::kVector: std::copy_n((this->*part.values).data(), part.rows, to); break;
    }
  }
}

void MultiHeadAttention::forget_parameters() { reset_weight_storage(); }

// No entry loaded and no projection storage held (its memory returned, not only emptied); the
// vector entries (sinks, qk-norm weights: a head's width each) keep theirs.
void MultiHeadAttention::reset_weight_storage() {
  loaded_.assign(specs_.size(), false);
  slices_.clear();
  pending_.clear();
  wq_ = std::make_unique<kernels::PackedLinear>();
  wk_ = std::make_unique<kernels::PackedLinear>();
  wv_ = std::make_unique<kernels::PackedLinear>();
  wo_ = std::make_unique<kernels::PackedLinear>();
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
