// The Embind surface of the npm package: the module and cache classes and their registration.
// Every entry point runs in guarded() (error_wire.h), so C++ errors come back as
// "<ErrorClass>|<argument>|<message>" ("" on success). Tensors cross the boundary as WASM heap
// addresses the JS side has filled (no per-element copy); each call's arguments come as one JS
// object (argument_wire.h, registered as a value_object below), named field by field, so the JS
// and C++ sides cannot silently disagree on an argument's position.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <malloc.h>

#include <array>
#include <cstdint>
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

using emscripten::val;
using namespace bindings;  // the argument structs and guarded() (argument_wire.h, error_wire.h)

// The element types a caller's 16-bit or f32 data may come in (loadParameter's sourceDtype).
constexpr std::initializer_list<StorageType> kSourceTypes = {StorageType::f32, StorageType::f16, StorageType::bf16};

// A KV cache: empty until MhaBinding::create_cache() fills it, then used only with that module
// (the core checks; JS also keeps the pairing).
class CacheBinding {
 public:
  double length() const { return cache_ ? static_cast<double>(cache_->length()) : 0.0; }
  void reset() {
    if (cache_) cache_->reset();
  }
  // Positions [first, first + count) into k [B, h_kv, count, d_k] and v [B, h_kv, count, d_v].
  std::string read(double first, int count, std::uintptr_t k, std::uintptr_t v) const {
    return guarded([&] {
      if (!cache_) throw CacheError("cache", "cache: has no storage (createCache() failed?)");
      cache_->read(static_cast<std::int64_t>(first), count, at<float>(k), at<float>(v));
    });
  }

 private:
  friend class MhaBinding;
  std::unique_ptr<KvCache> cache_;
};

// One MultiHeadAttention module. configure() runs once before anything else.
class MhaBinding {
 public:
  std::string configure(const MhaConfigWire& wire) {
    return guarded([&] {
      MhaConfig config = wire;
      config.weights_dtype = parse_storage_type(wire.weights_dtype_name, "weightsDtype",
                                                {StorageType::f32, StorageType::f16, StorageType::bf16, StorageType::i8});
      mha_ = std::make_unique<MultiHeadAttention>(config);
    });
  }

  // [{name, shape}] in PyTorch's state_dict() order, as JSON text (wasm_executor.js parses it): a
  // string crosses in one step, where building the objects through emscripten::val took ~1.2 ms
  // of a cold start (Embind makes its method callers with new Function on first use). The
  // names are the module's own identifiers: nothing in them needs escaping.
  std::string parameter_specs() const {
    std::string json = "[";
    for (const auto& spec : mha_->parameter_specs()) {
      if (json.size() > 1) json += ",";
      json += "{\"name\":\"" + spec.name + "\",\"shape\":[";
      for (std::size_t i = 0; i < spec.shape.size(); ++i) json += (i ? "," : "") + std::to_string(spec.shape[i]);
      json += "]}";
    }
    return json + "]";
  }

  // docs/attention-math.md §5: { matrix: Float32Array, shape, rank, factoredParameters, fullParameters },
  // or { error } in the same "Class|message" form as the other entry points.
  val head_bilinear_form(int head) const {
    val o = val::object();
    BilinearForm f;
    const std::string error = guarded([&] { f = mha_->head_bilinear_form(head); });
    if (!error.empty()) {
      o.set("error", error);
      return o;
    }
    o.set("matrix", val(emscripten::typed_memory_view(f.matrix.size(), f.matrix.data()))
                        .call<val>("slice"));
    val shape = val::array();
    shape.call<void>("push", f.rows);
    shape.call<void>("push", f.cols);
    o.set("shape", shape);
    o.set("rank", f.rank);
    o.set("factoredParameters", static_cast<double>(f.factored_parameters));
    o.set("fullParameters", static_cast<double>(f.full_parameters));
    return o;
  }

  std::string set_rotary_table(std::uintptr_t cos, std::uintptr_t sin, int positions) {
    return guarded([&] { mha_->set_rotary_table(at<const float>(cos), at<const float>(sin), positions); });
  }

  // `count` elements of source_dtype ('float32', or 16-bit bit patterns: 'float16' | 'bfloat16')
  // at `data`, converted to the module's storage (MultiHeadAttention::load_parameter).
  std::string load_parameter(const std::string& name, std::uintptr_t data, std::size_t count,
                             const std::string& source_dtype) {
    return guarded([&] {
      const StorageType source = parse_storage_type(source_dtype, "sourceDtype", kSourceTypes);
      mha_->load_parameter(name, at<const void>(data), count, source);
    });
  }

