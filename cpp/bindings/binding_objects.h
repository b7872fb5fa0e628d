// The objects and argument structs the binding (embind.cpp) registers: the module and cache
// handles JS holds, and each call's arguments and results as Embind hands them over.
// Conventions:
// - Tensors cross as WASM heap addresses that JS has filled (no per-element conversion either
//   way); outputs are read back from heap addresses the call returns or was given.
// - Methods that can fail run in status() (below, over error_wire.h's guarded()) and return 0,
//   or 1 with the error text left for takeError(): no C++ exception reaches JS, and once JS has
//   taken the text a failed call has left nothing allocated. (Results that carry their own
//   error field, read back rarely, keep it there.)
#pragma once

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <vector>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "error_wire.h"
#include "parallel.h"
#include "webattention/attention.h"
#include "webattention/errors.h"
#include "webattention/kv_cache.h"
#include "webattention/multihead_attention.h"
#include "webattention/storage_type.h"

namespace webattention {
namespace bindings {
template <typename T>
T* at(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

// The storage types each argument takes (their rows' flags in kStorageTypes): the enum's values
// are all the spellings, the core refuses the ones an argument has no use for (a ConfigError
// naming it).
inline StorageType allowed(StorageType type, const char* argument, bool StorageTypeInfo::*use) {
  return parse_storage_type(storage_type_name(type), argument, use);
}
constexpr bool StorageTypeInfo::*kWeightTypes = &StorageTypeInfo::weights;
constexpr bool StorageTypeInfo::*kSourceTypes = &StorageTypeInfo::source;
constexpr bool StorageTypeInfo::*kCacheTypes = &StorageTypeInfo::cache;

// A failing call returns 1 and leaves its error text ("<ErrorClass>|<argument>|<message>",
// error_wire.h) here for JS to take (takeError()); a call that succeeds returns 0. A number, not
// the text itself: Embind hands a returned std::string over through the heap (a malloc in C++, a
// free from JS) on every call, a failing one or not.
inline std::string& last_error() {
  static std::string text;
  return text;
}
template <typename F>
int status(F&& body) {
  std::string error = guarded(std::forward<F>(body));
  if (error.empty()) return 0;
  last_error() = std::move(error);
  return 1;
}
// The last failed call's error text, once (its storage freed: WASM memory is as before the call).
inline std::string take_error() {
  std::string text;
  text.swap(last_error());
  return text;
}

// A call's arguments come as positional numbers and addresses, not as a value_object: Embind
// converts a value_object field by field (a call into WASM each: ~3 µs for a forward's 25, a
// sixth of a small call), where a bound function's plain numbers cost ~0.3 µs together. JS
// names them in one place (web/src/core_binding.js), C++ here.

// A mask: its kind, where its data lies, and its shape (`rank` of the three dims used; address
// 0 and rank 0 for none).
struct MaskWire {
  MaskKind kind = MaskKind::kNone;
  std::uintptr_t address = 0;
  int rank = 0;
  int shape0 = 0, shape1 = 0, shape2 = 0;

  MaskArg arg() const {
    const int dims[] = {shape0, shape1, shape2};
    return {kind, at<const void>(address), {dims, dims + std::clamp(rank, 0, 3)}};
  }
};

// MhaBinding::setCall(): MhaForwardArgs with heap addresses. `output` is [B, L, E] for
// forward(), the heads [B, L, (head_end − head_begin)·d_v] for forwardHeads().
struct ForwardWire {
  int batch = 1, L = 0, S = 0;
  std::uintptr_t query = 0, key = 0, value = 0;
  MaskWire key_padding_mask, attn_mask;
  bool causal = false;
  std::uintptr_t output = 0, weights = 0;
  bool average_weights = true;
  std::uintptr_t position_ids = 0;  // [B, L] int32, or 0 for the rows' own positions
  std::uintptr_t rows = 0;  // [B] int32: the cache rows of a cached call (forwardCachedRows()), or 0 for all

  MhaForwardArgs args() const {
    MhaForwardArgs a;
    a.batch = batch, a.L = L, a.S = S;
    a.query = at<const float>(query), a.key = at<const float>(key), a.value = at<const float>(value);
    a.key_padding_mask = key_padding_mask.arg();
    a.attn_mask = attn_mask.arg();
    a.causal = causal;
    a.output = at<float>(output), a.weights = at<float>(weights);
    a.average_weights = average_weights;
    a.position_ids = at<const std::int32_t>(position_ids);
    a.rows = at<const std::int32_t>(rows);
    return a;
  }
};

// sdpa(): SdpaArgs with heap addresses; `has_scale` false means 1/√dk (never a scale of 0).
struct SdpaWire {
  int N = 1, L = 0, S = 0, dk = 0, dv = 0;
  std::uintptr_t q = 0, k = 0, v = 0;
  MaskWire attn_mask;
  bool causal = false;
  bool has_scale = false;
  double scale = 0.0;
  std::uintptr_t output = 0, weights = 0;

  SdpaArgs args() const {
    SdpaArgs a;
    a.N = N, a.L = L, a.S = S, a.dk = dk, a.dv = dv;
    a.q = at<const float>(q), a.k = at<const float>(k), a.v = at<const float>(v);
    a.attn_mask = attn_mask.arg();
    a.causal = causal;
    if (has_scale) a.scale = static_cast<float>(scale);
    a.out = at<float>(output), a.weights = at<float>(weights);
    return a;
  }
};

// head_bilinear_form(): the numbers, and the heap addresses of the matrix [rows, cols] (f32) and
// of its singular values (f64, largest first), valid until the module's next call.
struct BilinearWire {
  std::string error;
  int rows = 0, cols = 0, rank = 0;
  double factored_parameters = 0, full_parameters = 0;
  std::uintptr_t matrix = 0, singular_values = 0;
  int singular_value_count = 0;
};

struct RingWire {
  std::string error;
  double capacity = 0, rows_per_pass = 0;
};

// A KV cache: empty until an Mha's createCache() fills it, then used only with that module (the
// core checks; JS also keeps the pairing).
class KvCacheBinding {
 public:
  double length() const { return cache ? static_cast<double>(cache->length()) : 0.0; }
  double rowLength(int b) const { return cache ? static_cast<double>(cache->row_length(b)) : 0.0; }  // b < batch
  void reset() { if (cache) cache->reset(); }
  // Positions [first, first + count) into k [B, h_kv, count, d_k] and v [B, h_kv, count, d_v].
  int read(double first, int count, std::uintptr_t k, std::uintptr_t v) {
    return status([&] { storage().read(static_cast<std::int64_t>(first), count, at<float>(k), at<float>(v)); });
  }
  // Drops positions >= length (KvCache::truncate()): a CacheError naming `length` if it cannot;
  // truncateRows(): one float64 per row at `lengths` (KvCache::truncate_rows()).
  int truncate(double length) {
    return status([&] { storage().truncate(static_cast<std::int64_t>(length)); });
  }
  int truncateRows(std::uintptr_t lengths) {
    return status([&] {
      const double* given = at<const double>(lengths);
      storage().truncate_rows(std::vector<std::int64_t>(given, given + storage().config().batch).data());
    });
  }
  // Fills `target` (a new, empty handle) with a copy of this cache (KvCache::fork()).
  int fork(KvCacheBinding& target) {
    return status([&] { target.cache = storage().fork(); });
  }
  KvCache& storage() {
    if (!cache) throw CacheError("cache", "cache: has no storage (createCache() failed?)");
    return *cache;
  }
  std::unique_ptr<KvCache> cache;
};

// One MultiHeadAttention: empty until configure() succeeds.
class MhaBinding {
 public:
  int configure(const MhaConfig& config) {
    return status([&] {
      MhaConfig c = config;
      c.weights_dtype = allowed(c.weights_dtype, "weightsDtype", kWeightTypes);
      mha = std::make_unique<MultiHeadAttention>(c);
    });
  }

  // [{name, shape}] in state_dict() order as JSON (the module's own identifiers: nothing to escape), appended
  // into one reserved block: temporaries allocate, and a cold start's allocations would bring dlmalloc to
  // V8's optimising compile during the first forward (docs/performance/memory_and_startup.md#cold-start).
  std::string parameterSpecs() const {
    std::string json = "[";
    json.reserve(64 * mha->parameter_specs().size());
    for (const auto& spec : mha->parameter_specs()) {
      json.append(json.size() > 1 ? ",{\"name\":\"" : "{\"name\":\"").append(spec.name).append("\",\"shape\":[");
      for (std::size_t i = 0; i < spec.shape.size(); ++i) json.append(i ? "," : "").append(std::to_string(spec.shape[i]));
      json += "]}";
    }
    return std::move(json += ']');
  }

  int setRotaryTable(std::uintptr_t cos, std::uintptr_t sin, int positions) {
    return status([&] { mha->set_rotary_table(at<const float>(cos), at<const float>(sin), positions); });
  }

  // `count` elements of `source` (f32, or f16 / bf16 bit patterns) at `data`, converted to the
  // module's storage.
  int loadParameter(const std::string& name, std::uintptr_t data, double count, StorageType source) {
    return status([&] {
      mha->load_parameter(name, at<const void>(data), static_cast<std::size_t>(count),
                          allowed(source, "sourceDtype", kSourceTypes));
    });
  }

  // A weight matrix entry quantised already (load_quantised_parameter()): `count` codes, the
  // scales and, for int4, the zero points at those addresses (zeros 0 for int8).
  int loadQuantised(const std::string& name, std::uintptr_t codes, std::uintptr_t scales, std::uintptr_t zeros, double count,
                    StorageType type) {
    return status([&] {
      const MultiHeadAttention::QuantisedEntry entry{at<const void>(codes), at<const float>(scales),
                                                     zeros ? at<const std::uint8_t>(zeros) : nullptr};
      mha->load_quantised_parameter(name, entry, static_cast<std::size_t>(count), type);
    });
  }

  // Where begin_load_in_place() wants the entry's parts: `out` (kInPlaceDoubles doubles JS
  // reads back) receives their count, then (address, offset, count) per part; a count of 0 means
  // "load it with loadParameter() instead". Numbers into JS's array, not a value_object: its
  // fields would cost every cold start their registration.
  static constexpr int kInPlaceParts = 3;  // in_proj_weight's Q, K and V at most
  int beginLoadInPlace(const std::string& name, double count, StorageType source, std::uintptr_t out) {
    return status([&] {
      const auto parts = mha->begin_load_in_place(name, static_cast<std::size_t>(count),
                                                  allowed(source, "sourceDtype", kSourceTypes));
      double* o = at<double>(out);
      const std::size_t n = std::min<std::size_t>(parts.size(), kInPlaceParts);
      o[0] = static_cast<double>(n);
      for (std::size_t i = 0; i < n; ++i) {
        o[1 + 3 * i] = static_cast<double>(reinterpret_cast<std::uintptr_t>(parts[i].to));
        o[2 + 3 * i] = static_cast<double>(parts[i].offset);
        o[3 + 3 * i] = static_cast<double>(parts[i].count);
      }
    });
  }

  int finishLoadInPlace() {
    return status([&] { mha->finish_load_in_place(); });
  }

  // After a load that ran out of memory part-way: a module holding a mix of two state dicts
  // must not compute.
  void forgetParameters() { mha->forget_parameters(); }

  // Entry `name` as loaded, widened to f32: `count` floats at `out`.
  int readParameter(const std::string& name, std::uintptr_t out, double count) {
    return status([&] { mha->read_parameter(name, at<float>(out), static_cast<std::size_t>(count)); });
  }

  // RoPE's θ_j (rotary_dim / 2 doubles) into `out`; returns how many: the test that ties them to
  // the JS rule (web/src/webgpu/rotary_frequencies.js) reads them.
  int rotaryThetas(std::uintptr_t out) const {
    const auto& theta = mha->rotary_thetas();
    std::copy(theta.begin(), theta.end(), at<double>(out));
    return static_cast<int>(theta.size());
  }

  BilinearWire headBilinearForm(int head) {
    BilinearWire w;
    w.error = guarded([&] {
      form = mha->head_bilinear_form(head);
      w.rows = form.rows, w.cols = form.cols, w.rank = form.rank;
      w.factored_parameters = static_cast<double>(form.factored_parameters);
      w.full_parameters = static_cast<double>(form.full_parameters);
      w.matrix = reinterpret_cast<std::uintptr_t>(form.matrix.data());
      w.singular_values = reinterpret_cast<std::uintptr_t>(form.singular_values.data());
      w.singular_value_count = static_cast<int>(form.singular_values.size());
    });
    return w;
  }

  // The arguments of the next forward(), forwardHeads() or forwardCached() (JS calls the two
  // back to back): query, key, value [B, L | S, ·], the two masks, then the outputs.
  void setCall(int batch, int L, int S, std::uintptr_t query, std::uintptr_t key, std::uintptr_t value,
               MaskKind kpm_kind, std::uintptr_t kpm, int kpm_rank, int kpm0, int kpm1, int kpm2,
               MaskKind am_kind, std::uintptr_t am, int am_rank, int am0, int am1, int am2, bool causal,
               std::uintptr_t output, std::uintptr_t weights, bool average_weights, std::uintptr_t position_ids) {
    call = {batch, L, S, query, key, value, {kpm_kind, kpm, kpm_rank, kpm0, kpm1, kpm2},
            {am_kind, am, am_rank, am0, am1, am2}, causal, output, weights, average_weights, position_ids};
  }

  int forward() {
    return status([&] { mha->forward(call.args()); });
  }

  int forwardHeads(int head_begin, int head_end) {
    return status([&] { mha->forward_heads(call.args(), head_begin, head_end, at<float>(call.output)); });
  }

  // out [rows, E] = heads [rows, h·d_v] · W_Oᵀ + b_O.
  int projectOutput(std::uintptr_t heads, int rows, std::uintptr_t out) {
    return status([&] { mha->project_output(at<const float>(heads), rows, at<float>(out)); });
  }

  int createCache(KvCacheBinding& target, int batch, int max_length, int window, StorageType dtype) {
    return status([&] {
      KvCacheConfig config{batch, max_length, window};
      config.dtype = allowed(dtype, "dtype", kCacheTypes);
      target.cache = mha->create_cache(config);
    });
  }

  // Cross-attention: `target` (a new, empty handle) holds the encoder's projected key [batch, S,
  // kdim] and value [batch, S, vdim], read-only (MultiHeadAttention::encode()).
  int encode(KvCacheBinding& target, std::uintptr_t key, std::uintptr_t value, int batch, int S, StorageType dtype) {
    return status([&] {
      target.cache = mha->encode(at<const float>(key), at<const float>(value), batch, S, allowed(dtype, "dtype", kCacheTypes));
    });
  }

  // One decoding step: appends the rows to `cache` and attends over it (an encoded cache: attends
  // only).
  int forwardCached(KvCacheBinding& cache) {
    return status([&] { mha->forward(call.args(), cache.storage()); });
  }
  // forwardCached() on the cache rows `rows` lists (int32 [batch], MhaForwardArgs::rows).
  int forwardCachedRows(KvCacheBinding& cache, std::uintptr_t rows) {
    call.rows = rows;
    const int error = forwardCached(cache);
    return call.rows = 0, error;
  }
  // cache.keep(indices): `count` int32 indices at `indices` (MultiHeadAttention::keep()).
  int keepCached(KvCacheBinding& cache, std::uintptr_t indices, int count) {
    return status([&] { mha->keep(cache.storage(), at<const std::int32_t>(indices), count); });
  }

 private:
  std::unique_ptr<MultiHeadAttention> mha;
  ForwardWire call;  // setCall()'s
  BilinearForm form;  // the last headBilinearForm(), which JS reads before the next call
};

// q [N, L, dk], k [N, S, dk], v [N, S, dv], the mask, then the options and the outputs.
inline int sdpa(int N, int L, int S, int dk, int dv, std::uintptr_t q, std::uintptr_t k, std::uintptr_t v,
                        MaskKind mask_kind, std::uintptr_t mask, int mask_rank, int mask0, int mask1, int mask2,
                        bool causal, bool has_scale, double scale, std::uintptr_t output, std::uintptr_t weights) {
  const SdpaWire w{N, L, S, dk, dv, q, k, v, {mask_kind, mask, mask_rank, mask0, mask1, mask2},
                   causal, has_scale, scale, output, weights};
  return status([&] { scaled_dot_product_attention(w.args()); });
}

// The KV cache's storage rule (webattention/kv_cache.h; web/src/kv_ring.js is its JS twin).
inline RingWire kvRingGeometry(int max_length, int window) {
  RingWire w;
  w.error = guarded([&] {
    const RingGeometry g = ring_geometry(max_length, window);
    w.capacity = static_cast<double>(g.capacity);
    w.rows_per_pass = static_cast<double>(g.rows_per_pass);
  });
  return w;
}

// The core's storage-type table (webattention/storage_type.h) as JSON, for the test that ties it
// to its JS twin (web/src/storage/storage_types.js).
inline std::string storageTypeTable() {
  std::string json = "[";
  for (const StorageTypeInfo& t : kStorageTypes) {
    if (json.size() > 1) json += ",";
    json += std::string("{\"name\":\"") + t.name + "\",\"bits\":" + std::to_string(t.bits) + ",\"block\":" +
            std::to_string(t.block) + ",\"weights\":" + (t.weights ? "true" : "false") + ",\"cache\":" +
            (t.cache ? "true" : "false") + ",\"source\":" + (t.source ? "true" : "false") + ",\"activations\":" +
            (t.activations ? "true" : "false") + "}";
  }
  return json + "]";
}

// A JSON array of names (identifiers: nothing in them needs escaping).
inline std::string jsonNames(const char* const* names, int count) {
  std::string json = "[";
  for (int i = 0; i < count; ++i) json += std::string(i ? "," : "") + "\"" + names[i] + "\"";
  return json + "]";
}

// Every state-dict entry name the core knows (state_dict_entries.h), for the JS list's test.
inline std::string stateDictEntryNames() {
  return jsonNames(kStateDictEntryNames, static_cast<int>(StateDictEntry::kCount));
}

// Bytes allocated on the WASM heap, for leak checks.
inline double memoryInUse() { return static_cast<double>(mallinfo().uordblks); }

}  // namespace bindings
}  // namespace webattention
