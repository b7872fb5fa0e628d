// libFuzzer harness of the C++ API, built with ASan + UBSan (scripts/fuzz.sh). Each input is read
// as a small MHA problem: the configuration (heads, widths, free head dims, kdim / vdim, bias),
// the lengths (up to 300 keys: more than one key tile), both masks of every kind and shape,
// causal, weights averaged or per head, then the weights and inputs as bytes turned into floats.
// Checks: nothing the sanitizers see (out-of-bounds, overflow, use after free, leaks), a
// deliberately wrong mask shape is a ShapeError and leaves the module usable, and with finite
// inputs the output and weights match the float64 reference (cpp/reference). NaN and infinities
// come in through a few byte values; such inputs are run for memory safety only (the NaN rules
// are checked against their own reference by tests/js/differential.test.js). The weights are
// stored as f32, f16, bf16, int8 or int4 (docs/attention-math/storage.md §11) and given as f32 or as f16 bits
// (f32 weight matrices of an f32 module written in place, as the JS side loads them;
// decode_fuzz.cpp loads through load_parameter());
// the reference then computes with the stored values, and a non-finite weight bound for int8 or int4 must
// be a StateDictError. An int8 or int4 module may instead take its weight matrices quantised
// already (load_quantised_parameter(): random codes, zero points and f16-like scales, a NaN or
// infinite scale now and then, which must be a StateDictError), the reference then computing with
// (code - zero point) · scale. Issue 20's options come from fuzz_options.h: the score scale, softcap,
// sinks, qk-norm (with all-zero heads), a bias per projection, RoPE with either scaling or a given
// table, and position ids; the reference computes all of them, and a refusal of bad option values,
// of positions past the table or of negative ids is accepted (and demanded where it is due).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_bytes.h"
#include "fuzz_options.h"
#include "fuzz_threads.h"
#include "kernels/storage_convert.h"
#include "reference/reference.h"
#include "reference/storage_reference.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace {

using namespace webattention;
using fuzz::Bytes;

[[noreturn]] void fail(const char* what, std::size_t i, double got, double expected) {
  std::fprintf(stderr, "mha_fuzz: %s[%zu] = %g, expected %g\n", what, i, got, expected);
  std::abort();
}

// got within 1e-3 + 1e-3·m of expected, m the largest |expected| in its row of `row` values (1:
// the value itself), plus slack[i] where given (int8 activations: reference::mha_forward's
// out_slack). An output row is out_proj's sums of terms of about the row's size: where they cancel,
// a small entry carries the large ones' rounding. A fuzz find: a score scale of 64 put the logits
// near 1e4, where float32 rounds them by 1e-3 and the softmax its weights by as much relative, and
// an entry of -0.092 in a row reaching 18 came out 1.5e-3 off, the row's others 1e-4 relative
// (its input is in tests/fuzz/corpus/mha_fuzz/ as crash-4723…).
void check_close(const char* what, const std::vector<float>& got, const std::vector<float>& expected,
                 const std::vector<double>& slack = {}, std::size_t row = 1) {
  for (std::size_t r = 0; r < got.size(); r += row) {
    double m = 0.0;
    for (std::size_t i = r; i < r + row; ++i) m = std::max(m, std::fabs(static_cast<double>(expected[i])));
    for (std::size_t i = r; i < r + row; ++i) {
      const double a = got[i], b = expected[i];
      if (!(std::fabs(a - b) <= 1e-3 + 1e-3 * m + (slack.empty() ? 0.0 : slack[i]))) fail(what, i, a, b);
    }
  }
}

// Entry `name` written in place (begin_load_in_place), as the JS side loads f32 weight matrices
// into an f32 module; false, having changed nothing, for an entry not taken that way.
bool load_in_place(MultiHeadAttention& m, const std::string& name, const std::vector<float>& v) {
  const auto parts = m.begin_load_in_place(name, v.size(), StorageType::f32);
  for (const auto& p : parts) std::copy_n(v.data() + p.offset, p.count, p.to);
  if (!parts.empty()) m.finish_load_in_place();
  return !parts.empty();
}

// An int8 or int4 weight matrix [rows, cols] quantised already, drawn from the bytes: codes,
// zero points (int4), scales (k · 2^-15 or 2^-12, either sign; now and then NaN or infinite), and the values
// they stand for.
struct Blocks {
  std::vector<std::uint8_t> codes, zeros;
  std::vector<float> scales, values;
  bool finite = true;
};

