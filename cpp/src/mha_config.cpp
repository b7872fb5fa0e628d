// MultiHeadAttention's configuration: the options checked and their defaults resolved, the
// projection widths and the state-dict entries they imply, and the checks of a forward's sizes.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "checks.h"
#include "head_slice.h"  // the destructor frees the slices
#include "rotary.h"
#include "kernels/kernels.h"
#include "webattention/errors.h"
#include "webattention/state_dict_entries.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

// The failing side of require(), out of line: the checks below then hold only the checks.
// V8 compiles a WASM function on its first call, so code that never runs (the messages) costs a
// cold start nothing, where inlined it made the constructor 16.7 KB to compile in every create().
template <typename Message>
[[noreturn]] __attribute__((noinline, cold)) void fail(const char* argument, Message message) {
  throw ConfigError(argument, std::string(argument) + ": " + message());
}

// `message` is called only when the check fails: std::to_string of a double runs printf, whose
// first-tier code took ~1 ms of every create() when each message was built up front.
template <typename Message>
void require(bool ok, const char* argument, Message message) {
  if (!ok) fail(argument, message);
}

// The kernels compute in float32: a positive option must stay finite and non-zero there (1e-46
// would become 0, 1e39 +Inf, and either would silently change what the option means).
bool positive_in_float(double v) {
  const float f = static_cast<float>(v);
  return std::isfinite(v) && v > 0.0 && std::isfinite(f) && f > 0.0f;
}

// The shape options checked, and the defaults they imply filled in (kdim, vdim, head dims, KV heads).
void resolve_shape_options(MhaConfig& c) {
  require(c.embed_dim >= 1, "embed_dim", [&] { return "expected an integer >= 1, got " +
                                             std::to_string(c.embed_dim); });
  require(c.num_heads >= 1, "num_heads", [&] { return "expected an integer >= 1, got " +
                                             std::to_string(c.num_heads); });
  if (c.kdim == 0) c.kdim = c.embed_dim;
  if (c.vdim == 0) c.vdim = c.embed_dim;
  require(c.kdim >= 1, "kdim", [&] { return "expected an integer >= 1, got " + std::to_string(c.kdim); });
  require(c.vdim >= 1, "vdim", [&] { return "expected an integer >= 1, got " + std::to_string(c.vdim); });
  const bool default_dims = c.head_dim == 0 || c.value_head_dim == 0;
  if (default_dims) {
    require(c.embed_dim % c.num_heads == 0, "embed_dim", [&] { return "expected a multiple of num_heads (" + std::to_string(c.num_heads) + "), got " +
                std::to_string(c.embed_dim); });
  }
  if (c.head_dim == 0) c.head_dim = c.embed_dim / c.num_heads;
  if (c.value_head_dim == 0) c.value_head_dim = c.embed_dim / c.num_heads;
  require(c.head_dim >= 1, "head_dim", [&] { return "expected an integer >= 1, got " +
                                           std::to_string(c.head_dim); });
  require(c.value_head_dim >= 1, "value_head_dim", [&] { return "expected an integer >= 1, got " + std::to_string(c.value_head_dim); });
  if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
  require(c.num_kv_heads >= 1 && c.num_kv_heads <= c.num_heads && c.num_heads % c.num_kv_heads == 0,
          "num_kv_heads", [&] { return "expected a divisor of num_heads (" + std::to_string(c.num_heads) +
                              "), got " + std::to_string(c.num_kv_heads); });
  require(c.rotary_dim >= 0 && c.rotary_dim % 2 == 0 && c.rotary_dim <= c.head_dim, "rotary_dim", [&] { return "expected an even integer in [0, head_dim = " + std::to_string(c.head_dim) + "], got " +
              std::to_string(c.rotary_dim); });
}

