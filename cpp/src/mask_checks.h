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

// A cached forward's verification mask among its L new positions (docs/attention-math/decoding.md §9):
// [L, L] shared, [batch, L, L] per batch or [batch * heads, L, L] per head; key j of the view is
// position `first` + j (key0), earlier (cached) positions are not covered.
MaskView verify_mask_view(const MaskArg& mask, int batch, int heads, int L, std::int64_t first,
                          const char* argument);

// The view moved down `rows` query rows: a pass of a cached forward that starts at row `rows`.
MaskView from_row(MaskView m, int rows);

}  // namespace webattention