  // After a load that failed part-way (wasm_executor.js): MultiHeadAttention::forget_parameters.
  void forget_parameters() { mha_->forget_parameters(); }

  // Entry `name` as loaded, widened to f32 (`count` floats at `out`;
  // MultiHeadAttention::read_parameter): the worker pool's weights, read back from this module
  // when it starts instead of a copy kept since loadStateDict().
  std::string read_parameter(const std::string& name, std::uintptr_t out, std::size_t count) const {
    return guarded([&] { mha_->read_parameter(name, at<float>(out), count); });
  }

  std::string forward(const ForwardWire& w) {
    return guarded([&] { mha_->forward(w.args()); });
  }

  // Allocates `target`'s storage for this module (webattention/kv_cache.h).
  // dtype: 'float32' | 'float16' | 'int8'.
  std::string create_cache(CacheBinding& target, int batch, int max_length, int window,
                           const std::string& dtype) {
    return guarded([&] {
      KvCacheConfig config{batch, max_length, window};
      config.dtype = parse_storage_type(dtype, "dtype", {StorageType::f32, StorageType::f16, StorageType::i8});
      target.cache_ = mha_->create_cache(config);
    });
  }

  // One decoding step: appends w's key/value rows to `cache` and attends over it.
  std::string forward_cached(const ForwardWire& w, CacheBinding& cache) {
    return guarded([&] {
      if (!cache.cache_) throw CacheError("cache", "cache: has no storage (createCache() failed?)");
      mha_->forward(w.args(), *cache.cache_);
    });
  }

  // Heads [head_begin, head_end) only (a worker's share): w.output receives the heads
  // [B, L, (head_end - head_begin)·d_v]; weights as MultiHeadAttention::forward_heads() lays
  // them out.
  std::string forward_heads(const ForwardWire& w, int head_begin, int head_end) {
    return guarded([&] { mha_->forward_heads(w.args(), head_begin, head_end, at<float>(w.output)); });
  }

  // out [rows, E] = heads [rows, h·d_v] · W_Oᵀ + b_O.
  std::string project_output(std::uintptr_t heads, int rows, std::uintptr_t out) {
    return guarded([&] { mha_->project_output(at<const float>(heads), rows, at<float>(out)); });
  }

 private:
  std::unique_ptr<MultiHeadAttention> mha_;
};

std::string sdpa(const SdpaWire& w) {
  return guarded([&] { scaled_dot_product_attention(w.args()); });
}

// The KV cache's storage rule (webattention/kv_cache.h, the same as web/src/kv_ring.js):
// { capacity, rowsPerPass }, or { error } in the "Class|message" form.
val kv_ring_geometry(int max_length, int window) {
  val o = val::object();
  RingGeometry g;
  const std::string error = guarded([&] { g = ring_geometry(max_length, window); });
  if (!error.empty()) {
    o.set("error", error);
    return o;
  }
  o.set("capacity", static_cast<double>(g.capacity));
  o.set("rowsPerPass", static_cast<double>(g.rows_per_pass));
  return o;
}

// Bytes allocated on the WASM heap, for leak checks.
std::size_t memory_in_use() { return mallinfo().uordblks; }

}  // namespace
// MhaConfig::rotary_scaling as the JS side writes it: 0 none, 1 linear, 2 llama3 (module_config.js).
int rotary_scaling_of(const MhaConfig& c) { return static_cast<int>(c.rotary_scaling); }
void set_rotary_scaling(MhaConfig& c, int scaling) {
  c.rotary_scaling = scaling == 1 ? MhaConfig::RotaryScaling::kLinear
                     : scaling == 2 ? MhaConfig::RotaryScaling::kLlama3 : MhaConfig::RotaryScaling::kNone;
}

}  // namespace webattention

