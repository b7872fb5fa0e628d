// The KV cache's ring geometry, the one JS statement of it (docs/attention-math/decoding.md §9): how many
// slots a cache holds and how many rows one pass may append. The core computes the same from its
// config (cpp/include/webattention/kv_cache.h, exposed as core_binding.js's
// coreRingGeometry()); the GPU cache (webgpu/gpu_kv_cache.js) and createCache()'s limits read it here.

/** Ring slots beyond the window (the core's kRingSlack): a pass of up to 64 rows always fits. */
const RING_SLACK = 63;
/** The core's K/V panel width (kernels/kv_layout.h kPanelWidth): slots come in whole panels. */
const PANEL = 8;

/**
 * The most positions maxLength or window may be: the core counts slots in 32-bit integers, and a
 * ring holds window + RING_SLACK of them, rounded up to whole panels.
 */
export const MAX_CACHE_POSITIONS = 2 ** 31 - PANEL - RING_SLACK;

/**
 * createCache()'s { maxLength, window } (0: none) → { capacity, rowsPerPass }, exactly as the core
 * computes them (ring_geometry() in cpp/src/kv_cache.cpp; tests/js/kv_ring.test.js compares the
 * two). capacity: the slots, in whole panels of 8: maxLength without a window; with a window W a
 * ring of W + 63 slots, or maxLength when that is smaller. rowsPerPass: the most rows one pass may
 * append, since a pass appends all its rows before attending: in a ring that can wrap (capacity
 * below maxLength, or no maxLength), capacity − W + 1 (the first row still needs the key at
 * p − W + 1, which a longer pass would overwrite); otherwise capacity.
 */
export function ringGeometry({ maxLength, window }) {
  const slots = window ? Math.min(window + RING_SLACK, maxLength || Infinity) : maxLength;
  const capacity = Math.ceil(slots / PANEL) * PANEL;
  const wraps = window > 0 && (!maxLength || capacity < maxLength);
  return { capacity, rowsPerPass: wraps ? capacity - window + 1 : capacity };
}

/**
 * The lowest length a cache of `length` positions (createCache()'s { maxLength, window }) may be
 * truncated to (cache.truncate()), as the core's KvCache::min_truncated_length(): 0 until its ring
 * has wrapped; then the oldest position the ring holds, length − capacity, plus the window, since
 * the next query (and read()) needs the window's positions before the new length, and those below
 * the oldest were overwritten. { lowest, oldest }.
 */
export function truncationFloor(length, { maxLength, window }) {
  const oldest = Math.max(0, length - ringGeometry({ maxLength, window }).capacity);
  return { lowest: oldest === 0 ? 0 : oldest + window, oldest };
}