// The score and position options (RoPE, qk-norm, scale, softcap) checked.
void check_score_options(const MhaConfig& c) {
  require(std::isfinite(c.rotary_base) && c.rotary_base > 1.0, "rotary_base", [&] { return "expected a finite number > 1, got " + format_number(c.rotary_base); });
  if (c.rotary_scaling != MhaConfig::RotaryScaling::kNone) {
    require(positive_in_float(c.rotary_factor), "rotary_factor", [&] { return "expected a finite number > 0 (as float32), got " + format_number(c.rotary_factor); });
  }
  if (c.rotary_scaling == MhaConfig::RotaryScaling::kLlama3) {
    require(std::isfinite(c.rotary_low_freq_factor) && std::isfinite(c.rotary_high_freq_factor) &&
                c.rotary_low_freq_factor > 0.0 && c.rotary_high_freq_factor > c.rotary_low_freq_factor,
            "rotary_high_freq_factor", [&] { return "expected 0 < low_freq_factor < high_freq_factor, got " +
                format_number(c.rotary_low_freq_factor) + ", " + format_number(c.rotary_high_freq_factor); });
    require(std::isfinite(c.rotary_original_max_positions) && c.rotary_original_max_positions >= 1.0,
            "rotary_original_max_positions", [&] { return "expected a number >= 1, got " +
                format_number(c.rotary_original_max_positions); });
  }
  require(!c.qk_norm || positive_in_float(c.qk_norm_eps), "qk_norm_eps", [&] { return "expected a finite number > 0 (as float32), got " + format_number(c.qk_norm_eps); });
  require(!c.scale || positive_in_float(*c.scale), "scale", [&] { return "expected a finite number > 0 (as float32), got " + format_number(*c.scale); });
  require(c.softcap == 0.0 || positive_in_float(c.softcap), "softcap", [&] { return "expected a finite number > 0 as float32 (0: none), got " + format_number(c.softcap); });
}

// Integer activations need integer weight codes to multiply: int8 or int4 weights.
void check_activations(const MhaConfig& c) {
  parse_storage_type(storage_type_name(c.activations), "activations", &StorageTypeInfo::activations);
  const bool quantised = storage_type_info(c.weights_dtype).block > 0;
  require(c.activations == StorageType::f32 || quantised, "activations", [&] {
    return std::string("'int8' needs int8 or int4 weights (weights_dtype 'int8' | 'int4'), got weights_dtype '") +
           storage_type_name(c.weights_dtype) + "'";
  });
}

// The projections' output widths: query and key rows (h·dk, h_kv·dk), value rows (h_kv·dv), the
// heads' output (h·dv), and the query heads per K/V head.
struct ProjectionWidths {
  int qk, k, kv, v, group;
};

// The state-dict entries a configuration implies, in PyTorch's order and names.
std::vector<ParameterSpec> state_dict_entries(const MhaConfig& c, const ProjectionWidths& w) {
  using S = StateDictEntry;
  const int E = c.embed_dim;
  std::vector<ParameterSpec> specs;
  const auto add = [&](S entry, std::vector<int> shape) { specs.push_back({entry_name(entry), std::move(shape)}); };
  // PyTorch packs the input projections only when every width equals embed_dim.
  const bool packed = c.kdim == E && c.vdim == E && w.qk == E && w.v == E && w.group == 1;
  if (packed) {
    add(S::kInProjWeight, {3 * E, E});
  } else {
    add(S::kQProjWeight, {w.qk, E});
    add(S::kKProjWeight, {w.k, c.kdim});
    add(S::kVProjWeight, {w.kv, c.vdim});
  }
  if (c.bias.all_inputs()) {
    add(S::kInProjBias, {w.qk + w.k + w.kv});
  } else {
    if (c.bias.q) add(S::kQProjBias, {w.qk});
    if (c.bias.k) add(S::kKProjBias, {w.k});
    if (c.bias.v) add(S::kVProjBias, {w.kv});
  }
  add(S::kOutProjWeight, {E, w.v});
  if (c.bias.out) add(S::kOutProjBias, {E});
  if (c.qk_norm) {
    add(S::kQNormWeight, {c.head_dim});
    add(S::kKNormWeight, {c.head_dim});
  }
  if (c.sinks) add(S::kSinks, {c.num_heads});
  return specs;
}

}  // namespace

