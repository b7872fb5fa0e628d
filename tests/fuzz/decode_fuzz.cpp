// libFuzzer harness of incremental decoding (docs/attention-math.md §7-§9), built with ASan + UBSan
// (scripts/fuzz.sh). Each input is read as a grouped-query / rotary module, a sequence, a sliding
// window (or none), a key-padding mask, a way of cutting the sequence into chunks (up to 160
// positions: a window's ring of W + 63 slots wraps), each chunk maybe with a verification mask
// among its rows, weights averaged, per head or none, and for a rotary module maybe position ids.
// Checks: nothing the sanitizers see; the chunks fed to a KV cache give the rows of one plain
// forward over the whole sequence with the causal window as an additive mask (outputs and weights);
// appending past max_length is a CacheError that leaves the cache; reset() then a second pass gives
// the same bits, and with two batch rows one of the passes feeds them one call per row (each on its
// cache row alone, MhaForwardArgs::rows), so the rows' lengths differ between calls. Inputs with NaN or infinities run for memory safety only. Weights and the cache
// come in every storage type (docs/attention-math/storage.md §11); a narrow cache is compared with one
// cache of its type fed the whole sequence in one call (the rows it stores are the same whatever
// the chunks), the f32 cache with the plain forward. Issue 20's options come from fuzz_options.h
// (int8 activations with integer weights, scale, softcap, sinks, qk-norm with all-zero heads, a
// bias per projection, RoPE scaling or a given table, position ids): a refusal of positions past
// the table or of negative ids must come exactly where it is due, for the plain forward and for the
// first chunk that reaches them, and must leave the cache as it was. With a window, position ids
// move it (§9, draft verification: trees of drafts at their depths, siblings, ids ahead or below
// the cache's length), and the plain forward's mask follows them (fuzz_window.h); a chunk the core
// must refuse for them (longer than one pass of the ring, or an id below its first row) is a
// CacheError naming position_ids exactly there.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_bytes.h"
#include "fuzz_options.h"
#include "fuzz_threads.h"
#include "fuzz_window.h"
#include "webattention/errors.h"
#include "webattention/kv_cache.h"
#include "webattention/multihead_attention.h"

namespace {

using namespace webattention;
using fuzz::Bytes;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "decode_fuzz: %s\n", what);
  std::abort();
}

// got within 1e-4 + 1e-4·|expected| of expected, plus allowance[i % allowance.size()] where given.
void check_close(const char* what, const float* got, const float* expected, std::size_t n,
                 const std::vector<double>& allowance = {}) {
  for (std::size_t i = 0; i < n; ++i) {
    const double a = got[i], b = expected[i];
    const double extra = allowance.empty() ? 0.0 : allowance[i % allowance.size()];
    if (!(std::fabs(a - b) <= 1e-4 + 1e-4 * std::fabs(b) + extra)) {
      std::fprintf(stderr, "decode_fuzz: %s[%zu] = %g, expected %g\n", what, i, a, b);
      std::abort();
    }
  }
}

