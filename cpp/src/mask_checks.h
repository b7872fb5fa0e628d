// Shape checks for the masks callers hand over (MaskArg, webattention/mask.h), and the strided
// views the kernels read them through (kernels/mask_view.h).
#pragma once

#include "kernels/mask_view.h"
#include "webattention/mask.h"

namespace webattention {

// The functions below check a MaskArg's shape against the problem and return the strided view,
// or throw ShapeError naming `argument`.

// Key-padding mask: [batch, S] (or [S] when batch == 1 and the input was unbatched).
MaskView key_padding_view(const MaskArg& mask, int batch, int S, const char* argument);

// Attention mask: [L, S] shared by every batch and head, or [batch * heads, L, S] per head.
MaskView attn_mask_view(const MaskArg& mask, int batch, int heads, int L, int S,
                        const char* argument);

}  // namespace webattention
