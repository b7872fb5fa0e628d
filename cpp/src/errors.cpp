#include "webattention/errors.h"

namespace webattention {

std::string format_shape(const std::vector<int>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace webattention
