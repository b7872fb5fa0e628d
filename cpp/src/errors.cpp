#include "webattention/errors.h"

#include "checks.h"

namespace webattention {

void require_positive(const char* argument, int value) {
  if (value < 1) {
    throw ShapeError(argument, std::string(argument) + ": expected a size >= 1, got " +
                                   std::to_string(value));
  }
}

void require_index(const char* argument, int value, int count) {
  if (value < 0 || value >= count) {
    throw ConfigError(argument, std::string(argument) + ": expected an integer in [0, " +
                                    std::to_string(count) + "), got " + std::to_string(value));
  }
}

void require_addressable(const char* argument, const char* what, std::int64_t floats) {
  if (floats > kMaxBufferFloats) {
    throw MemoryError(argument, std::string(argument) + ": " + what + " needs " +
                                    std::to_string(floats) + " floats, more than one buffer can hold here (" +
                                    std::to_string(kMaxBufferFloats) + ")");
  }
}

std::string format_shape(const std::vector<int>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace webattention