Blocks draw_blocks(Bytes& in, int rows, int cols, StorageType type) {
  const int per_row = (cols + 31) / 32;
  Blocks b;
  b.scales.resize(static_cast<std::size_t>(rows) * per_row);
  b.zeros.resize(b.scales.size());
  for (std::size_t i = 0; i < b.scales.size(); ++i) {
    const int k = in.in(0, 255);
    // Weights within about ±1, as the float entries' (int8: 127 · 2^-7, int4: 15 · 2^-4).
    const int exponent = type == StorageType::q4 ? -12 : -15;
    b.scales[i] = k == 255 ? (in.coin() ? NAN : INFINITY) : std::ldexp(static_cast<float>(k), exponent) * (in.coin() ? 1.0f : -1.0f);
    b.finite = b.finite && std::isfinite(b.scales[i]);
    b.zeros[i] = static_cast<std::uint8_t>(in.in(0, 15));
  }
  b.codes.resize(static_cast<std::size_t>(rows) * cols);
  b.values.resize(b.codes.size());
  for (std::size_t i = 0; i < b.codes.size(); ++i) {
    b.codes[i] = static_cast<std::uint8_t>(type == StorageType::q4 ? in.in(0, 15) : in.u8());
    const std::size_t block = (i / cols) * per_row + (i % cols) / 32;
    const float code = type == StorageType::q4 ? static_cast<float>(b.codes[i] - b.zeros[block]) : static_cast<float>(static_cast<std::int8_t>(b.codes[i]));
    b.values[i] = code * b.scales[block];
  }
  return b;
}

struct Mask {
  std::vector<std::uint8_t> boolean;
  std::vector<float> additive;
  MaskArg arg;
};

