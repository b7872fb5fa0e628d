// Attention masks as the kernels see them: a view with broadcast strides, so a key-padding mask
// [B, S], a 2-D mask [L, S] and a per-head mask [B*H, L, S] all reach the kernels the same way.
// Private to the core: callers hand masks over as MaskArg (webattention/mask.h), which
// mask_checks.h checks and turns into these views.
#pragma once

#include <cstddef>
#include <cstdint>

#include "webattention/mask.h"

namespace webattention {

// A mask element for (batch b, head h, query row i, key j) lives at
//   data[b * batch_stride + h * head_stride + i * row_stride + (j - key0)].
// A zero stride broadcasts that dimension. Keys before key0 are not covered (the mask allows
// them): a cached forward's verification mask covers only the call's new positions, the keys
// from the cache's old length on (docs/attention-math/decoding.md §9).
struct MaskView {
  MaskKind kind = MaskKind::kNone;
  const void* data = nullptr;
  std::ptrdiff_t batch_stride = 0;
  std::ptrdiff_t head_stride = 0;
  std::ptrdiff_t row_stride = 0;
  std::int64_t key0 = 0;

  bool empty() const { return kind == MaskKind::kNone; }
  const std::uint8_t* boolean() const { return static_cast<const std::uint8_t*>(data); }
  const float* additive() const { return static_cast<const float*>(data); }
};

}  // namespace webattention
