// The Embind surface of the npm package. Every entry point catches C++ errors and returns them as
// "<ErrorClass>|<message>" ("" on success), so no C++ exception ever reaches JS as a bare number.
// Tensors cross the boundary as WASM heap addresses the JS side has filled (no per-element copy).
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <malloc.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <string>

#include "parallel.h"
#include "webattention/attention.h"
#include "webattention/errors.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

using emscripten::val;

template <typename T>
T* at(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

// Runs `body` and turns any exception into the error string the JS layer rethrows.
template <typename F>
std::string guarded(F&& body) {
  try {
    body();
    return "";
  } catch (const ShapeError& e) {
    return std::string("ShapeError|") + e.what();
  } catch (const StateDictError& e) {
    return std::string("StateDictError|") + e.what();
  } catch (const ConfigError& e) {
    return std::string("ConfigError|") + e.what();
  } catch (const std::bad_alloc&) {
    return "MemoryError|out of WASM memory";
  } catch (const std::exception& e) {
    return std::string("WebAttentionError|") + e.what();
  }
}

MaskArg mask_arg(int kind, std::uintptr_t data, int ndim, int d0, int d1, int d2) {
  MaskArg m;
  m.kind = static_cast<MaskKind>(kind);
  m.data = at<const void>(data);
  const int dims[3] = {d0, d1, d2};
  m.shape.assign(dims, dims + ndim);
  return m;
}

// One MultiHeadAttention module. configure() runs once before anything else.
class MhaBinding {
 public:
  std::string configure(int embed_dim, int num_heads, int kdim, int vdim, int head_dim,
                        int value_head_dim, bool bias) {
    return guarded([&] {
      MhaConfig c;
      c.embed_dim = embed_dim;
      c.num_heads = num_heads;
      c.kdim = kdim;
      c.vdim = vdim;
      c.head_dim = head_dim;
      c.value_head_dim = value_head_dim;
      c.bias = bias;
      mha_ = std::make_unique<MultiHeadAttention>(c);
    });
  }

  // [{name, shape}] in PyTorch's state_dict() order.
  val parameter_specs() const {
    val list = val::array();
    for (const auto& spec : mha_->parameter_specs()) {
      val entry = val::object();
      entry.set("name", spec.name);
      val shape = val::array();
      for (int d : spec.shape) shape.call<void>("push", d);
      entry.set("shape", shape);
      list.call<void>("push", entry);
    }
    return list;
  }

  // {embedDim, numHeads, kdim, vdim, headDim, valueHeadDim, bias} with defaults resolved.
  val config() const {
    const MhaConfig& c = mha_->config();
    val o = val::object();
    o.set("embedDim", c.embed_dim);
    o.set("numHeads", c.num_heads);
    o.set("kdim", c.kdim);
    o.set("vdim", c.vdim);
    o.set("headDim", c.head_dim);
    o.set("valueHeadDim", c.value_head_dim);
    o.set("bias", c.bias);
    return o;
  }

  // attention-math §5: { matrix: Float32Array, shape, rank, factoredParameters, fullParameters },
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

  std::string load_parameter(const std::string& name, std::uintptr_t data, std::size_t count) {
    return guarded([&] { mha_->load_parameter(name, at<const float>(data), count); });
  }

  std::string forward(int batch, int L, int S, std::uintptr_t query, std::uintptr_t key,
                      std::uintptr_t value, int kpm_kind, std::uintptr_t kpm, int kpm_ndim,
                      int kpm_d0, int kpm_d1, int am_kind, std::uintptr_t am, int am_ndim,
                      int am_d0, int am_d1, int am_d2, bool causal, std::uintptr_t output,
                      std::uintptr_t weights, bool average_weights) {
    return guarded([&] {
      mha_->forward(forward_args(batch, L, S, query, key, value, kpm_kind, kpm, kpm_ndim, kpm_d0,
                                 kpm_d1, am_kind, am, am_ndim, am_d0, am_d1, am_d2, causal,
                                 output, weights, average_weights));
    });
  }

  // Heads [head_begin, head_end) only (a worker's share): the same arguments as forward() but
  // heads_out [B, L, (head_end - head_begin)·d_v] instead of the output; weights as
  // MultiHeadAttention::forward_heads() lays them out.
  std::string forward_heads(int batch, int L, int S, std::uintptr_t query, std::uintptr_t key,
                            std::uintptr_t value, int kpm_kind, std::uintptr_t kpm, int kpm_ndim,
                            int kpm_d0, int kpm_d1, int am_kind, std::uintptr_t am, int am_ndim,
                            int am_d0, int am_d1, int am_d2, bool causal,
                            std::uintptr_t weights, bool average_weights, int head_begin,
                            int head_end, std::uintptr_t heads_out) {
    return guarded([&] {
      mha_->forward_heads(forward_args(batch, L, S, query, key, value, kpm_kind, kpm, kpm_ndim,
                                       kpm_d0, kpm_d1, am_kind, am, am_ndim, am_d0, am_d1, am_d2,
                                       causal, 0, weights, average_weights),
                          head_begin, head_end, at<float>(heads_out));
    });
  }

  // out [rows, E] = heads [rows, h·d_v] · W_Oᵀ + b_O.
  std::string project_output(std::uintptr_t heads, int rows, std::uintptr_t out) {
    return guarded([&] { mha_->project_output(at<const float>(heads), rows, at<float>(out)); });
  }

 private:
  static MhaForwardArgs forward_args(int batch, int L, int S, std::uintptr_t query,
                                     std::uintptr_t key, std::uintptr_t value, int kpm_kind,
                                     std::uintptr_t kpm, int kpm_ndim, int kpm_d0, int kpm_d1,
                                     int am_kind, std::uintptr_t am, int am_ndim, int am_d0,
                                     int am_d1, int am_d2, bool causal, std::uintptr_t output,
                                     std::uintptr_t weights, bool average_weights) {
    MhaForwardArgs a;
    a.batch = batch;
    a.L = L;
    a.S = S;
    a.query = at<const float>(query);
    a.key = at<const float>(key);
    a.value = at<const float>(value);
    a.key_padding_mask = mask_arg(kpm_kind, kpm, kpm_ndim, kpm_d0, kpm_d1, 0);
    a.attn_mask = mask_arg(am_kind, am, am_ndim, am_d0, am_d1, am_d2);
    a.causal = causal;
    a.output = at<float>(output);
    a.weights = at<float>(weights);
    a.average_weights = average_weights;
    return a;
  }

  std::unique_ptr<MultiHeadAttention> mha_;
};

std::string sdpa(int N, int L, int S, int dk, int dv, std::uintptr_t q, std::uintptr_t k,
                 std::uintptr_t v, int mask_kind, std::uintptr_t mask, int mask_ndim, int m0,
                 int m1, int m2, bool causal, float scale, std::uintptr_t out,
                 std::uintptr_t weights) {
  return guarded([&] {
    SdpaArgs a;
    a.N = N;
    a.L = L;
    a.S = S;
    a.dk = dk;
    a.dv = dv;
    a.q = at<const float>(q);
    a.k = at<const float>(k);
    a.v = at<const float>(v);
    a.attn_mask = mask_arg(mask_kind, mask, mask_ndim, m0, m1, m2);
    a.causal = causal;
    a.scale = scale;
    a.out = at<float>(out);
    a.weights = at<float>(weights);
    scaled_dot_product_attention(a);
  });
}

// Bytes allocated on the WASM heap, for leak checks.
std::size_t memory_in_use() { return mallinfo().uordblks; }

}  // namespace
}  // namespace webattention

EMSCRIPTEN_BINDINGS(webattention) {
  using webattention::MhaBinding;
  emscripten::class_<MhaBinding>("Mha")
      .constructor<>()
      .function("configure", &MhaBinding::configure)
      .function("parameterSpecs", &MhaBinding::parameter_specs)
      .function("config", &MhaBinding::config)
      .function("loadParameter", &MhaBinding::load_parameter)
      .function("headBilinearForm", &MhaBinding::head_bilinear_form)
      .function("forward", &MhaBinding::forward)
      .function("forwardHeads", &MhaBinding::forward_heads)
      .function("projectOutput", &MhaBinding::project_output);
  emscripten::function("sdpa", &webattention::sdpa);
  emscripten::function("memoryInUse", &webattention::memory_in_use);
  // Threads of the core's own pool: more than 1 only in the pthreads module.
  emscripten::function("threadCount", &webattention::thread_count);
  emscripten::function("setThreadLimit", &webattention::set_thread_limit);
}
