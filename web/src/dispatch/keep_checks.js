// cache.keep()'s argument checked against the cache (docs/attention-math/decoding.md §9), for kv_cache.js.
import { CacheError, describe } from '../base/errors.js';
import { truncationFloor } from '../storage/kv_ring.js';
import { increasingIndices, isList } from './cache_checks.js';

/**
 * cache.keep(indices)'s argument, for the last call's `rows` new positions of a cache of `current`
 * positions: an Int32Array of strictly increasing indices in [0, rows), or a CacheError naming
 * `indices` (none to keep among, out of range, repeated or unsorted, gone from a window's ring).
 */
export function checkKeep(indices, rows, current, options) {
  const refuse = (message, expected, actual) => {
    throw new CacheError(`cache.keep: ${message}`, { argument: 'indices', expected, actual });
  };
  if (!isList(indices)) {
    refuse(`expected an array of indices, got ${describe(indices)}`, 'an array of integers', describe(indices));
  }
  if (rows === 0) {
    refuse('no forward() has appended positions since the cache was made, reset, truncated or kept: nothing to keep '
      + 'among', 'a forward() before keep()', 'none');
  }
  const kept = increasingIndices(indices, rows, "the last call's new positions", refuse);
  const first = current - rows;
  const { lowest, oldest } = truncationFloor(current, options);
  if (first < oldest || first + kept.length < lowest) {
    refuse(`the last call's positions from ${first} on (or the window's keys before them) are no longer all in the ring `
      + `of the window (${options.window}); keep at least ${lowest - first} of them, in a call of fewer rows`,
    `>= ${lowest - first} indices`, kept.length);
  }
  return kept;
}
