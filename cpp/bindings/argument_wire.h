// The arguments of the Embind surface (embind.cpp) as JS passes them: one object per call, named
// field by field (registered as value_objects there), with tensors as WASM heap addresses that
// the JS side has filled, turned here into the core's argument structs.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "webattention/attention.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace bindings {

// A heap address from JS as a pointer (0 stays nullptr).
template <typename T>
T* at(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

// A mask as the JS side describes it: { kind (MaskKind's number), address, rank, shape } with
// the first `rank` of shape's three dims used (address 0 and rank 0 for no mask). A fixed-size
// shape, not a JS array of any length: Embind converts it with three element setters, where an
// array read through emscripten::val cost 1 µs more per call (measured).
struct MaskWire {
  int kind = 0;
  std::uintptr_t address = 0;
  int rank = 0;
  std::array<int, 3> shape{};

  MaskArg arg() const {
    MaskArg m;
    m.kind = static_cast<MaskKind>(kind);
    m.data = at<const void>(address);
    m.shape.assign(shape.begin(), shape.begin() + std::clamp(rank, 0, 3));
    return m;
  }
};

// forward() and forwardHeads(): the inputs, masks and outputs of MhaForwardArgs as heap
// addresses. `output` is the module output [B, L, E] for forward(), the heads
// [B, L, (head_end - head_begin)·d_v] for forwardHeads(); `weights` is 0 unless asked for.
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
    a.batch = batch;
    a.L = L;
    a.S = S;
    a.query = at<const float>(query);
    a.key = at<const float>(key);
    a.value = at<const float>(value);
    a.key_padding_mask = key_padding_mask.arg();
    a.attn_mask = attn_mask.arg();
    a.causal = causal;
    a.output = at<float>(output);
    a.weights = at<float>(weights);
    a.average_weights = average_weights;
    a.position_ids = at<const std::int32_t>(position_ids);
    return a;
  }
};

// sdpa(): SdpaArgs with heap addresses.
struct SdpaWire {
  int N = 1, L = 0, S = 0, dk = 0, dv = 0;
  std::uintptr_t q = 0, k = 0, v = 0;
  MaskWire attn_mask;
  bool causal = false;
  float scale = 0.0f;
  std::uintptr_t out = 0, weights = 0;

  SdpaArgs args() const {
    SdpaArgs a;
    a.N = N;
    a.L = L;
    a.S = S;
    a.dk = dk;
    a.dv = dv;
    a.q = at<const float>(q);
    a.k = at<const float>(k);
    a.v = at<const float>(v);
    a.attn_mask = attn_mask.arg();
    a.causal = causal;
    a.scale = scale;
    a.out = at<float>(out);
    a.weights = at<float>(weights);
    return a;
  }
};

// MhaConfig as JS passes it: the storage type as its JS spelling ('float32' | 'float16' |
// 'bfloat16' | 'int8'), turned into the C++ enum by configure(), where a bad one is a ConfigError
// naming weightsDtype (a value_object's setter has nowhere to report it).
struct MhaConfigWire : MhaConfig {
  std::string weights_dtype_name = "float32";
};

}  // namespace bindings
}  // namespace webattention