// Under int8 activations (§11) the heads' output entering out_proj is quantised per block, and the
// chunks' attention and the plain forward's may differ in its last bits, so that a value near a
// rounding boundary takes neighbouring codes in the two (mha_fuzz bounds that from the
// reference's heads; here there is none). Per output column n: Σ_k |W_O[n, k]| · d_max, d_max a
// bound on any block's step: |heads| ≤ max |V| (each head's output is a weighted mean of value
// rows), and |V| ≤ Σ_k |x_k| · |W[j, k]| + |bias| over every input projection's rows j; 1.25 for the
// quantised weights and inputs (an int4 block's values move by up to 1/14 of its largest).
std::vector<double> act8_allowance(const std::vector<std::pair<ParameterSpec, std::vector<float>>>& loaded,
                                   const std::vector<float>& x, int E) {
  double v_max = 0.0, bias_max = 0.0;
  const std::vector<float>* out_w = nullptr;
  int out_rows = 0;
  for (const auto& [spec, values] : loaded) {
    if (spec.name == "out_proj.weight") {
      out_w = &values, out_rows = spec.shape[0];
    } else if (spec.shape.size() == 2 && spec.shape[1] == E) {
      for (std::size_t r = 0; r < x.size() / E; ++r)
        for (int j = 0; j < spec.shape[0]; ++j) {
          double sum = 0.0;
          for (int k = 0; k < E; ++k) sum += std::fabs(x[r * E + k]) * std::fabs(values[static_cast<std::size_t>(j) * E + k]);
          v_max = std::max(v_max, sum);
        }
    } else if (spec.name.find("bias") != std::string::npos && spec.name != "out_proj.bias") {
      for (float b : values) bias_max = std::max(bias_max, static_cast<double>(std::fabs(b)));
    }
  }
  const double step = 1.25 * 1.25 * (v_max + bias_max) / 127.0;
  std::vector<double> allowance(static_cast<std::size_t>(out_rows), 0.0);
  const std::size_t width = out_w->size() / out_rows;
  for (int n = 0; n < out_rows; ++n)
    for (std::size_t k = 0; k < width; ++k) allowance[n] += std::fabs((*out_w)[n * width + k]) * step;
  return allowance;
}

// One input as drawn: the module and its options, the sequence, its chunks with their ids and
// masks, and the plain forward's results.
struct Case {
  MhaConfig c;
  StorageType cache_dtype = StorageType::f32;
  std::unique_ptr<MultiHeadAttention> mha;
  int B = 1, T = 1, window = 0, E = 1, H = 1, wh = 1;
  bool non_finite = false, weights = false, average = false, full_refused = false;
  std::vector<float> x, expected, expected_w, verify;
  std::vector<double> allowance;  // act8_allowance(), int8 activations only
  std::vector<std::uint8_t> padding;
  std::vector<std::int32_t> ids;
  fuzz::RotaryTable table;
  KvCacheConfig cache_config;
  std::vector<int> chunks;
  std::vector<std::vector<float>> chunk_masks;
  fuzz::SequenceMask mask;  // the plain forward's (fuzz_window.h)
};

// The module, its weights and the sequence; false where the core refuses an option or a weight.
bool draw_module(Bytes& in, Case& k) {
  MhaConfig& c = k.c;
  c.weights_dtype = fuzz::draw_storage_type(in, &StorageTypeInfo::weights);
  fuzz::draw_activations(in, c);
  k.cache_dtype = fuzz::draw_storage_type(in, &StorageTypeInfo::cache);
  const int groups[] = {1, 2, 3, 4};
  c.num_kv_heads = in.in(1, 3);
  c.num_heads = c.num_kv_heads * groups[in.in(0, 3)];
  c.head_dim = 2 * in.in(1, 5);
  c.value_head_dim = in.in(1, 9);
  c.embed_dim = in.in(1, 12);
  fuzz::draw_score_options(in, c);
  if (in.coin()) fuzz::draw_rotary(in, c, c.head_dim);
  k.B = in.in(1, 2), k.T = in.coin() ? in.in(1, 20) : in.in(1, 160);
  k.window = in.coin() ? in.in(1, 9) : 0;
  k.E = c.embed_dim, k.H = c.num_heads;
  const int zero_head = c.qk_norm && in.coin() ? in.in(0, k.H - 1) : -1;
  k.mha = fuzz::module_or_refused(c);
  if (!k.mha) return false;  // an option value the core refuses (fuzz_options.h draws some)
  std::vector<std::pair<ParameterSpec, std::vector<float>>> loaded;  // for act8_allowance()
  for (const auto& spec : k.mha->parameter_specs()) {
    bool entry_non_finite = false;
    std::vector<float> values = fuzz::entry_values(in, spec, &entry_non_finite);
    if (zero_head >= 0) fuzz::zero_qk_head(spec, values, k.mha->config(), zero_head);
    try {
      k.mha->load_parameter(spec.name, values.data(), values.size());
    } catch (const StateDictError&) {
      if (!fuzz::refused_entry(spec, values, c)) throw;
      return false;  // a non-finite int8 / int4 weight (§11) or a +Inf sink (§10) is refused
    }
    k.non_finite = k.non_finite || entry_non_finite;
    if (c.activations == StorageType::i8) loaded.emplace_back(spec, std::move(values));
  }
  k.x.resize(static_cast<std::size_t>(k.B) * k.T * k.E);
  for (auto& v : k.x) v = in.value(&k.non_finite);
  if (c.activations == StorageType::i8 && !k.non_finite) k.allowance = act8_allowance(loaded, k.x, k.E);
  return true;
}

