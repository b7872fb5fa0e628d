// Attention masks as a caller hands them to the library: a kind, the data and a shape. Which
// shapes each argument accepts is documented where it is taken (attention.h,
// multihead_attention.h).
#pragma once

#include <vector>

namespace webattention {

enum class MaskKind {
  kNone,
  kBoolean,   // uint8, nonzero = not allowed (PyTorch True)
  kAdditive,  // float32, added to the scaled scores (may hold -inf)
};

// The library checks the shape against the problem and throws ShapeError naming the argument.
struct MaskArg {
  MaskKind kind = MaskKind::kNone;
  const void* data = nullptr;
  std::vector<int> shape;
};

}  // namespace webattention
