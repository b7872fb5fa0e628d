// The problem the attention kernels solve, as the core hands it to them: strided views of Q, K
// and V (or K and V already packed in a KV cache), masks as strided views, the position rule, and
// where the output and weights go. Private to the core; the public entry points
// (webattention/attention.h, multihead_attention.h) build it from checked arguments.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/mask_view.h"
#include "webattention/storage_type.h"

namespace webattention {

// A batch of independent attention problems over strided row-major data. Row r of head h in
// batch b of a tensor t starts at t.data + b*batch_stride + h*head_stride + r*row_stride; the
// features of one row are contiguous. This lets multi-head attention run on the projected
// [B, L, h·d] buffers without copying heads apart.
struct StridedRows {
  const float* data = nullptr;
  std::ptrdiff_t batch_stride = 0;
  std::ptrdiff_t head_stride = 0;
  std::ptrdiff_t row_stride = 0;
};

// K and V already in the kernels' panel layout (kernels/kv_layout.h: key_panels, value_panels),
// as a KV cache keeps them, so that a decode step reads them in place instead of packing them
// again. Block (b, kv head) starts at k + (b·kv_heads + kv head)·k_block (and likewise for v),
// with `capacity` slots (a multiple of kPanelWidth).
// Elements of `type` (f32, f16 bits or int8; k_block and v_block count elements); int8 has one
// f32 scale per (block, slot) in k_scales / v_scales, [blocks][capacity].
struct PackedKv {
  const void* k = nullptr;
  const void* v = nullptr;
  std::ptrdiff_t k_block = 0, v_block = 0;
  int capacity = 0;
  StorageType type = StorageType::f32;
  const float* k_scales = nullptr;
  const float* v_scales = nullptr;
  bool finite = false;  // no Inf or NaN stored (KvCache tracks it)
  bool empty() const { return k == nullptr; }
};

// Where queries sit in the sequence, for the causal and window rules (flash_layout.h's
// allowed_keys, the one rule). Key j is at position j, whatever holds it: a KV cache keeps
// position j in slot j mod capacity (PackedKv), as the WebGPU kernels do (keyRow()). Query row i
// is at position query0 + i: 0 without a cache (PyTorch's top-left causal alignment); a KV cache
// puts the new rows after the cached ones (bottom-right).
struct Positions {
  std::int64_t query0 = 0;
  std::int64_t window = 0;  // > 0: the query at p sees only keys at positions > p - window
  // The window in positionIds (a cached call's drafts at depths that are not their slots:
  // docs/attention-math/decoding.md §9): the call's rows, from slot call0 on, are at positions
  // ids[slot - call0] for the window, keys before call0 at their slots; the causal rule stays
  // on slots. Null (the default, and whenever ids equal the slots): every row at its slot.
  // [batch][ids_stride]; for_batch() points it at its batch's row.
  const std::int32_t* ids = nullptr;
  std::ptrdiff_t ids_stride = 0;
  std::int64_t call0 = 0;
};

struct AttentionProblem {
  int batch = 1, heads = 1;  // query heads
  // Query heads per K/V head (grouped-query attention): query head h reads K/V head
  // h / kv_group of the k, v views (or of `cache`). The kernels run the kv_group query heads of a
  // K/V head together, as rows of one problem: K and V are read once for all of them.
  int kv_group = 1;
  int L = 0, S = 0;          // query rows, keys (positions 0 .. S - 1)
  int dk = 0, dv = 0;        // query/key width, value width
  StridedRows q, k, v;
  // When set, K and V come from here (key j in slot j mod capacity) and the k, v views are
  // unused; every key a row may see must still be held (the cache's passes see to it).
  PackedKv cache;
  float* out = nullptr;  // row i of (b, h) at out + b*out_batch_stride + h*out_head_stride + i*out_row_stride
  std::ptrdiff_t out_batch_stride = 0, out_head_stride = 0, out_row_stride = 0;
  float scale = 1.0f;
  float softcap = 0.0f;  // > 0: score <- softcap·tanh(score / softcap) after the scale, before the masks
  // Attention sinks: sinks[h] is query head h's logit in its softmax's denominator, with no value
  // (a row's running max and sum start from it). Null: none.
  const float* sinks = nullptr;
  bool causal = false;  // key j is not allowed for query i when its position is after the query's
  Positions positions;
  MaskView masks[2];    // applied together (key padding and attention mask)
  // Optional attention probabilities: [batch, heads, weights_rows, weights_cols], or
  // [batch, weights_rows, weights_cols] averaged over the heads when average_weights is set;
  // query row i of this problem is row i of its (batch, head). Null unless asked for: no L×S
  // buffer otherwise. Rows and columns are L and S unless set: a cached forward's pass writes
  // its rows into the call's weights [B, (h,) L, length after the call], whose columns past S
  // are positions after every key of the pass (weight 0, NaN in a NaN row).
  float* weights = nullptr;
  int weights_rows = 0, weights_cols = 0;
  bool average_weights = false;
  // Averaged weights are each head's share 1 / averaged_heads (0: heads). A head range of a
  // larger module passes the module's head count, so the ranges' shares add up to its average.
  int averaged_heads = 0;
  float average_share() const { return 1.0f / static_cast<float>(averaged_heads ? averaged_heads : heads); }
  // Weights asked for (`to` non-null) go to `to` with rows and columns of their own (a cache's
  // step writes its rows of the [rows, cols] block); else none.
  void write_weights(float* to, int rows, int cols, bool average) {
    if (!to) return;
    weights = to, weights_rows = rows, weights_cols = cols, average_weights = average;
  }
  int weight_rows() const { return weights_rows ? weights_rows : L; }
  int weight_cols() const { return weights_cols ? weights_cols : S; }
  // A cached call whose batches sit at positions of their own (a batched cache's rows of unequal
  // lengths, or some of its rows: MhaForwardArgs::rows): batch b of the problem reads the cache's
  // row rows.cache_row[b], and its positions are rows.shift[b] later than the problem's (its keys
  // S + shift, its query positions and the verification mask's key0, masks[1], as much later).
  // Null: every batch at the problem's positions, batch b in the cache's row b.
  struct BatchRows {
    const std::int32_t* cache_row = nullptr;
    const std::int64_t* shift = nullptr;
  } rows;
  // The problem batch b solves (itself without rows): run_attention() hands each unit its own,
  // so the kernels read one S and one query position per unit.
  AttentionProblem for_batch(int b) const {
    if (!rows.shift && !positions.ids) return *this;
    AttentionProblem u = *this;
    if (positions.ids) u.positions.ids += b * positions.ids_stride;
    if (!rows.shift) return u;
    const std::int64_t shift = rows.shift[b];
    u.S = static_cast<int>(S + shift);
    u.positions.query0 += shift;
    u.positions.call0 += shift;
    if (!u.masks[1].empty()) u.masks[1].key0 += shift;
    if (!cache.empty()) {  // block (b, g) of the problem is block (cache_row[b], g) of the cache
      const std::ptrdiff_t blocks = static_cast<std::ptrdiff_t>(rows.cache_row[b] - b) * kv_heads();
      const std::ptrdiff_t bytes = storage_element_bytes(cache.type);
      u.cache.k = static_cast<const unsigned char*>(cache.k) + blocks * cache.k_block * bytes;
      u.cache.v = static_cast<const unsigned char*>(cache.v) + blocks * cache.v_block * bytes;
      if (cache.k_scales) u.cache.k_scales += blocks * cache.capacity, u.cache.v_scales += blocks * cache.capacity;
    }
    u.rows = {};
    return u;
  }
  int kv_heads() const { return heads / kv_group; }
  // The kernels' unit of work: one (batch, K/V head) with its kv_group query heads.
  int units() const { return batch * kv_heads(); }
};

// Runs the problem on the kernels, units spread over the threads. The caller guarantees the
// shapes (the public entry points check them).
void run_attention(const AttentionProblem& p);

}  // namespace webattention
