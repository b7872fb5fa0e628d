// A covering subset of a test list: the fewest items (greedily) that still reach every value on
// every dimension the caller names, e.g. every kernel variant and every weights dtype, though not
// every variant with every dtype. The WebGPU suite runs whole lists on a GPU and covering subsets
// on SwiftShader, whose CPU emulation of a GPU made the full lists the longest step of CI
// (node_setup.mjs's onGpuOrCovering says when). Environment-free: pure data in, data out.

/**
 * The items of `items` that reach every value keysOf(item) gives, position by position: keysOf
 * returns the item's value on each dimension ([variant, dtype]; by default the item itself), so
 * that equal names on two dimensions (a float16 cache, float16 weights) stay two values; null or
 * undefined at a position names nothing there. Chosen greedily: each pick reaches the most values
 * not yet reached, the earliest item winning a tie. Returned in the list's own order.
 */
export function coveringSubset(items, keysOf = (item) => item) {
  const keys = items.map((item) => [...new Set(keysOf(item).flatMap((value, at) => (value == null ? [] : [`${at}:${value}`])))]);
  const uncovered = new Set(keys.flat());
  const chosen = [];
  while (uncovered.size > 0) {
    let best = -1;
    let bestGain = 0;
    keys.forEach((itemKeys, i) => {
      const gain = itemKeys.filter((k) => uncovered.has(k)).length;
      if (gain > bestGain) [best, bestGain] = [i, gain];
    });
    chosen.push(best);
    for (const k of keys[best]) uncovered.delete(k);
  }
  return chosen.sort((a, b) => a - b).map((i) => items[i]);
}

/** Every [a, b] of two lists, for coveringSubset() over two dimensions. */
export const pairs = (as, bs) => as.flatMap((a) => bs.map((b) => [a, b]));
