// The one place where JavaScript meets the core: the Embind registrations of the npm package's
// WASM modules (the objects they register: binding_objects.h; the JS side: web/src/core_binding.js).
// The config comes as one value_object matched by field name (MhaConfig); a call's arguments as
// positional numbers and addresses (binding_objects.h says why).
//
// Every registration costs every cold start (Embind builds its converters and callers in JS,
// about 30 µs a value_object field and 70 µs a method), so EMSCRIPTEN_BINDINGS registers only
// what a first create(), loadStateDict() and forward() call. The rest comes in groups, each
// registered by registerGroup(name) the first time JS needs it (core_binding.js's
// requireGroup()): sdpa, the KV cache, and the calls of inspection and of the worker pool.
#include <emscripten/bind.h>

#include "binding_objects.h"

namespace {

using namespace emscripten;
using namespace webattention;
using namespace webattention::bindings;

// The config's scale: absent (1/√head_dim) unless JS gives one; JS always does (module_config.js).
double get_scale(const MhaConfig& c) { return c.scale.value_or(0.0); }
void set_scale(MhaConfig& c, double scale) { c.scale = scale; }

void register_enums() {
  enum_<StorageType>("StorageType")
      .value("float32", StorageType::f32)
      .value("float16", StorageType::f16)
      .value("bfloat16", StorageType::bf16)
      .value("int8", StorageType::i8)
      .value("int4", StorageType::q4);
  enum_<MhaConfig::RotaryScaling>("RotaryScaling")
      .value("none", MhaConfig::RotaryScaling::kNone)
      .value("linear", MhaConfig::RotaryScaling::kLinear)
      .value("llama3", MhaConfig::RotaryScaling::kLlama3);
  enum_<MaskKind>("MaskKind")
      .value("none", MaskKind::kNone)
      .value("boolean", MaskKind::kBoolean)
      .value("additive", MaskKind::kAdditive);
}

// The MhaConfig fields as registered, in order: the one list of them in C++, which JS's own
// (module_config.js's CONFIG_FIELDS through coreConfig()) is checked against
// (configFieldNames(), core_binding.test.js). Pointers to the literals: no allocation at load.
struct ConfigFieldNames {
  const char* names[32];
  int count = 0;
};
ConfigFieldNames& config_field_names() {
  static ConfigFieldNames names;
  return names;
}

// value_object::field(), which also records the name.
template <typename Object>
struct NamingFields {
  Object& object;
  template <typename... Access>
  NamingFields& field(const char* name, Access... access) {
    object.field(name, access...);
    ConfigFieldNames& n = config_field_names();
    n.names[n.count++] = name;
    return *this;
  }
};

std::string configFieldNames() {
  const ConfigFieldNames& n = config_field_names();
  return jsonNames(n.names, n.count);
}

void register_config() {
  value_object<ProjectionBias>("ProjectionBias")
      .field("q", &ProjectionBias::q)
      .field("k", &ProjectionBias::k)
      .field("v", &ProjectionBias::v)
      .field("out", &ProjectionBias::out);
  value_object<MhaConfig> config("MhaConfig");
  NamingFields<value_object<MhaConfig>>{config}
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
      .field("rotaryScaling", &MhaConfig::rotary_scaling)
      .field("rotaryFactor", &MhaConfig::rotary_factor)
      .field("rotaryLowFreqFactor", &MhaConfig::rotary_low_freq_factor)
      .field("rotaryHighFreqFactor", &MhaConfig::rotary_high_freq_factor)
      .field("rotaryOriginalMaxPositions", &MhaConfig::rotary_original_max_positions)
      .field("scale", &get_scale, &set_scale)
      .field("softcap", &MhaConfig::softcap)
      .field("sinks", &MhaConfig::sinks)
      .field("qkNorm", &MhaConfig::qk_norm)
      .field("qkNormEps", &MhaConfig::qk_norm_eps)
      .field("weightsDtype", &MhaConfig::weights_dtype)
      .field("activations", &MhaConfig::activations);
}

// Group "sdpa": scaledDotProductAttention() and selfAttention().
void register_sdpa() {
  function("sdpa", &sdpa);
}

// Group "cache": a KV cache and the module's calls on it, and the ring geometry they follow.
void register_cache() {
  class_<KvCacheBinding>("KvCache")
      .constructor<>()
      .function("length", &KvCacheBinding::length)
      .function("rowLength", &KvCacheBinding::rowLength)
      .function("truncateRows", &KvCacheBinding::truncateRows)
      .function("reset", &KvCacheBinding::reset)
      .function("read", &KvCacheBinding::read)
      .function("truncate", &KvCacheBinding::truncate)
      .function("fork", &KvCacheBinding::fork);
  function("mhaCreateCache", optional_override([](MhaBinding& m, KvCacheBinding& cache, int batch, int max_length,
                                                  int window, StorageType dtype) {
             return m.createCache(cache, batch, max_length, window, dtype);
           }));
  function("mhaForwardCached", optional_override([](MhaBinding& m, KvCacheBinding& cache) { return m.forwardCached(cache); }));
  function("mhaForwardCachedRows", optional_override([](MhaBinding& m, KvCacheBinding& cache, std::uintptr_t rows) {
             return m.forwardCachedRows(cache, rows);
           }));
  function("mhaKeepCached", optional_override([](MhaBinding& m, KvCacheBinding& cache, std::uintptr_t indices, int count) {
             return m.keepCached(cache, indices, count);
           }));
  function("mhaEncode", optional_override([](MhaBinding& m, KvCacheBinding& cache, std::uintptr_t key, std::uintptr_t value,
                                             int batch, int S, StorageType dtype) {
    return m.encode(cache, key, value, batch, S, dtype);
  }));
  value_object<RingWire>("RingGeometry")
      .field("error", &RingWire::error)
      .field("capacity", &RingWire::capacity)
      .field("rowsPerPass", &RingWire::rows_per_pass);
  function("kvRingGeometry", &kvRingGeometry);
}

// Group "inspection": the weights read back (the pool's workers, readStateDict()), a head's
// bilinear form, and the core's own lists for the tests that tie JS's to them.
void register_inspection() {
  function("mhaReadParameter", optional_override([](MhaBinding& m, const std::string& name, std::uintptr_t out,
                                                    double count) { return m.readParameter(name, out, count); }));
  value_object<BilinearWire>("BilinearForm")
      .field("error", &BilinearWire::error)
      .field("rows", &BilinearWire::rows)
      .field("cols", &BilinearWire::cols)
      .field("rank", &BilinearWire::rank)
      .field("factoredParameters", &BilinearWire::factored_parameters)
      .field("fullParameters", &BilinearWire::full_parameters)
      .field("matrix", &BilinearWire::matrix)
      .field("singularValues", &BilinearWire::singular_values)
      .field("singularValueCount", &BilinearWire::singular_value_count);
  function("storageTypeTable", &storageTypeTable);
  function("configFieldNames", &configFieldNames);
  function("stateDictEntryNames", &stateDictEntryNames);
  function("mhaRotaryThetas", optional_override([](MhaBinding& m, std::uintptr_t out) { return m.rotaryThetas(out); }));
  function("mhaHeadBilinearForm", optional_override([](MhaBinding& m, int head) { return m.headBilinearForm(head); }));
}

// Group "heads": a worker's share of the heads, the output projection of the shares, and a
// rotary table given by the caller.
void register_heads() {
  function("mhaForwardHeads", optional_override([](MhaBinding& m, int head_begin, int head_end) {
             return m.forwardHeads(head_begin, head_end);
           }));
  function("mhaProjectOutput", optional_override([](MhaBinding& m, std::uintptr_t heads, int rows, std::uintptr_t out) {
             return m.projectOutput(heads, rows, out);
           }));
  function("mhaSetRotaryTable", optional_override([](MhaBinding& m, std::uintptr_t cos, std::uintptr_t sin,
                                                     int positions) { return m.setRotaryTable(cos, sin, positions); }));
}

// Group "quantised": a checkpoint's int8 or int4 blocks taken as stored (GGUF, ORT MatMulNBits).
void register_quantised() {
  function("mhaLoadQuantised", optional_override([](MhaBinding& m, const std::string& name, std::uintptr_t codes,
                                                    std::uintptr_t scales, std::uintptr_t zeros, double count, StorageType type) {
             return m.loadQuantised(name, codes, scales, zeros, count, type);
           }));
}

// Registers a group once (a second registration of a name would be an Embind error).
template <void (*Register)()>
void register_once() {
  static bool done = false;
  if (!done) Register();
  done = true;
}

// The groups by the name JS gives them (core_binding.js GROUPS): one bound function for all, as
// each bound function is a registration at every cold start. 1 for a name that is no group.
int register_group(const std::string& name) {
  if (name == "sdpa") return register_once<register_sdpa>(), 0;
  if (name == "cache") return register_once<register_cache>(), 0;
  if (name == "inspection") return register_once<register_inspection>(), 0;
  if (name == "heads") return register_once<register_heads>(), 0;
  if (name == "quantised") return register_once<register_quantised>(), 0;
  return 1;
}

}  // namespace

EMSCRIPTEN_BINDINGS(webattention) {
  register_enums();
  register_config();
  class_<MhaBinding>("Mha")
      .constructor<>()
      .function("configure", &MhaBinding::configure)
      .function("parameterSpecs", &MhaBinding::parameterSpecs)
      .function("loadParameter", &MhaBinding::loadParameter)
      .function("beginLoadInPlace", &MhaBinding::beginLoadInPlace)
      .function("finishLoadInPlace", &MhaBinding::finishLoadInPlace)
      .function("forgetParameters", &MhaBinding::forgetParameters)
      .function("setCall", &MhaBinding::setCall)
      .function("forward", &MhaBinding::forward);
  function("takeError", &take_error);
  function("memoryInUse", &memoryInUse);
  // Threads of the core's own pool: more than 1 only in the pthreads modules.
  function("threadCount", &thread_count);
  function("setThreadLimit", &set_thread_limit);
  function("registerGroup", &register_group);
}
