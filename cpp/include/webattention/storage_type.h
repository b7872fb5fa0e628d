// Storage types: how a module keeps its weight matrices and a KV cache its keys and values
// (docs/attention-math/storage.md §11). Arithmetic is f32 whatever the storage; a narrow type only changes
// the values held (rounded to nearest-even for the 16-bit types, block-quantised for int8 and int4).
#pragma once

#include <string>

namespace webattention {

enum class StorageType {
  f32,   // 'float32'
  f16,   // 'float16': IEEE binary16
  bf16,  // 'bfloat16': the top 16 bits of an f32
  i8,    // 'int8': symmetric, one f32 scale per block (weights) or row (cache)
  q4,    // 'int4' (weights only): 4-bit codes, an f32 scale and a 4-bit zero point per block
};

// Each type's facts, one row per type: the core's one list of them (the rest of this header is
// derived from it; web/src/storage/storage_types.js is its JS twin, and tests/js/storage_types.test.js
// reads this table through the binding and checks the two agree).
struct StorageTypeInfo {
  StorageType type;
  const char* name;  // the JS spelling
  int bits;          // of one stored value (an int8 or int4 block's scale is extra)
  int block;         // weights: values of a row per scale (0: none)
  bool weights;      // a module may store its weight matrices so
  bool cache;        // a KV cache may store its keys and values so
  bool source;       // a tensor may be given in it (loadStateDict)
  bool activations;  // a module's projection inputs may be computed in it (create()'s activations)
};
inline constexpr StorageTypeInfo kStorageTypes[] = {
    {StorageType::f32, "float32", 32, 0, true, true, true, true},
    {StorageType::f16, "float16", 16, 0, true, true, true, false},
    {StorageType::bf16, "bfloat16", 16, 0, true, false, true, false},
    {StorageType::i8, "int8", 8, 32, true, true, false, true},
    {StorageType::q4, "int4", 4, 32, true, false, false, false},
};

constexpr const StorageTypeInfo& storage_type_info(StorageType type) {
  for (const StorageTypeInfo& info : kStorageTypes) {
    if (info.type == type) return info;
  }
  return kStorageTypes[0];
}

// The JS spelling: 'float32', 'float16', 'bfloat16', 'int8', 'int4'.
inline const char* storage_type_name(StorageType type) { return storage_type_info(type).name; }

// Bytes of one stored element (1, 2 or 4; an int8 block's scale is extra). int4 is not a whole
// byte: 0, which no caller sizes storage with (kernels.h's PackedLinear sizes int4 panels itself).
inline int storage_element_bytes(StorageType type) {
  const int bits = storage_type_info(type).bits;
  return bits >= 8 ? bits / 8 : 0;
}

// The type a JS spelling names, if a row's `use` flag allows it (weights, cache or source); else
// ConfigError(argument) naming the allowed spellings and the given one.
StorageType parse_storage_type(const std::string& name, const char* argument, bool StorageTypeInfo::*use);


}  // namespace webattention
