// The one place where JavaScript meets the core: Embind bindings of the npm package's WASM
// modules. web/src/core_binding.js adds the little JS needs beyond them (enum lookups, copies out
// of the heap).
// Conventions:
// - Tensors cross as WASM heap addresses that JS has filled (no per-element conversion either
//   way); outputs are read back from heap addresses the call returns or was given.
// - Methods that can fail run in guarded() (error_wire.h) and return the error as
//   "<ErrorClass>|<argument>|<message>" ('' on success): no C++ exception reaches JS, and a
//   failed call leaves nothing allocated.
// - A call's many arguments come as one value_object, matched by field name (ForwardWire,
//   SdpaWire, MhaConfig), so neither side depends on the other's field order.
// - Only what JS calls is registered: each registration costs every cold start.
#include <emscripten/bind.h>
#include <malloc.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "error_wire.h"
#include "parallel.h"
#include "webattention/attention.h"
#include "webattention/errors.h"
#include "webattention/kv_cache.h"
#include "webattention/multihead_attention.h"
#include "webattention/storage_type.h"

namespace webattention {
namespace bindings {
namespace {

template <typename T>
T* at(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

// The storage types each argument takes: the enum's values are all the spellings, the core
// refuses the ones an argument has no use for (a ConfigError naming it).
StorageType allowed(StorageType type, const char* argument, std::initializer_list<StorageType> types) {
  return parse_storage_type(storage_type_name(type), argument, types);
}
constexpr std::initializer_list<StorageType> kWeightTypes = {StorageType::f32, StorageType::f16, StorageType::bf16,
                                                             StorageType::i8};
constexpr std::initializer_list<StorageType> kSourceTypes = {StorageType::f32, StorageType::f16, StorageType::bf16};
constexpr std::initializer_list<StorageType> kCacheTypes = {StorageType::f32, StorageType::f16, StorageType::i8};

}  // namespace

// A mask as JS describes it: its kind, where its data lies, and its shape (`rank` of the three
// dims used; address 0 and rank 0 for none).
struct MaskWire {
  MaskKind kind = MaskKind::kNone;
  std::uintptr_t address = 0;
  int rank = 0;
  std::array<int, 3> shape{};