// Padding, weights, position ids, a rotary table, the cache and the chunks with their masks.
void draw_chunks(Bytes& in, Case& k) {
  const int B = k.B, T = k.T;
  if (in.coin()) {
    k.padding.resize(static_cast<std::size_t>(B) * T);
    for (auto& p : k.padding) p = in.u8() % 4 == 0;
  }
  k.weights = in.coin(), k.average = in.coin();
  k.wh = k.average ? 1 : k.H;
  // position_ids (§8) for a rotary module: without a window, rows at positions of their own
  // (repeated, out of order, far, the largest int32, -1), the same ids for the plain forward and
  // the chunks; with one, drawn chunk by chunk below (fuzz_window.h), since the window counts in
  // them. And maybe a given table, short of the positions now and then.
  const bool ids = k.c.rotary_dim > 0 && in.coin();
  if (ids && !k.window) k.ids = fuzz::draw_position_ids(in, static_cast<std::size_t>(B) * T);
  k.table = fuzz::draw_rotary_table(in, k.c.rotary_dim / 2, 170, &k.non_finite);
  if (k.table.rows > 0) k.mha->set_rotary_table(k.table.cos.data(), k.table.sin.data(), k.table.rows);
  k.cache_config = {B, k.window && in.coin() ? 0 : T, k.window, k.cache_dtype};
  for (int at = 0; at < T;) k.chunks.push_back(std::min(T - at, in.coin() ? 1 : in.in(1, 90))), at += k.chunks.back();
  // Verification masks (§9): a chunk may carry an additive mask among its own rows (some −∞), on
  // top of the causal window; with window ids, a tree of drafts' ancestor mask.
  k.chunk_masks.resize(k.chunks.size());
  for (std::size_t n = 0; n < k.chunks.size(); ++n) {
    if (!in.coin()) continue;
    const std::size_t rows = static_cast<std::size_t>(k.chunks[n]);
    std::uint32_t state = in.u8() | static_cast<std::uint32_t>(in.u8()) << 8;
    k.chunk_masks[n].resize(rows * rows);
    for (float& e : k.chunk_masks[n]) {
      state = state * 1664525u + 1013904223u;
      const std::uint32_t r = state >> 24;
      e = r % 5 == 0 ? -std::numeric_limits<float>::infinity() : (static_cast<float>(r) - 128.0f) / 64.0f;
    }
  }
  if (ids && k.window) k.ids = fuzz::draw_window_ids(in, B, T, k.chunks, k.chunk_masks);
  // The chunks' masks as blocks of one [T, T] mask, zero outside them (a whole-sequence call on a
  // cache takes it as its verification mask), and the plain forward's mask over it.
  k.verify.assign(static_cast<std::size_t>(T) * T, 0.0f);
  for (std::size_t n = 0, at = 0; n < k.chunks.size(); at += static_cast<std::size_t>(k.chunks[n]), ++n) {
    const std::size_t rows = static_cast<std::size_t>(k.chunks[n]);
    for (std::size_t e = 0; e < k.chunk_masks[n].size(); ++e) k.verify[(at + e / rows) * T + at + e % rows] = k.chunk_masks[n][e];
  }
  k.mask = fuzz::sequence_mask(B, k.H, T, k.window, k.chunks, k.ids, k.verify);
}

