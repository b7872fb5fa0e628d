#include "webattention/storage_type.h"

#include "webattention/errors.h"

namespace webattention {

StorageType parse_storage_type(const std::string& name, const char* argument, bool StorageTypeInfo::*use) {
  std::string expected;
  for (const StorageTypeInfo& info : kStorageTypes) {
    if (!(info.*use)) continue;
    if (name == info.name) return info.type;
    expected += std::string(expected.empty() ? "" : " | ") + "'" + info.name + "'";
  }
  throw ConfigError(argument, std::string(argument) + ": expected " + expected + ", got '" + name + "'");
}

}  // namespace webattention
