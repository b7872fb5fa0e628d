// The KV cache's ring geometry, the one JS statement of it (docs/attention-math.md §9): how many
// slots a cache holds and how many rows one pass may append. The core computes the same from its
// config (cpp/include/webattention/kv_cache.h, exposed as Embind kvRingGeometry(maxLength,
// window)); the GPU cache (webgpu/gpu_kv_cache.js) and createCache()'s limits read it here.

/** Ring slots beyond the window (the core's kRingSlack): a pass of up to 64 rows always fits. */
const RING_SLACK = 63;

/**
 * The most positions maxLength or window may be: the core counts slots in 32-bit integers, and a
 * ring holds window + RING_SLACK of them.
 */
export const MAX_CACHE_POSITIONS = 2 ** 31 - 1 - RING_SLACK;

/**
 * createCache()'s { maxLength, window } (0: none) → { capacity, rowsPerPass }. capacity: the slots,
 * maxLength without a window; with a window W a ring of W + 63 slots, or maxLength when that is
 * smaller (then it never wraps). rowsPerPass: the most rows one pass may append, since a pass
 * appends all its rows before attending: in a ring that can wrap, capacity − W + 1 (the first row
 * still needs the key at p − W + 1, which a longer pass would overwrite); otherwise capacity.
 */
export function ringGeometry({ maxLength, window }) {
  if (!window) return { capacity: maxLength, rowsPerPass: maxLength };
  const ring = window + RING_SLACK;
  if (maxLength && maxLength <= ring) return { capacity: maxLength, rowsPerPass: maxLength };
  return { capacity: ring, rowsPerPass: ring - window + 1 };
}
