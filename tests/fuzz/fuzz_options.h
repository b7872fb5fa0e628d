// Issue 20's options as both harnesses (tests/fuzz/*_fuzz.cpp) draw them from the input: int8
// activations with integer weights, the score scale, softcap, attention sinks (with extreme and
// non-finite logits), qk-norm (its eps, heads that are all zero), RoPE scaling ('linear',
// 'llama3'), a given rotary table (any width of rows, sometimes fewer rows than the positions
// used), a bias per projection and position ids. Values the core must refuse (0, negative, NaN,
// ±Inf where it needs a finite positive number) come in now and then: a ConfigError for them is an
// accepted outcome, anything else (a crash, UB, a leak, a hang, or a refusal where none is due) is
// a finding.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_bytes.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention::fuzz {

// A number for an option: mostly `typical` times a factor in [0.25, 4.2], else 0, its negative,
// NaN, ±Infinity, tiny (1e-30) or `huge`.
inline double option_value(Bytes& in, double typical, double huge) {
  switch (in.in(0, 23)) {
    case 0: return 0.0;
    case 1: return -typical;
    case 2: return std::numeric_limits<double>::quiet_NaN();
    case 3: return std::numeric_limits<double>::infinity();
    case 4: return -std::numeric_limits<double>::infinity();
    case 5: return 1e-30;
    case 6: return huge;
    default: return typical * (0.25 + in.u8() / 64.0);
  }
}

// A storage type that kStorageTypes admits for `use` (&StorageTypeInfo::weights or ::cache), in
// the table's order.
inline StorageType draw_storage_type(Bytes& in, bool StorageTypeInfo::*use) {
  StorageType admitted[sizeof(kStorageTypes) / sizeof(*kStorageTypes)];
  int n = 0;
  for (const StorageTypeInfo& t : kStorageTypes) {
    if (t.*use) admitted[n++] = t.type;
  }
  return admitted[in.in(0, n - 1)];
}

// int8 activations (§11) for about half the modules whose weights can have them (int8, int4);
// reads nothing for the others.
inline void draw_activations(Bytes& in, MhaConfig& c) {
  if ((c.weights_dtype == StorageType::i8 || c.weights_dtype == StorageType::q4) && in.coin()) c.activations = StorageType::i8;
}

// Scale, softcap, sinks, qk-norm and the bias flags of one module. The scale's largest value is
// kept where float32 scores of the harnesses' inputs stay comparable with the float64 reference.
inline void draw_score_options(Bytes& in, MhaConfig& c) {
  if (in.coin()) c.scale = option_value(in, 0.5, 64.0);
  if (in.coin()) c.softcap = option_value(in, 2.0, 1e30);
  c.sinks = in.coin();
  if (in.coin()) {
    c.qk_norm = true;
    c.qk_norm_eps = option_value(in, 1e-6, 1e30);
  }
  if (in.coin()) {
    ProjectionBias b;
    b.q = in.coin(), b.k = in.coin(), b.v = in.coin(), b.out = in.coin();
    c.bias = b;
  } else {
    c.bias = in.coin();
  }
}

// RoPE on a module whose heads are head_dim wide (>= 2): width, base, pairing and a scaling.
// A small originalMaxPositions so that the harnesses' positions cross it.
inline void draw_rotary(Bytes& in, MhaConfig& c, int head_dim) {
  c.rotary_dim = 2 * in.in(1, head_dim / 2);
  c.rotary_base = in.coin() ? 10000.0 : 2.0 + in.u8();  // > 1, as the core requires
  c.rotary_interleaved = in.coin();
  const MhaConfig::RotaryScaling scalings[] = {MhaConfig::RotaryScaling::kNone, MhaConfig::RotaryScaling::kLinear,
                                               MhaConfig::RotaryScaling::kLlama3};
  c.rotary_scaling = scalings[in.in(0, 2)];
  if (c.rotary_scaling == MhaConfig::RotaryScaling::kNone) return;
  c.rotary_factor = option_value(in, 4.0, 1e6);
  if (c.rotary_scaling == MhaConfig::RotaryScaling::kLinear) return;
  c.rotary_low_freq_factor = option_value(in, 1.0, 1e6);
  c.rotary_high_freq_factor = option_value(in, 4.0, 1e6);
  c.rotary_original_max_positions = option_value(in, 16.0, 1e30);
}

// A sink logit: mostly a value of the inputs' range, sometimes huge (all the mass) or non-finite.
inline float sink_value(Bytes& in, bool* non_finite) {
  switch (in.in(0, 15)) {
    case 0: return 1e30f;
    case 1: return -1e30f;
    case 2: return std::numeric_limits<float>::max();
    case 3: return -std::numeric_limits<float>::max();
    default: return in.value(non_finite);
  }
}

// The module, or null where the core refuses an option value (a ConfigError: accepted).
inline std::unique_ptr<MultiHeadAttention> module_or_refused(const MhaConfig& c) {
  try {
    return std::make_unique<MultiHeadAttention>(c);
  } catch (const ConfigError&) {
    return nullptr;
  }
}