  MaskArg arg() const {
    return {kind, at<const void>(address), {shape.begin(), shape.begin() + std::clamp(rank, 0, 3)}};
  }
};

// forward(), forwardHeads() and forwardCached(): MhaForwardArgs with heap addresses. `output` is
// [B, L, E] for forward(), the heads [B, L, (head_end − head_begin)·d_v] for forwardHeads().
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
    a.batch = batch, a.L = L, a.S = S;
    a.query = at<const float>(query), a.key = at<const float>(key), a.value = at<const float>(value);
    a.key_padding_mask = key_padding_mask.arg();
    a.attn_mask = attn_mask.arg();
    a.causal = causal;
    a.output = at<float>(output), a.weights = at<float>(weights);
    a.average_weights = average_weights;
    a.position_ids = at<const std::int32_t>(position_ids);
    return a;
  }
};

// sdpa(): SdpaArgs with heap addresses; `hasScale` false means 1/√dk (never a scale of 0).
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

// Where begin_load_in_place() wants an entry's parts ({address, offset, count} each; `count`
// parts, 0: load the entry with loadParameter() instead).
struct InPlacePartWire {
  double address = 0, offset = 0, count = 0;
};
struct InPlaceWire {
  std::string error;
  int count = 0;
  std::array<InPlacePartWire, 3> parts{};  // in_proj_weight's Q, K and V at most
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
  void reset() {
    if (cache) cache->reset();
  }
  // Positions [first, first + count) into k [B, h_kv, count, d_k] and v [B, h_kv, count, d_v].
  std::string read(double first, int count, std::uintptr_t k, std::uintptr_t v) {
    return guarded([&] { storage().read(static_cast<std::int64_t>(first), count, at<float>(k), at<float>(v)); });
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
  std::string configure(const MhaConfig& config) {
    return guarded([&] {
      MhaConfig c = config;
      c.weights_dtype = allowed(c.weights_dtype, "weightsDtype", kWeightTypes);
      mha = std::make_unique<MultiHeadAttention>(c);
    });
  }

  // [{name, shape}] in PyTorch's state_dict() order, as JSON (the names are the module's own
  // identifiers: nothing in them needs escaping).
  std::string parameterSpecs() const {
    std::string json = "[";
    for (const auto& spec : mha->parameter_specs()) {
      if (json.size() > 1) json += ",";
      json += "{\"name\":\"" + spec.name + "\",\"shape\":[";
      for (std::size_t i = 0; i < spec.shape.size(); ++i) json += (i ? "," : "") + std::to_string(spec.shape[i]);
      json += "]}";
    }
    return json + "]";
  }

  std::string setRotaryTable(std::uintptr_t cos, std::uintptr_t sin, int positions) {
    return guarded([&] { mha->set_rotary_table(at<const float>(cos), at<const float>(sin), positions); });
  }

  // `count` elements of `source` (f32, or f16 / bf16 bit patterns) at `data`, converted to the
  // module's storage.
  std::string loadParameter(const std::string& name, std::uintptr_t data, double count, StorageType source) {
    return guarded([&] {
      mha->load_parameter(name, at<const void>(data), static_cast<std::size_t>(count),
                          allowed(source, "sourceDtype", kSourceTypes));
    });
  }

  InPlaceWire beginLoadInPlace(const std::string& name, double count, StorageType source) {
    InPlaceWire w;
    w.error = guarded([&] {
      const auto parts = mha->begin_load_in_place(name, static_cast<std::size_t>(count),
                                                  allowed(source, "sourceDtype", kSourceTypes));
      w.count = static_cast<int>(std::min(parts.size(), w.parts.size()));
      for (int i = 0; i < w.count; ++i) {
        w.parts[i] = {static_cast<double>(reinterpret_cast<std::uintptr_t>(parts[i].to)),
                      static_cast<double>(parts[i].offset), static_cast<double>(parts[i].count)};
      }
    });
    return w;
  }

  std::string finishLoadInPlace() {
    return guarded([&] { mha->finish_load_in_place(); });
  }

  // After a load that ran out of memory part-way: a module holding a mix of two state dicts
  // must not compute.
  void forgetParameters() { mha->forget_parameters(); }

  // Entry `name` as loaded, widened to f32: `count` floats at `out`.
  std::string readParameter(const std::string& name, std::uintptr_t out, double count) {
    return guarded([&] { mha->read_parameter(name, at<float>(out), static_cast<std::size_t>(count)); });
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

  std::string forward(const ForwardWire& args) {
    return guarded([&] { mha->forward(args.args()); });
  }

  std::string forwardHeads(const ForwardWire& args, int head_begin, int head_end) {
    return guarded([&] { mha->forward_heads(args.args(), head_begin, head_end, at<float>(args.output)); });
  }

  // out [rows, E] = heads [rows, h·d_v] · W_Oᵀ + b_O.
  std::string projectOutput(std::uintptr_t heads, int rows, std::uintptr_t out) {
    return guarded([&] { mha->project_output(at<const float>(heads), rows, at<float>(out)); });
  }

  std::string createCache(KvCacheBinding& target, int batch, int max_length, int window, StorageType dtype) {
    return guarded([&] {
      KvCacheConfig config{batch, max_length, window};
      config.dtype = allowed(dtype, "dtype", kCacheTypes);
      target.cache = mha->create_cache(config);
    });
  }

  // One decoding step: appends the rows to `cache` and attends over it.
  std::string forwardCached(const ForwardWire& args, KvCacheBinding& cache) {
    return guarded([&] { mha->forward(args.args(), cache.storage()); });
  }

 private:
  std::unique_ptr<MultiHeadAttention> mha;
  BilinearForm form;  // the last headBilinearForm(), which JS reads before the next call
};

std::string sdpa(const SdpaWire& args) {
  return guarded([&] { scaled_dot_product_attention(args.args()); });
}

// The KV cache's storage rule (webattention/kv_cache.h; web/src/kv_ring.js is its JS twin).
RingWire kvRingGeometry(int max_length, int window) {
  RingWire w;
  w.error = guarded([&] {
    const RingGeometry g = ring_geometry(max_length, window);
    w.capacity = static_cast<double>(g.capacity);
    w.rows_per_pass = static_cast<double>(g.rows_per_pass);
  });
  return w;
}

// Bytes allocated on the WASM heap, for leak checks.
double memoryInUse() { return static_cast<double>(mallinfo().uordblks); }

}  // namespace bindings
}  // namespace webattention

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
      .value("int8", StorageType::i8);
  enum_<MhaConfig::RotaryScaling>("RotaryScaling")
      .value("none", MhaConfig::RotaryScaling::kNone)
      .value("linear", MhaConfig::RotaryScaling::kLinear)
      .value("llama3", MhaConfig::RotaryScaling::kLlama3);
  enum_<MaskKind>("MaskKind")
      .value("none", MaskKind::kNone)
      .value("boolean", MaskKind::kBoolean)
      .value("additive", MaskKind::kAdditive);
}

