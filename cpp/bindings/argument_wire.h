// The arguments of the exported surface (exports.cpp) as JS passes them: a call's many arguments
// come as one record, an array of doubles that JS fills field by field by NAME, from the field
// list this file gives (wa_record_fields(), read once per module by web/src/core_exports.js), so
// the JS and C++ sides cannot silently disagree on an argument's position. Tensors are WASM heap
// addresses the JS side has filled; numbers, booleans (0 / 1) and addresses are all exact in a
// double. The records become the core's argument structs here.
#pragma once

#include <algorithm>
#include <array>
#include <limits>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "webattention/attention.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace bindings {

// A heap address from JS as a pointer (0 stays nullptr).
template <typename T>
T* at(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

// A double from JS as `F`: NaN and out-of-range integers saturate (never undefined behaviour; the
// JS side has checked the values, and the core checks them again).
template <typename F>
F from_double(double v) {
  if constexpr (std::is_same_v<F, bool>) {
    return v != 0.0;
  } else if constexpr (std::is_floating_point_v<F>) {
    return static_cast<F>(v);
  } else {
    if (std::isnan(v)) return 0;
    const double lo = static_cast<double>(std::numeric_limits<F>::min());
    const double hi = static_cast<double>(std::numeric_limits<F>::max());
    return static_cast<F>(std::clamp(std::trunc(v), lo, hi));
  }
}

// One field of a record of type T: its JS name and how its double is stored.
template <typename T>
struct RecordField {
  const char* name;
  void (*set)(T&, double);
};

// The setter of data member `Member` of T (or of a base of T).
template <typename T, auto Member>
void set_member(T& record, double v) {
  using F = std::remove_reference_t<decltype(record.*Member)>;
  record.*Member = from_double<F>(v);
}

// A mask as the JS side describes it: { kind (MaskKind's number), address, rank, shape } with
// the first `rank` of shape's three dims used (address 0 and rank 0 for no mask).
struct MaskWire {
  int kind = 0;
  std::uintptr_t address = 0;
  int rank = 0;
  std::array<int, 3> shape{};

  MaskArg arg() const {
    MaskArg m;
    m.kind = static_cast<MaskKind>(kind);
    m.data = at<const void>(address);
    m.shape.assign(shape.begin(), shape.begin() + std::clamp(rank, 0, 3));
    return m;
  }
};

// Field `F` of mask member `Mask` of T: 0 kind, 1 address, 2 rank, 3 + i shape[i].
template <typename T, MaskWire T::*Mask, int F>
void set_mask(T& record, double v) {
  MaskWire& m = record.*Mask;
  if constexpr (F == 0) m.kind = from_double<int>(v);
  else if constexpr (F == 1) m.address = from_double<std::uintptr_t>(v);
  else if constexpr (F == 2) m.rank = from_double<int>(v);
  else m.shape[F - 3] = from_double<int>(v);
}

// forward() and forwardHeads(): the inputs, masks and outputs of MhaForwardArgs as heap
// addresses. `output` is the module output [B, L, E] for forward(), the heads
// [B, L, (head_end - head_begin)·d_v] for forwardHeads(); `weights` is 0 unless asked for.
struct ForwardWire {
  int batch = 1, L = 0, S = 0;
  std::uintptr_t query = 0, key = 0, value = 0;
  MaskWire key_padding_mask, attn_mask;
  bool causal = false;
  std::uintptr_t output = 0, weights = 0;
  bool average_weights = true;
  std::uintptr_t position_ids = 0;  // [B, L] int32, or 0 for the rows' own positions

  MhaForwardArgs args() const {
    MhaForwardArgs a;
    a.batch = batch;
    a.L = L;
    a.S = S;
    a.query = at<const float>(query);
    a.key = at<const float>(key);
    a.value = at<const float>(value);
    a.key_padding_mask = key_padding_mask.arg();
    a.attn_mask = attn_mask.arg();
    a.causal = causal;
    a.output = at<float>(output);
    a.weights = at<float>(weights);
    a.average_weights = average_weights;
    a.position_ids = at<const std::int32_t>(position_ids);
    return a;
  }
};

inline constexpr RecordField<ForwardWire> kForwardFields[] = {
    {"batch", set_member<ForwardWire, &ForwardWire::batch>},
    {"L", set_member<ForwardWire, &ForwardWire::L>},
    {"S", set_member<ForwardWire, &ForwardWire::S>},
    {"query", set_member<ForwardWire, &ForwardWire::query>},
    {"key", set_member<ForwardWire, &ForwardWire::key>},
    {"value", set_member<ForwardWire, &ForwardWire::value>},
    {"keyPaddingMask.kind", set_mask<ForwardWire, &ForwardWire::key_padding_mask, 0>},
    {"keyPaddingMask.address", set_mask<ForwardWire, &ForwardWire::key_padding_mask, 1>},
    {"keyPaddingMask.rank", set_mask<ForwardWire, &ForwardWire::key_padding_mask, 2>},
    {"keyPaddingMask.shape.0", set_mask<ForwardWire, &ForwardWire::key_padding_mask, 3>},
    {"keyPaddingMask.shape.1", set_mask<ForwardWire, &ForwardWire::key_padding_mask, 4>},
    {"keyPaddingMask.shape.2", set_mask<ForwardWire, &ForwardWire::key_padding_mask, 5>},
    {"attnMask.kind", set_mask<ForwardWire, &ForwardWire::attn_mask, 0>},
    {"attnMask.address", set_mask<ForwardWire, &ForwardWire::attn_mask, 1>},
    {"attnMask.rank", set_mask<ForwardWire, &ForwardWire::attn_mask, 2>},
    {"attnMask.shape.0", set_mask<ForwardWire, &ForwardWire::attn_mask, 3>},
    {"attnMask.shape.1", set_mask<ForwardWire, &ForwardWire::attn_mask, 4>},
    {"attnMask.shape.2", set_mask<ForwardWire, &ForwardWire::attn_mask, 5>},
    {"isCausal", set_member<ForwardWire, &ForwardWire::causal>},
    {"output", set_member<ForwardWire, &ForwardWire::output>},
    {"weights", set_member<ForwardWire, &ForwardWire::weights>},
    {"averageWeights", set_member<ForwardWire, &ForwardWire::average_weights>},
    {"positionIds", set_member<ForwardWire, &ForwardWire::position_ids>},
};

// sdpa(): SdpaArgs with heap addresses.
struct SdpaWire {
  int N = 1, L = 0, S = 0, dk = 0, dv = 0;
  std::uintptr_t q = 0, k = 0, v = 0;
  MaskWire attn_mask;
  bool causal = false;
  float scale = 0.0f;
  std::uintptr_t out = 0, weights = 0;

  SdpaArgs args() const {
    SdpaArgs a;
    a.N = N;
    a.L = L;
    a.S = S;
    a.dk = dk;
    a.dv = dv;
    a.q = at<const float>(q);
    a.k = at<const float>(k);
    a.v = at<const float>(v);
    a.attn_mask = attn_mask.arg();
    a.causal = causal;
    a.scale = scale;
    a.out = at<float>(out);
    a.weights = at<float>(weights);
    return a;
  }
};

inline constexpr RecordField<SdpaWire> kSdpaFields[] = {
    {"N", set_member<SdpaWire, &SdpaWire::N>},
    {"L", set_member<SdpaWire, &SdpaWire::L>},
    {"S", set_member<SdpaWire, &SdpaWire::S>},
    {"dk", set_member<SdpaWire, &SdpaWire::dk>},
    {"dv", set_member<SdpaWire, &SdpaWire::dv>},
    {"q", set_member<SdpaWire, &SdpaWire::q>},
    {"k", set_member<SdpaWire, &SdpaWire::k>},
    {"v", set_member<SdpaWire, &SdpaWire::v>},
    {"attnMask.kind", set_mask<SdpaWire, &SdpaWire::attn_mask, 0>},
    {"attnMask.address", set_mask<SdpaWire, &SdpaWire::attn_mask, 1>},
    {"attnMask.rank", set_mask<SdpaWire, &SdpaWire::attn_mask, 2>},
    {"attnMask.shape.0", set_mask<SdpaWire, &SdpaWire::attn_mask, 3>},
    {"attnMask.shape.1", set_mask<SdpaWire, &SdpaWire::attn_mask, 4>},
    {"attnMask.shape.2", set_mask<SdpaWire, &SdpaWire::attn_mask, 5>},
    {"isCausal", set_member<SdpaWire, &SdpaWire::causal>},
    {"scale", set_member<SdpaWire, &SdpaWire::scale>},
    {"output", set_member<SdpaWire, &SdpaWire::out>},
    {"weights", set_member<SdpaWire, &SdpaWire::weights>},
};

// MhaConfig as JS passes it (web/src/module_config.js's coreConfig()): numbers and booleans; the
// weights' storage type comes as its own string argument of configure() (a ConfigError naming
// weightsDtype when it is not one). This is the one list of MhaConfig's fields: nothing reads a
// config back from the core.
inline void set_rotary_scaling(MhaConfig& c, double scaling) {
  // 0 none, 1 linear, 2 llama3 (module_config.js).
  c.rotary_scaling = scaling == 1 ? MhaConfig::RotaryScaling::kLinear
                     : scaling == 2 ? MhaConfig::RotaryScaling::kLlama3 : MhaConfig::RotaryScaling::kNone;
}
inline constexpr RecordField<MhaConfig> kConfigFields[] = {
    {"embedDim", set_member<MhaConfig, &MhaConfig::embed_dim>},
    {"numHeads", set_member<MhaConfig, &MhaConfig::num_heads>},
    {"kdim", set_member<MhaConfig, &MhaConfig::kdim>},
    {"vdim", set_member<MhaConfig, &MhaConfig::vdim>},
    {"headDim", set_member<MhaConfig, &MhaConfig::head_dim>},
    {"valueHeadDim", set_member<MhaConfig, &MhaConfig::value_head_dim>},
    {"bias.q", [](MhaConfig& c, double v) { c.bias.q = v != 0.0; }},
    {"bias.k", [](MhaConfig& c, double v) { c.bias.k = v != 0.0; }},
    {"bias.v", [](MhaConfig& c, double v) { c.bias.v = v != 0.0; }},
    {"bias.out", [](MhaConfig& c, double v) { c.bias.out = v != 0.0; }},
    {"numKvHeads", set_member<MhaConfig, &MhaConfig::num_kv_heads>},
    {"rotaryDim", set_member<MhaConfig, &MhaConfig::rotary_dim>},
    {"rotaryBase", set_member<MhaConfig, &MhaConfig::rotary_base>},
    {"rotaryInterleaved", set_member<MhaConfig, &MhaConfig::rotary_interleaved>},
    {"rotaryScaling", set_rotary_scaling},
    {"rotaryFactor", set_member<MhaConfig, &MhaConfig::rotary_factor>},
    {"rotaryLowFreqFactor", set_member<MhaConfig, &MhaConfig::rotary_low_freq_factor>},
    {"rotaryHighFreqFactor", set_member<MhaConfig, &MhaConfig::rotary_high_freq_factor>},
    {"rotaryOriginalMaxPositions", set_member<MhaConfig, &MhaConfig::rotary_original_max_positions>},
    {"scale", set_member<MhaConfig, &MhaConfig::scale>},
    {"softcap", set_member<MhaConfig, &MhaConfig::softcap>},
    {"sinks", set_member<MhaConfig, &MhaConfig::sinks>},
    {"qkNorm", set_member<MhaConfig, &MhaConfig::qk_norm>},
    {"qkNormEps", set_member<MhaConfig, &MhaConfig::qk_norm_eps>},
};

// The record at `values` (one double per field of `fields`, in order) as a T.
template <typename T, std::size_t N>
T read_record(const RecordField<T> (&fields)[N], const double* values, T record = T{}) {
  for (std::size_t i = 0; i < N; ++i) fields[i].set(record, values[i]);
  return record;
}

// "name,name,…": the field order JS writes a record in.
template <typename T, std::size_t N>
std::string field_names(const RecordField<T> (&fields)[N]) {
  std::string names;
  for (std::size_t i = 0; i < N; ++i) names += (i ? "," : "") + std::string(fields[i].name);
  return names;
}

}  // namespace bindings
}  // namespace webattention
