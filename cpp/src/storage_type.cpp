#include "webattention/storage_type.h"

#include "webattention/errors.h"

namespace webattention {

const char* storage_type_name(StorageType type) {
  switch (type) {
    case StorageType::f32: return "float32";
    case StorageType::f16: return "float16";
    case StorageType::bf16: return "bfloat16";
    case StorageType::i8: return "int8";
    case StorageType::q4: return "int4";
  }
  return "?";
}

int storage_element_bytes(StorageType type) {
  switch (type) {
    case StorageType::f32: return 4;
    case StorageType::f16:
    case StorageType::bf16: return 2;
    case StorageType::i8: return 1;
    case StorageType::q4: return 0;
  }
  return 4;
}

StorageType parse_storage_type(const std::string& name, const char* argument,
                               std::initializer_list<StorageType> allowed) {
  std::string expected;
  for (StorageType t : allowed) {
    if (name == storage_type_name(t)) return t;
    expected += std::string(expected.empty() ? "" : " | ") + "'" + storage_type_name(t) + "'";
  }
  throw ConfigError(argument, std::string(argument) + ": expected " + expected + ", got '" + name + "'");
}

}  // namespace webattention