// The expected rows: one plain forward over the whole sequence (an f32 cache), or one call of a
// cache of the narrow type over it (that type's rows are the same whatever the chunks). With
// window ids that cache has no window, and the plain forward's mask as its verification mask.
void plain_forward(Case& k) {
  MhaForwardArgs full;
  full.batch = k.B;
  full.L = full.S = k.T;
  full.query = full.key = full.value = k.x.data();
  full.attn_mask = {MaskKind::kAdditive, k.mask.values.data(), k.mask.shape};
  if (!k.padding.empty()) full.key_padding_mask = {MaskKind::kBoolean, k.padding.data(), {k.B, k.T}};
  k.expected.resize(k.x.size());
  k.expected_w.resize(k.weights ? static_cast<std::size_t>(k.B) * k.wh * k.T * k.T : 0);
  full.output = k.expected.data();
  full.weights = k.weights ? k.expected_w.data() : nullptr;
  full.average_weights = k.average;
  full.position_ids = k.ids.empty() ? nullptr : k.ids.data();
  const bool window_ids = k.window && !k.ids.empty();
  k.full_refused = fuzz::refused_as_due(fuzz::positions_refused(k.ids, k.table, k.T - 1), "decode_fuzz", [&] {
    if (k.cache_dtype == StorageType::f32) return k.mha->forward(full);
    if (!window_ids) full.attn_mask = {MaskKind::kAdditive, k.verify.data(), {k.T, k.T}};
    auto whole = k.mha->create_cache(window_ids ? KvCacheConfig{k.B, k.T, 0, k.cache_dtype} : k.cache_config);
    k.mha->forward(full, *whole);
  });
}

// Feeds batch rows [b0, b0 + nb) of chunk `n` (rows [at, at + its length)) to the cache, their
// outputs into `got`, and checks their weights; false where the core refuses it as due (the cache's
// rows left as they were). Fewer rows than the batch go as a call on those cache rows alone
// (MhaForwardArgs::rows), so the other rows' lengths differ meanwhile.
bool run_rows(Case& k, KvCache& cache, std::size_t n, int at, int b0, int nb, std::vector<float>& got) {
  const int T = k.T, E = k.E, rows = k.chunks[n];
  std::vector<float> part(static_cast<std::size_t>(nb) * rows * E), out(part.size());
  std::vector<std::uint8_t> pad(k.padding.empty() ? 0 : static_cast<std::size_t>(nb) * (at + rows));
  std::vector<std::int32_t> part_ids(k.ids.empty() ? 0 : static_cast<std::size_t>(nb) * rows);
  std::vector<std::int32_t> row_ids(k.ids.empty() ? 0 : static_cast<std::size_t>(nb) * T);  // the call's rows of k.ids
  std::vector<std::int32_t> cache_rows;
  for (int i = 0; i < nb; ++i) {
    const std::size_t b = static_cast<std::size_t>(b0 + i);
    cache_rows.push_back(static_cast<std::int32_t>(b));
    std::copy_n(k.x.begin() + (b * T + at) * E, rows * E, part.begin() + static_cast<std::size_t>(i) * rows * E);
    if (!pad.empty()) std::copy_n(k.padding.begin() + b * T, at + rows, pad.begin() + static_cast<std::size_t>(i) * (at + rows));
    if (!part_ids.empty()) std::copy_n(k.ids.begin() + b * T + at, rows, part_ids.begin() + static_cast<std::size_t>(i) * rows);
    if (!row_ids.empty()) std::copy_n(k.ids.begin() + b * T, T, row_ids.begin() + static_cast<std::size_t>(i) * T);
  }
  std::vector<float> w(k.weights ? static_cast<std::size_t>(nb) * k.wh * rows * (at + rows) : 0);
  MhaForwardArgs a;
  a.batch = nb;
  a.L = a.S = rows;
  a.query = a.key = a.value = part.data();
  if (!pad.empty()) a.key_padding_mask = {MaskKind::kBoolean, pad.data(), {nb, at + rows}};
  a.output = out.data();
  a.weights = k.weights ? w.data() : nullptr;
  a.average_weights = k.average;
  a.position_ids = part_ids.empty() ? nullptr : part_ids.data();
  if (nb < k.B) a.rows = cache_rows.data();
  if (!k.chunk_masks[n].empty()) a.attn_mask = {MaskKind::kAdditive, k.chunk_masks[n].data(), {rows, rows}};
  // A refusal of positions (a negative id, one past a table) comes first, then one of the window's.
  const bool window_due = k.window && fuzz::window_refused(row_ids, nb, T, at, rows,
                                                                 ring_geometry(k.cache_config.max_length, k.window).rows_per_pass);
  bool window_refused = false;
  const bool refused = fuzz::refused_as_due(fuzz::positions_refused(part_ids, k.table, at + rows - 1), "decode_fuzz", [&] {
    window_refused = fuzz::window_refused_as_due(window_due, "decode_fuzz", [&] { k.mha->forward(a, cache); });
  });
  if (refused || window_refused) {
    for (int b = b0; b < b0 + nb; ++b)
      if (cache.row_length(b) != at) fail("a refused append changed the cache's length");
    return false;
  }
  for (int i = 0; i < nb; ++i)
    std::copy_n(out.begin() + static_cast<std::size_t>(i) * rows * E, rows * E, got.begin() + (static_cast<std::size_t>(b0 + i) * T + at) * E);
  if (k.weights && !k.non_finite && !k.full_refused) {
    for (int g = 0; g < nb * k.wh; ++g)
      for (int i = 0; i < rows; ++i)
        check_close("weights", w.data() + (static_cast<std::size_t>(g) * rows + i) * (at + rows),
                    k.expected_w.data() + (static_cast<std::size_t>(b0 * k.wh + g) * T + at + i) * T, at + rows);
  }
  return true;
}

