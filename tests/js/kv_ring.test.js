// The KV cache's ring geometry (web/src/storage/kv_ring.js), which the GPU cache and createCache()'s
// limits read: capacity and rows per pass for every kind of cache.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, OptionError } from '#webattention';
import { MAX_CACHE_POSITIONS, ringGeometry } from '../internals.mjs';
import { loadNodeCore } from '../../web/src/node_core.js';
import { pickVariant } from '../../web/src/wasm/variant.js';
import { coreRingGeometry } from '../../web/src/wasm/core_binding.js';

test('ringGeometry: maxLength alone; a ring of window + 63 that wraps; a smaller maxLength that never does', () => {
  assert.deepEqual(ringGeometry({ maxLength: 100, window: 0 }), { capacity: 104, rowsPerPass: 104 });
  // A ring: the first row of a pass still needs the key window − 1 positions back.
  assert.deepEqual(ringGeometry({ maxLength: 0, window: 16 }), { capacity: 80, rowsPerPass: 65 });
  assert.deepEqual(ringGeometry({ maxLength: 1000, window: 16 }), { capacity: 80, rowsPerPass: 65 });
  // maxLength at or under window + 63: maxLength slots (in whole panels), never wrapped.
  assert.deepEqual(ringGeometry({ maxLength: 79, window: 16 }), { capacity: 80, rowsPerPass: 80 });
  assert.deepEqual(ringGeometry({ maxLength: 20, window: 16 }), { capacity: 24, rowsPerPass: 24 });
  assert.deepEqual(ringGeometry({ maxLength: 0, window: 1 }), { capacity: 64, rowsPerPass: 64 });
  const largest = ringGeometry({ maxLength: 0, window: MAX_CACHE_POSITIONS });
  assert.equal(largest.capacity, 2 ** 31 - 8, 'the largest ring still counts its slots in an int32');
  for (const g of [largest, ringGeometry({ maxLength: 5, window: 0 })]) assert.ok(Number.isInteger(g.rowsPerPass));
});

test('ringGeometry agrees with the core (kvRingGeometry) over a grid of lengths and windows', async () => {
  const { core } = await loadNodeCore(pickVariant());
  const values = [0, 1, 2, 7, 8, 9, 15, 16, 17, 55, 56, 57, 63, 64, 65, 71, 72, 79, 80, 100, 1000, 4096];
  let compared = 0;
  for (const maxLength of [...values, MAX_CACHE_POSITIONS]) {
    for (const window of [...values, MAX_CACHE_POSITIONS]) {
      if (!maxLength && !window) continue;  // no cache: the core refuses it, createCache() too
      const ours = ringGeometry({ maxLength, window });
      const core_ = coreRingGeometry(core, maxLength, window);
      assert.deepEqual(ours, { capacity: core_.capacity, rowsPerPass: core_.rowsPerPass }, `maxLength ${maxLength}, window ${window}`);
      compared++;
    }
  }
  assert.ok(compared > 500);
});

test('createCache() refuses a window or maxLength whose ring would not fit 32-bit slot counts', async () => {
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2 });
  try {
    for (const argument of ['window', 'maxLength']) {
      assert.throws(() => mha.createCache({ [argument]: MAX_CACHE_POSITIONS + 1 }),
        (e) => e instanceof OptionError && e.argument === argument && e.expected === `<= ${MAX_CACHE_POSITIONS}`);
    }
  } finally {
    mha.dispose();
  }
});
