// The exported surface of the npm package's WASM modules: plain C functions (wa_*), which
// web/src/core_exports.js wraps into the Mha and KvCache objects the executors use. Plain exports,
// not Embind: Embind registered its types and built its callers at instantiation, several ms of
// every cold start, and converted each call's argument object field by field in JS.
// Conventions:
// - Every entry point that can fail runs in guarded() (error_wire.h) and returns its error as
//   "<ErrorClass>|<argument>|<message>" (a C string that JS frees with wa_free_text()), or
//   nullptr on success: no C++ exception ever reaches JS.
// - Tensors cross as WASM heap addresses the JS side has filled (no per-element copy).
// - Calls with many arguments take one record of doubles (argument_wire.h), written by field name.
// - Strings in (names, dtypes) are NUL-terminated UTF-8 on the heap.
#include <emscripten/emscripten.h>

#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>

#include "argument_wire.h"
#include "error_wire.h"
#include "parallel.h"
#include "webattention/attention.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"
#include "webattention/storage_type.h"

namespace webattention {
namespace {

using namespace bindings;  // the records and guarded() (argument_wire.h, error_wire.h)

// The element types a caller's 16-bit or f32 data may come in (load_parameter's source dtype).
constexpr std::initializer_list<StorageType> kSourceTypes = {StorageType::f32, StorageType::f16, StorageType::bf16};

// The text an entry point returns (an error, the field list, the parameter specs), on the heap:
// JS reads it and frees it with wa_free_text(), so that nothing stays allocated between calls
// (wasmMemoryInUse() is unchanged by a failed call). With no room for it, a fixed text.
constexpr char kNoRoomForText[] = "MemoryError||out of WASM memory";

const char* text(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) return kNoRoomForText;
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

// guarded()'s result as the C return: nullptr on success, else the error text.
const char* error_of(const std::string& error) { return error.empty() ? nullptr : text(error); }

}  // namespace

// A KV cache: empty until wa_mha_create_cache() fills it, then used only with that module (the
// core checks; JS also keeps the pairing).
struct CacheBinding {
  std::unique_ptr<KvCache> cache;
};

// One MultiHeadAttention module: empty until wa_mha_configure() succeeds.
struct MhaBinding {
  std::unique_ptr<MultiHeadAttention> mha;
  BilinearForm form;  // the last head_bilinear_form(), read by JS before the next call
};

}  // namespace webattention

using webattention::CacheBinding;
using webattention::MhaBinding;
using namespace webattention;
using namespace webattention::bindings;