// Chunk `n` for every batch row: one call, or (row_by_row) one call per row, row 0 first.
bool run_chunk(Case& k, KvCache& cache, std::size_t n, int at, bool row_by_row, std::vector<float>& got) {
  if (!row_by_row) return run_rows(k, cache, n, at, 0, k.B, got);
  for (int b = 0; b < k.B; ++b)
    if (!run_rows(k, cache, n, at, b, 1, got)) return false;
  return true;
}

// A full cache refuses one more position (a CacheError) and keeps its length.
void check_full(const Case& k, KvCache& cache) {
  MhaForwardArgs a;
  a.batch = k.B;
  a.L = a.S = 1;
  std::vector<float> one(static_cast<std::size_t>(k.B) * k.E), out(one.size());
  a.query = a.key = a.value = one.data();
  a.output = out.data();
  try {
    k.mha->forward(a, cache);
    fail("an append past max_length was accepted");
  } catch (const CacheError&) {
  }
  if (cache.length() != k.T) fail("a refused append changed the length");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  webattention::fuzz::limit_threads_from_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  Case k;
  if (!draw_module(in, k)) return 0;
  draw_chunks(in, k);
  // With two batch rows, one pass feeds them call by call and the other row by row (each row's
  // call on its cache row alone): the same bits, whichever comes first.
  const bool row_by_row_first = k.B > 1 && in.coin();
  plain_forward(k);
  auto cache = k.mha->create_cache(k.cache_config);
  std::vector<float> first;
  for (int pass = 0; pass < 2; ++pass) {
    const bool row_by_row = k.B > 1 && (pass == 0) == row_by_row_first;
    std::vector<float> got(k.expected.size());
    int at = 0;
    for (std::size_t n = 0; n < k.chunks.size(); at += k.chunks[n], ++n) {
      if (run_chunk(k, *cache, n, at, row_by_row, got)) continue;
      if (pass == 1) fail("a chunk the first pass took was refused in the second");
      return 0;
    }
    if (k.full_refused) fail("the plain forward was refused, no chunk was");
    if (cache->length() != k.T) fail("cache length after the sequence");
    if (!k.non_finite) check_close("output", got.data(), k.expected.data(), got.size(), k.allowance);
    if (pass == 0) {
      first = got;
      if (cache->config().max_length == k.T) check_full(k, *cache);
      cache->reset();
    } else if (!std::equal(first.begin(), first.end(), got.begin(), [](float a, float b) {
                 return a == b || (std::isnan(a) && std::isnan(b));
               })) {
      fail(k.B > 1 ? "a second pass after reset(), row by row where the first was not or the reverse, differs"
                   : "a second pass after reset() differs");
    }
  }
  return 0;
}
