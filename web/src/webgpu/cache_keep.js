// cache.keep() on the GPU (docs/attention-math/decoding.md §9): the kept rows of the last call that move,
// or whose rotation changes, are written again by a cached call of their own inputs at their new
// positions (projections, k-norm, RoPE and append on the device, as a fresh run of those tokens
// writes them); the rows before the first such one stay where they are. No cache data leaves the
// device.
import { CacheError } from '../base/errors.js';
import { noMask } from '../base/tensor_checks.js';


/**
 * last: GpuKvCache.lastCall; indices: kv_cache.js's checked Int32Array; rotary: the module's
 * rotary options (or null). Returns { length (the cache's length up to the first row that must be
 * written again), plan (a cached call of those rows at their new positions, or null: none) }.
 */
export function keptRows(last, indices, rotary) {
  // kv_cache.js checked against the calls it planned; one of them failed since (the calls after it
  // reject as behind any failed call).
  if (!last) throw new CacheError('cache.keep: the call it keeps among failed', { argument: 'cache', expected: 'a call', actual: 'none' });
  const { B, L } = last;
  const first = last.cache.lengthBefore;
  const rotatedAt = (b, i) => (last.positionIds ? last.positionIds[b * L + i] : first + i);
  const stays = (t) => indices[t] === t && (!rotary || Array.from({ length: B }, (_, b) => rotatedAt(b, t)).every((p) => p === first + t));
  let t0 = 0;
  while (t0 < indices.length && stays(t0)) t0 += 1;
  if (t0 === indices.length) return { length: first + t0, plan: null };
  if (last.inputs === false) {
    throw new CacheError(`cache.keep: on WebGPU, after a call of ${L} rows (more than its inputs are kept for) only a `
      + 'prefix of it at the positions it was rotated at can be kept', { argument: 'indices', expected: 'a prefix', actual: Array.from(indices).join(', ') });
  }
  const picks = indices.subarray(t0);
  const picked = new Map();  // one pick per input array: aliasing (fused projections) survives
  const pick = (data) => {
    if (!picked.has(data)) {
      const width = data.length / (B * L);
      const out = new data.constructor(B * picks.length * width);
      for (let b = 0; b < B; b++) {
        picks.forEach((i, n) => out.set(data.subarray((b * L + i) * width, (b * L + i + 1) * width), (b * picks.length + n) * width));
      }
      picked.set(data, out);
    }
    return picked.get(data);
  };
  const n = picks.length;
  const lengthAfter = first + indices.length;
  return {
    length: first + t0,
    plan: {
      ...last, L: n, S: n, T: lengthAfter, query: pick(last.query), key: pick(last.key), value: pick(last.value),
      positionIds: null, keyPaddingMask: noMask(), attnMask: noMask(), needWeights: false, weightsShape: null,
      cache: { ...last.cache, lengthBefore: first + t0, lengthAfter, maskKey0: undefined },
    },
  };
}