std::size_t ParameterSpec::size() const {
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1},
                         [](std::size_t a, int b) { return a * static_cast<std::size_t>(b); });
}

MultiHeadAttention::MultiHeadAttention(const MhaConfig& config) : config_(config) {
  static std::atomic<std::uint64_t> next_id{1};
  id_ = next_id++;
  MhaConfig& c = config_;
  resolve_shape_options(c);
  check_score_options(c);
  check_activations(c);
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
  rotary_frequencies_ = rotary_frequencies(c);
  rotary_table_.resize(c.rotary_dim);
  specs_ = state_dict_entries(c, {qk_width_, k_width_, kv_width_, v_width_, kv_group_});
  reset_weight_storage();
}

MultiHeadAttention::~MultiHeadAttention() = default;
MultiHeadAttention::MultiHeadAttention(MultiHeadAttention&&) noexcept = default;
MultiHeadAttention& MultiHeadAttention::operator=(MultiHeadAttention&&) noexcept = default;

std::size_t MultiHeadAttention::scratch_floats(int batch, int L, int S) const {
  const std::size_t B = static_cast<std::size_t>(batch);
  // projected Q [B, L, h·dk], K [B, S, h_kv·dk], V [B, S, h_kv·dv], heads [B, L, h·dv]
  return B * (static_cast<std::size_t>(L) * qk_width_ + static_cast<std::size_t>(S) * k_width_ +
              static_cast<std::size_t>(S) * kv_width_ + static_cast<std::size_t>(L) * v_width_);
}

void MultiHeadAttention::check_forward(const MhaForwardArgs& a) const {
  require_loaded();
  require_positive("batch", a.batch);
  require_positive("L", a.L);
  require_positive("S", a.S);
  // The scratch of projected Q, K, V and heads, counted in 64 bits before scratch_floats() does.
  const std::int64_t B = a.batch, L = a.L, S = a.S;
  require_addressable("query", "the projections' scratch",
                      B * (L * qk_width_ + S * (k_width_ + std::int64_t{kv_width_}) + L * v_width_));
  require_addressable("query", "the rows", std::max(B * L * config_.embed_dim, B * S * std::int64_t{std::max(config_.kdim, config_.vdim)}));
  if (a.position_ids != nullptr) check_position_ids(a);
}

// MhaForwardArgs::position_ids: a rotary module's, one per query row and key row, each in range.
void MultiHeadAttention::check_position_ids(const MhaForwardArgs& a) const {
  const int half = config_.rotary_dim / 2;
  if (half == 0) {
    throw ConfigError("position_ids", "position_ids: the module has no rotary embedding (rotary_dim 0), "
                                      "so there are no positions to set");
  }
  if (a.S != a.L) {
    throw ShapeError("position_ids", "position_ids: a query row and the key row beside it share a position, "
                                     "so S must equal L = " + std::to_string(a.L) + ", got S = " + std::to_string(a.S));
  }
  // A given table has rows for positions 0 … rows − 1; frequencies take any int32 >= 0.
  const std::int64_t rows = rotary_cos_.empty() ? std::int64_t{INT32_MAX} + 1
                                                : static_cast<std::int64_t>(rotary_cos_.size() / half);
  const std::int64_t count = std::int64_t{a.batch} * a.L;
  for (std::int64_t n = 0; n < count; ++n) {
    const std::int32_t p = a.position_ids[n];
    if (p < 0 || p >= rows) {
      throw ConfigError("position_ids", "position_ids[" + std::to_string(n / a.L) + ", " + std::to_string(n % a.L) +
                                           "]: expected an integer in [0, " + std::to_string(rows - 1) + "], got " +
                                           std::to_string(p));
    }
  }
}

}  // namespace webattention