void register_config() {
  value_object<ProjectionBias>("ProjectionBias")
      .field("q", &ProjectionBias::q)
      .field("k", &ProjectionBias::k)
      .field("v", &ProjectionBias::v)
      .field("out", &ProjectionBias::out);
  value_object<MhaConfig>("MhaConfig")
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
      .field("weightsDtype", &MhaConfig::weights_dtype);
}

void register_call_arguments() {
  value_array<std::array<int, 3>>("Shape3").element(emscripten::index<0>()).element(emscripten::index<1>()).element(emscripten::index<2>());
  value_object<MaskWire>("MaskWire")
      .field("kind", &MaskWire::kind)
      .field("address", &MaskWire::address)
      .field("rank", &MaskWire::rank)
      .field("shape", &MaskWire::shape);
  value_object<ForwardWire>("ForwardWire")
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
  value_object<SdpaWire>("SdpaWire")
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
      .field("hasScale", &SdpaWire::has_scale)
      .field("scale", &SdpaWire::scale)
      .field("output", &SdpaWire::output)
      .field("weights", &SdpaWire::weights);
}

void register_results() {
  value_object<InPlacePartWire>("InPlacePart")
      .field("address", &InPlacePartWire::address)
      .field("offset", &InPlacePartWire::offset)
      .field("count", &InPlacePartWire::count);
  value_array<std::array<InPlacePartWire, 3>>("InPlaceParts")
      .element(emscripten::index<0>()).element(emscripten::index<1>()).element(emscripten::index<2>());
  value_object<InPlaceWire>("InPlaceLoad")
      .field("error", &InPlaceWire::error)
      .field("count", &InPlaceWire::count)
      .field("parts", &InPlaceWire::parts);
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
  value_object<RingWire>("RingGeometry")
      .field("error", &RingWire::error)
      .field("capacity", &RingWire::capacity)
      .field("rowsPerPass", &RingWire::rows_per_pass);
}

void register_classes() {
  class_<KvCacheBinding>("KvCache")
      .constructor<>()
      .function("length", &KvCacheBinding::length)
      .function("reset", &KvCacheBinding::reset)
      .function("read", &KvCacheBinding::read);
  class_<MhaBinding>("Mha")
      .constructor<>()
      .function("configure", &MhaBinding::configure)
      .function("parameterSpecs", &MhaBinding::parameterSpecs)
      .function("setRotaryTable", &MhaBinding::setRotaryTable)
      .function("loadParameter", &MhaBinding::loadParameter)
      .function("beginLoadInPlace", &MhaBinding::beginLoadInPlace)
      .function("finishLoadInPlace", &MhaBinding::finishLoadInPlace)
      .function("forgetParameters", &MhaBinding::forgetParameters)
      .function("readParameter", &MhaBinding::readParameter)
      .function("headBilinearForm", &MhaBinding::headBilinearForm)
      .function("forward", &MhaBinding::forward)
      .function("forwardHeads", &MhaBinding::forwardHeads)
      .function("projectOutput", &MhaBinding::projectOutput)
      .function("createCache", &MhaBinding::createCache)
      .function("forwardCached", &MhaBinding::forwardCached);
}

}  // namespace

EMSCRIPTEN_BINDINGS(webattention) {
  register_enums();
  register_config();
  register_call_arguments();
  register_results();
  register_classes();
  function("sdpa", &sdpa);
  function("kvRingGeometry", &kvRingGeometry);
  function("memoryInUse", &memoryInUse);
  // Threads of the core's own pool: more than 1 only in the pthreads modules.
  function("threadCount", &thread_count);
  function("setThreadLimit", &set_thread_limit);
}