extern "C" {

// Frees a text an entry point returned (JS calls it once it has read it).
EMSCRIPTEN_KEEPALIVE void wa_free_text(const char* p) {
  if (p != kNoRoomForText) std::free(const_cast<char*>(p));
}

// The field names of record `kind` (0 MhaConfig, 1 forward, 2 sdpa), comma-separated, in the
// order JS writes them.
EMSCRIPTEN_KEEPALIVE const char* wa_record_fields(int kind) {
  switch (kind) {
    case 0: return text(field_names(kConfigFields));
    case 1: return text(field_names(kForwardFields));
    case 2: return text(field_names(kSdpaFields));
  }
  return text("");
}

EMSCRIPTEN_KEEPALIVE MhaBinding* wa_mha_new() { return new MhaBinding(); }
EMSCRIPTEN_KEEPALIVE void wa_mha_delete(MhaBinding* m) { delete m; }

// config: an MhaConfig record; weights_dtype: 'float32' | 'float16' | 'bfloat16' | 'int8'.
EMSCRIPTEN_KEEPALIVE const char* wa_mha_configure(MhaBinding* m, const double* config, const char* weights_dtype) {
  return error_of(guarded([&] {
    MhaConfig c = read_record(kConfigFields, config);
    c.weights_dtype = parse_storage_type(weights_dtype, "weightsDtype",
                                         {StorageType::f32, StorageType::f16, StorageType::bf16, StorageType::i8});
    m->mha = std::make_unique<MultiHeadAttention>(c);
  }));
}

// [{name, shape}] in PyTorch's state_dict() order, as JSON text (the names are the module's own
// identifiers: nothing in them needs escaping).
EMSCRIPTEN_KEEPALIVE const char* wa_mha_parameter_specs(MhaBinding* m) {
  std::string json = "[";
  for (const auto& spec : m->mha->parameter_specs()) {
    if (json.size() > 1) json += ",";
    json += "{\"name\":\"" + spec.name + "\",\"shape\":[";
    for (std::size_t i = 0; i < spec.shape.size(); ++i) json += (i ? "," : "") + std::to_string(spec.shape[i]);
    json += "]}";
  }
  return text(json + "]");
}

// docs/attention-math.md §5 for one head; on success `info` receives [rows, cols, rank,
// factoredParameters, fullParameters, the matrix's heap address] (valid until the next call).
EMSCRIPTEN_KEEPALIVE const char* wa_mha_head_bilinear_form(MhaBinding* m, int head, double* info) {
  return error_of(guarded([&] {
    m->form = m->mha->head_bilinear_form(head);
    const BilinearForm& f = m->form;
    const double values[] = {static_cast<double>(f.rows), static_cast<double>(f.cols), static_cast<double>(f.rank),
                             static_cast<double>(f.factored_parameters), static_cast<double>(f.full_parameters),
                             static_cast<double>(reinterpret_cast<std::uintptr_t>(f.matrix.data()))};
    std::copy(std::begin(values), std::end(values), info);
  }));
}

EMSCRIPTEN_KEEPALIVE const char* wa_mha_set_rotary_table(MhaBinding* m, const float* cos, const float* sin, int positions) {
  return error_of(guarded([&] { m->mha->set_rotary_table(cos, sin, positions); }));
}

// `count` elements of source_dtype ('float32', or 16-bit bit patterns: 'float16' | 'bfloat16')
// at `data`, converted to the module's storage (MultiHeadAttention::load_parameter).
EMSCRIPTEN_KEEPALIVE const char* wa_mha_load_parameter(MhaBinding* m, const char* name, const void* data,
                                                       std::size_t count, const char* source_dtype) {
  return error_of(guarded([&] {
    const StorageType source = parse_storage_type(source_dtype, "sourceDtype", kSourceTypes);
    m->mha->load_parameter(name, data, count, source);
  }));
}

// MultiHeadAttention::begin_load_in_place: on success `out` receives the part count, then
// (address, offset, count) per part (3 at most: in_proj_weight's Q, K and V); a count of 0 means
// "load with wa_mha_load_parameter instead".
EMSCRIPTEN_KEEPALIVE const char* wa_mha_begin_load_in_place(MhaBinding* m, const char* name, std::size_t count,
                                                            const char* source_dtype, double* out) {
  return error_of(guarded([&] {
    const StorageType source = parse_storage_type(source_dtype, "sourceDtype", kSourceTypes);
    const auto parts = m->mha->begin_load_in_place(name, count, source);
    out[0] = static_cast<double>(parts.size());
    for (std::size_t i = 0; i < parts.size(); ++i) {
      out[1 + 3 * i] = static_cast<double>(reinterpret_cast<std::uintptr_t>(parts[i].to));
      out[2 + 3 * i] = static_cast<double>(parts[i].offset);
      out[3 + 3 * i] = static_cast<double>(parts[i].count);
    }
  }));
}

EMSCRIPTEN_KEEPALIVE const char* wa_mha_finish_load_in_place(MhaBinding* m) {
  return error_of(guarded([&] { m->mha->finish_load_in_place(); }));
}

// After a load that failed part-way (wasm_executor.js): MultiHeadAttention::forget_parameters.
EMSCRIPTEN_KEEPALIVE void wa_mha_forget_parameters(MhaBinding* m) { m->mha->forget_parameters(); }

// Entry `name` as loaded, widened to f32 (`count` floats at `out`): the worker pool's weights,
// read back from this module when it starts instead of a copy kept since loadStateDict().
EMSCRIPTEN_KEEPALIVE const char* wa_mha_read_parameter(MhaBinding* m, const char* name, float* out, std::size_t count) {
  return error_of(guarded([&] { m->mha->read_parameter(name, out, count); }));
}

// args: a forward record.
EMSCRIPTEN_KEEPALIVE const char* wa_mha_forward(MhaBinding* m, const double* args) {
  return error_of(guarded([&] { m->mha->forward(read_record(kForwardFields, args).args()); }));
}

// Heads [head_begin, head_end) only (a worker's share): the record's output receives the heads
// [B, L, (head_end - head_begin)·d_v]; weights as MultiHeadAttention::forward_heads() lays them out.
EMSCRIPTEN_KEEPALIVE const char* wa_mha_forward_heads(MhaBinding* m, const double* args, int head_begin, int head_end) {
  return error_of(guarded([&] {
    const ForwardWire w = read_record(kForwardFields, args);
    m->mha->forward_heads(w.args(), head_begin, head_end, at<float>(w.output));
  }));
}

// out [rows, E] = heads [rows, h·d_v] · W_Oᵀ + b_O.
EMSCRIPTEN_KEEPALIVE const char* wa_mha_project_output(MhaBinding* m, const float* heads, int rows, float* out) {
  return error_of(guarded([&] { m->mha->project_output(heads, rows, out); }));
}

// Allocates `target`'s storage for this module (webattention/kv_cache.h);
// dtype: 'float32' | 'float16' | 'int8'.
EMSCRIPTEN_KEEPALIVE const char* wa_mha_create_cache(MhaBinding* m, CacheBinding* target, int batch, int max_length,
                                                     int window, const char* dtype) {
  return error_of(guarded([&] {
    KvCacheConfig config{batch, max_length, window};
    config.dtype = parse_storage_type(dtype, "dtype", {StorageType::f32, StorageType::f16, StorageType::i8});
    target->cache = m->mha->create_cache(config);
  }));
}

// One decoding step: appends the record's key/value rows to `cache` and attends over it.
EMSCRIPTEN_KEEPALIVE const char* wa_mha_forward_cached(MhaBinding* m, const double* args, CacheBinding* cache) {
  return error_of(guarded([&] {
    if (!cache->cache) throw CacheError("cache", "cache: has no storage (createCache() failed?)");
    m->mha->forward(read_record(kForwardFields, args).args(), *cache->cache);
  }));
}

EMSCRIPTEN_KEEPALIVE CacheBinding* wa_cache_new() { return new CacheBinding(); }
EMSCRIPTEN_KEEPALIVE void wa_cache_delete(CacheBinding* c) { delete c; }
EMSCRIPTEN_KEEPALIVE double wa_cache_length(CacheBinding* c) {
  return c->cache ? static_cast<double>(c->cache->length()) : 0.0;
}
EMSCRIPTEN_KEEPALIVE void wa_cache_reset(CacheBinding* c) {
  if (c->cache) c->cache->reset();
}

// Positions [first, first + count) into k [B, h_kv, count, d_k] and v [B, h_kv, count, d_v].
EMSCRIPTEN_KEEPALIVE const char* wa_cache_read(CacheBinding* c, double first, int count, float* k, float* v) {
  return error_of(guarded([&] {
    if (!c->cache) throw CacheError("cache", "cache: has no storage (createCache() failed?)");
    c->cache->read(static_cast<std::int64_t>(first), count, k, v);
  }));
}

// args: an sdpa record.
EMSCRIPTEN_KEEPALIVE const char* wa_sdpa(const double* args) {
  return error_of(guarded([&] { scaled_dot_product_attention(read_record(kSdpaFields, args).args()); }));
}

// The KV cache's storage rule (webattention/kv_cache.h, the same as web/src/kv_ring.js): on
// success `out` receives [capacity, rowsPerPass].
EMSCRIPTEN_KEEPALIVE const char* wa_kv_ring_geometry(int max_length, int window, double* out) {
  return error_of(guarded([&] {
    const RingGeometry g = ring_geometry(max_length, window);
    out[0] = static_cast<double>(g.capacity);
    out[1] = static_cast<double>(g.rows_per_pass);
  }));
}

// Bytes allocated on the WASM heap, for leak checks.
EMSCRIPTEN_KEEPALIVE double wa_memory_in_use() { return static_cast<double>(mallinfo().uordblks); }

// Threads of the core's own pool: more than 1 only in the pthreads module.
EMSCRIPTEN_KEEPALIVE int wa_thread_count() { return thread_count(); }
EMSCRIPTEN_KEEPALIVE void wa_set_thread_limit(int threads) { set_thread_limit(threads); }

}  // extern "C"