// The values of one state-dict entry: the inputs' range scaled down for weights, sink_value()
// for the sinks.
inline std::vector<float> entry_values(Bytes& in, const ParameterSpec& spec, bool* non_finite) {
  std::vector<float> values(spec.size());
  for (auto& x : values) x = spec.name == "sinks" ? sink_value(in, non_finite) : in.value(non_finite) * 0.25f;
  return values;
}

// Whether load_parameter() refuses these values (a StateDictError): a non-finite int8 or int4
// weight matrix (§11) or a +Inf sink (§10, attention sinks).
inline bool refused_entry(const ParameterSpec& spec, const std::vector<float>& values, const MhaConfig& c) {
  const auto any = [&](auto pred) { return std::any_of(values.begin(), values.end(), pred); };
  if (spec.name == "sinks") return any([](float v) { return std::isinf(v) && v > 0; });
  const bool quantised = c.weights_dtype == StorageType::i8 || c.weights_dtype == StorageType::q4;
  return quantised && spec.shape.size() == 2 && any([](float v) { return !std::isfinite(v); });
}

// A given rotary table [rows, half], or none (rows 0): sometimes fewer rows than the harness's
// positions, values of the inputs' range (NaN and Infinity among them).
struct RotaryTable {
  int rows = 0;
  std::vector<float> cos, sin;
};
inline RotaryTable draw_rotary_table(Bytes& in, int half, int most_rows, bool* non_finite) {
  RotaryTable t;
  if (half == 0 || !in.coin()) return t;
  t.rows = in.coin() ? in.in(1, 8) : in.in(1, most_rows);
  for (auto* v : {&t.cos, &t.sin}) {
    v->resize(static_cast<std::size_t>(t.rows) * half);
    for (auto& x : *v) x = in.value(non_finite) / 4;
  }
  return t;
}

// Position ids for `count` rows: repeated, out of order, far apart, the largest int32, and now and
// then -1 (refused).
inline std::vector<std::int32_t> draw_position_ids(Bytes& in, std::size_t count) {
  std::vector<std::int32_t> ids(count);
  const int spread = in.coin() ? 1 : 65537;
  for (auto& id : ids) {
    const int b = in.u8();
    id = b == 255 ? std::numeric_limits<std::int32_t>::max() : b == 254 ? -1 : b * spread;
  }
  return ids;
}

// Whether the core must refuse these positions: a negative id, or one past a given table's rows;
// without ids, rows at positions up to `last_position` (a table only).
inline bool positions_refused(const std::vector<std::int32_t>& ids, const RotaryTable& table,
                              std::int64_t last_position) {
  if (ids.empty()) return table.rows > 0 && last_position >= table.rows;
  for (std::int32_t id : ids)
    if (id < 0 || (table.rows > 0 && id >= table.rows)) return true;
  return false;
}

// Runs `forward`: a ShapeError or ConfigError where `refusal_due` (returns true), no refusal
// otherwise (an unexpected typed error escapes, and libFuzzer reports it).
template <class Forward>
bool refused_as_due(bool refusal_due, const char* harness, Forward&& forward) {
  try {
    forward();
  } catch (const ShapeError&) {
    if (!refusal_due) throw;
    return true;
  } catch (const ConfigError&) {
    if (!refusal_due) throw;
    return true;
  }
  if (refusal_due) {
    std::fprintf(stderr, "%s: positions outside the rotary table (or negative ids) were accepted\n", harness);
    std::abort();
  }
  return false;
}

// Zeros query head `head` and the key head it reads in a projection entry (weights and bias
// rows), so that qk-norm meets an all-zero head (its root mean square is 0). `c` is the module's
// resolved configuration.
inline void zero_qk_head(const ParameterSpec& spec, std::vector<float>& values, const MhaConfig& c, int head) {
  const std::size_t cols = spec.shape.size() == 2 ? static_cast<std::size_t>(spec.shape[1]) : 1;
  const int kv_head = head % (c.num_kv_heads ? c.num_kv_heads : c.num_heads);
  const std::size_t qk = static_cast<std::size_t>(c.num_heads) * c.head_dim;
  auto zero_rows = [&](std::size_t first) {
    for (std::size_t r = first; r < first + static_cast<std::size_t>(c.head_dim); ++r)
      for (std::size_t i = 0; i < cols; ++i) values[r * cols + i] = 0.0f;
  };
  const std::string& n = spec.name;
  if (n == "in_proj_weight" || n == "in_proj_bias") {
    zero_rows(static_cast<std::size_t>(head) * c.head_dim);
    zero_rows(qk + static_cast<std::size_t>(kv_head) * c.head_dim);
  } else if (n == "q_proj_weight" || n == "q_proj_bias") {
    zero_rows(static_cast<std::size_t>(head) * c.head_dim);
  } else if (n == "k_proj_weight" || n == "k_proj_bias") {
    zero_rows(static_cast<std::size_t>(kv_head) * c.head_dim);
  }
}

}  // namespace webattention::fuzz