// A mask of `shape`: none, boolean (about a third masked) or additive (with -inf entries).
Mask make_mask(Bytes& in, std::vector<int> shape, bool* non_finite) {
  Mask m;
  const int kind = in.in(0, 2);
  if (kind == 0) return m;
  std::size_t n = 1;
  for (int d : shape) n *= static_cast<std::size_t>(d);
  if (kind == 1) {
    m.boolean.resize(n);
    for (auto& x : m.boolean) x = in.u8() % 3 == 0;
    m.arg = {MaskKind::kBoolean, m.boolean.data(), shape};
  } else {
    m.additive.resize(n);
    for (auto& x : m.additive) x = in.u8() % 4 == 0 ? -std::numeric_limits<float>::infinity() : in.value(non_finite);
    m.arg = {MaskKind::kAdditive, m.additive.data(), shape};
  }
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  webattention::fuzz::limit_threads_from_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  MhaConfig c;
  c.weights_dtype = fuzz::draw_storage_type(in, &StorageTypeInfo::weights);
  fuzz::draw_activations(in, c);
  const bool f16_source = in.coin();
  c.num_heads = in.in(1, 4);
  const bool free_dims = in.coin();
  c.head_dim = free_dims ? in.in(1, 9) : in.in(1, 6);
  c.value_head_dim = free_dims ? in.in(1, 9) : 0;
  c.embed_dim = free_dims ? in.in(1, 20) : c.head_dim * c.num_heads;
  if (!free_dims) c.head_dim = 0;
  if (in.coin()) {
    c.kdim = in.in(1, 20);
    c.vdim = in.in(1, 20);
  }
  fuzz::draw_score_options(in, c);
  const int dk = free_dims ? c.head_dim : c.embed_dim / c.num_heads;
  if (dk >= 2 && in.coin()) fuzz::draw_rotary(in, c, dk);
  const int B = in.in(1, 3), L = in.in(1, 20);
  const bool with_ids = c.rotary_dim > 0 && in.coin();  // position ids need S = L
  const int S = with_ids ? L : in.coin() ? in.in(1, 20) : in.in(1, 300);
  const int H = c.num_heads;
  const int zero_head = c.qk_norm && in.coin() ? in.in(0, H - 1) : -1;
  bool non_finite = false;

  const std::unique_ptr<MultiHeadAttention> module = fuzz::module_or_refused(c);
  if (!module) return 0;  // an option value the core refuses (fuzz_options.h draws some)
  MultiHeadAttention& mha = *module;
  reference::MhaParameters params;
  const bool quantised_source = (c.weights_dtype == StorageType::i8 || c.weights_dtype == StorageType::q4) && in.coin();
  for (const auto& spec : mha.parameter_specs()) {
    if (quantised_source && spec.shape.size() == 2) {
      Blocks b = draw_blocks(in, spec.shape[0], spec.shape[1], c.weights_dtype);
      try {
        mha.load_quantised_parameter(spec.name, {b.codes.data(), b.scales.data(), b.zeros.data()}, b.codes.size(), c.weights_dtype);
        if (!b.finite) {
          std::fprintf(stderr, "mha_fuzz: a non-finite scale was accepted\n");
          std::abort();
        }
      } catch (const StateDictError&) {
        if (b.finite) throw;
        return 0;  // refused, as it must be
      }
      params.entries.emplace_back(spec.name, std::move(b.values));
      continue;
    }
    std::vector<std::uint16_t> bits(f16_source ? spec.size() : 0);
    bool entry_non_finite = false;
    std::vector<float> values = fuzz::entry_values(in, spec, &entry_non_finite);
    if (zero_head >= 0) fuzz::zero_qk_head(spec, values, mha.config(), zero_head);
    for (std::size_t i = 0; i < bits.size(); ++i) values[i] = storage::f16_to_f32(bits[i] = storage::f32_to_f16(values[i]));
    // What is loaded: a zeroed head may have dropped a NaN, a huge sink as f16 is Inf.
    entry_non_finite = std::any_of(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    non_finite = non_finite || entry_non_finite;
    const bool matrix = spec.shape.size() == 2;
    try {
      if (f16_source) {
        mha.load_parameter(spec.name, bits.data(), bits.size(), StorageType::f16);
      } else if (!load_in_place(mha, spec.name, values)) {
        mha.load_parameter(spec.name, values.data(), values.size());
      }
      if (fuzz::refused_entry(spec, values, c)) {
        std::fprintf(stderr, "mha_fuzz: a non-finite int8 / int4 weight or a +Inf sink was accepted\n");
        std::abort();
      }
    } catch (const StateDictError&) {
      if (!fuzz::refused_entry(spec, values, c)) throw;
      return 0;  // refused, as §10 and §11 say
    }
    if (matrix) values = reference::stored(values, spec.shape[0], spec.shape[1], c.weights_dtype, 32);
    params.entries.emplace_back(spec.name, std::move(values));
  }
  const fuzz::RotaryTable table = fuzz::draw_rotary_table(in, c.rotary_dim / 2, 310, &non_finite);
  if (table.rows > 0) {
    mha.set_rotary_table(table.cos.data(), table.sin.data(), table.rows);
    params.rotary_cos = table.cos, params.rotary_sin = table.sin;
  }
  const std::vector<std::int32_t> ids = with_ids ? fuzz::draw_position_ids(in, static_cast<std::size_t>(B) * L) : std::vector<std::int32_t>{};
  const bool refusal_due = fuzz::positions_refused(ids, table, std::max(L, S) - 1);
  const int E = c.embed_dim, kdim = c.kdim ? c.kdim : E, vdim = c.vdim ? c.vdim : E;
  auto inputs = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = in.value(&non_finite);
    return v;
  };
  const std::vector<float> query = inputs(static_cast<std::size_t>(B) * L * E);
  const std::vector<float> key = inputs(static_cast<std::size_t>(B) * S * kdim);
  const std::vector<float> value = inputs(static_cast<std::size_t>(B) * S * vdim);
  Mask kpm = make_mask(in, {B, S}, &non_finite);
  Mask am = make_mask(in, in.coin() ? std::vector<int>{L, S} : std::vector<int>{B * H, L, S}, &non_finite);

  MhaForwardArgs args;
  args.batch = B;
  args.L = L;
  args.S = S;
  args.query = query.data();
  args.key = key.data();
  args.value = value.data();
  args.key_padding_mask = kpm.arg;
  args.attn_mask = am.arg;
  args.position_ids = ids.empty() ? nullptr : ids.data();
  args.causal = in.coin();
  args.average_weights = in.coin();
  const bool weights = in.coin();
  const std::size_t weight_count = static_cast<std::size_t>(B) * (args.average_weights ? 1 : H) * L * S;
  std::vector<float> out(static_cast<std::size_t>(B) * L * E), w(weights ? weight_count : 0);
  args.output = out.data();
  args.weights = weights ? w.data() : nullptr;

  // A mask of the wrong shape is refused, and the module still runs afterwards.
  if (in.u8() % 8 == 0 && kpm.arg.kind != MaskKind::kNone && !refusal_due) {
    MhaForwardArgs bad = args;
    bad.key_padding_mask.shape = {B, S + 1};
    try {
      mha.forward(bad);
      std::fprintf(stderr, "mha_fuzz: a [B, S + 1] key padding mask was accepted\n");
      std::abort();
    } catch (const ShapeError&) {
    }
  }

  if (fuzz::refused_as_due(refusal_due, "mha_fuzz", [&] { mha.forward(args); })) return 0;
  if (non_finite) return 0;
  std::vector<float> expected_out(out.size()), expected_w(w.size());
  args.output = expected_out.data();
  args.weights = weights ? expected_w.data() : nullptr;
  // int8 activations: the heads' output entering out_proj is float32 here and float64 in the
  // reference, apart by about the output's tolerance (1e-3 relative) where the options push the
  // scores far; a value that close to a rounding boundary may take the neighbouring code.
  constexpr double kAmbiguousCode = 0.25;  // 0.25 of a step = 2e-3 of the block's largest value
  reference::Sensitivity sensitivity;
  reference::mha_forward(c, params, args, &sensitivity, kAmbiguousCode);
  // A query or key head whose projection cancels to almost nothing, normalised by qk-norm with a
  // tiny eps, is the sign of float32 rounding (a fuzz find: int8 activations, head_dim 1,
  // 0.25 · 0.4375 - 0.109375 is 0 in float64 and 1e-9 in float32, and eps 1e-30 made that
  // ±q_norm.weight). A gain of 1e3 leaves float32's rounding below 1e-4 of a normalised head.
  constexpr double kQkNormGainChecked = 1e3;
  if (sensitivity.qk_norm_gain > kQkNormGainChecked) return 0;
  check_close("output", out, expected_out, sensitivity.out_slack, static_cast<std::size_t>(E));
  check_close("weights", w, expected_w);
  return 0;
}