EMSCRIPTEN_BINDINGS(webattention) {
  using namespace webattention;
  // The argument objects, field names as the JS side writes them (web/src/module_config.js's
  // CONFIG_FIELDS, passed by executors/wasm_executor.js). MhaConfig's
  // field list is written here only: nothing reads a config back from the core.
  emscripten::value_object<ProjectionBias>("ProjectionBias")
      .field("q", &ProjectionBias::q)
      .field("k", &ProjectionBias::k)
      .field("v", &ProjectionBias::v)
      .field("out", &ProjectionBias::out);
  emscripten::value_object<MhaConfigWire>("MhaConfig")
      .field("embedDim", &MhaConfig::embed_dim)
      .field("numHeads", &MhaConfig::num_heads)
      .field("kdim", &MhaConfig::kdim)
      .field("vdim", &MhaConfig::vdim)
      .field("headDim", &MhaConfig::head_dim)
      .field("valueHeadDim", &MhaConfig::value_head_dim)
      .field("bias", &MhaConfig::bias)
      .field("numKvHeads", &MhaConfig::num_kv_heads)
      .field("rotaryDim", &MhaConfig::rotary_dim)
      .field("rotaryBase", &MhaConfig::rotary_base)
      .field("rotaryInterleaved", &MhaConfig::rotary_interleaved)
      .field("rotaryScaling", &rotary_scaling_of, &set_rotary_scaling)
      .field("rotaryFactor", &MhaConfig::rotary_factor)
      .field("rotaryLowFreqFactor", &MhaConfig::rotary_low_freq_factor)
      .field("rotaryHighFreqFactor", &MhaConfig::rotary_high_freq_factor)
      .field("rotaryOriginalMaxPositions", &MhaConfig::rotary_original_max_positions)
      .field("scale", &MhaConfig::scale)
      .field("softcap", &MhaConfig::softcap)
      .field("sinks", &MhaConfig::sinks)
      .field("qkNorm", &MhaConfig::qk_norm)
      .field("qkNormEps", &MhaConfig::qk_norm_eps)
      .field("weightsDtype", &MhaConfigWire::weights_dtype_name);
  emscripten::value_object<MaskWire>("MaskArgs")
      .field("kind", &MaskWire::kind)
      .field("address", &MaskWire::address)
      .field("rank", &MaskWire::rank)
      .field("shape", &MaskWire::shape);
  emscripten::value_array<std::array<int, 3>>("Shape3")
      .element(emscripten::index<0>())
      .element(emscripten::index<1>())
      .element(emscripten::index<2>());
  emscripten::value_object<ForwardWire>("ForwardArgs")
      .field("batch", &ForwardWire::batch)
      .field("L", &ForwardWire::L)
      .field("S", &ForwardWire::S)
      .field("query", &ForwardWire::query)
      .field("key", &ForwardWire::key)
      .field("value", &ForwardWire::value)
      .field("keyPaddingMask", &ForwardWire::key_padding_mask)
      .field("attnMask", &ForwardWire::attn_mask)
      .field("isCausal", &ForwardWire::causal)
      .field("output", &ForwardWire::output)
      .field("weights", &ForwardWire::weights)
      .field("averageWeights", &ForwardWire::average_weights)
      .field("positionIds", &ForwardWire::position_ids);
  emscripten::value_object<SdpaWire>("SdpaArgs")
      .field("N", &SdpaWire::N)
      .field("L", &SdpaWire::L)
      .field("S", &SdpaWire::S)
      .field("dk", &SdpaWire::dk)
      .field("dv", &SdpaWire::dv)
      .field("q", &SdpaWire::q)
      .field("k", &SdpaWire::k)
      .field("v", &SdpaWire::v)
      .field("attnMask", &SdpaWire::attn_mask)
      .field("isCausal", &SdpaWire::causal)
      .field("scale", &SdpaWire::scale)
      .field("output", &SdpaWire::out)
      .field("weights", &SdpaWire::weights);
  emscripten::class_<MhaBinding>("Mha")
      .constructor<>()
      .function("configure", &MhaBinding::configure)
      .function("parameterSpecs", &MhaBinding::parameter_specs)
      .function("loadParameter", &MhaBinding::load_parameter)
      .function("readParameter", &MhaBinding::read_parameter)
      .function("forgetParameters", &MhaBinding::forget_parameters)
      .function("setRotaryTable", &MhaBinding::set_rotary_table)
      .function("headBilinearForm", &MhaBinding::head_bilinear_form)
      .function("forward", &MhaBinding::forward)
      .function("forwardHeads", &MhaBinding::forward_heads)
      .function("projectOutput", &MhaBinding::project_output)
      .function("createCache", &MhaBinding::create_cache)
      .function("forwardCached", &MhaBinding::forward_cached);
  emscripten::class_<CacheBinding>("KvCache")
      .constructor<>()
      .function("length", &CacheBinding::length)
      .function("reset", &CacheBinding::reset)
      .function("read", &CacheBinding::read);
  emscripten::function("sdpa", &sdpa);
  emscripten::function("kvRingGeometry", &kv_ring_geometry);
  emscripten::function("memoryInUse", &memory_in_use);
  // Threads of the core's own pool: more than 1 only in the pthreads module.
  emscripten::function("threadCount", &thread_count);
  emscripten::function("setThreadLimit", &set_thread_limit);
}
