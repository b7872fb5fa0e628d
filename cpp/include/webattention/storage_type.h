// Storage types: how a module keeps its weight matrices and a KV cache its keys and values
// (docs/attention-math.md §11). Arithmetic is f32 whatever the storage; a narrow type only changes
// the values held (rounded to nearest-even for the 16-bit types, block-quantised for int8 and int4).
#pragma once

#include <initializer_list>
#include <string>

namespace webattention {

enum class StorageType {
  f32,   // 'float32'
  f16,   // 'float16': IEEE binary16
  bf16,  // 'bfloat16': the top 16 bits of an f32
  i8,    // 'int8': symmetric, one f32 scale per block (weights) or row (cache)
  q4,    // 'int4' (weights only): 4-bit codes, an f32 scale and a 4-bit zero point per block
};

// The JS spelling: 'float32', 'float16', 'bfloat16', 'int8', 'int4'.
const char* storage_type_name(StorageType type);

// Bytes of one stored element (1, 2 or 4; an int8 block's scale is extra). int4 is not a whole
// byte: 0, which no caller sizes storage with (kernels.h's PackedLinear sizes int4 panels itself).
int storage_element_bytes(StorageType type);

// The type a JS spelling names, if it is one of `allowed`; else ConfigError(argument) naming the
// allowed spellings and the given one.
StorageType parse_storage_type(const std::string& name, const char* argument,
                               std::initializer_list<StorageType> allowed);

}  // namespace webattention
