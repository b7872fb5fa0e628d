// A covering subset of a test list: the fewest items (greedily) that still reach every value of
// every key the caller names, e.g. every kernel variant and every weights dtype, though not every
// variant with every dtype. The WebGPU suite runs whole lists on a GPU and covering subsets on
// SwiftShader, whose CPU emulation of a GPU made the full lists the longest step of CI
// (node_setup.mjs's onGpuOrCovering says when). Environment-free: pure data in, data out.

/**
 * The items of `items` that cover every key keysOf(item) gives (strings: 'variant:tile64',
 * 'dtype:int8', or a pair of both for a pair that must meet), chosen greedily: each pick covers the
 * most keys not yet covered, the earliest item winning a tie. Returned in the list's own order.
 */
export function coveringSubset(items, keysOf) {
  const keys = items.map((item) => [...new Set(keysOf(item))]);
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
