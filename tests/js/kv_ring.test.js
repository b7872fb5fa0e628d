// The KV cache's ring geometry (web/src/kv_ring.js), which the GPU cache and createCache()'s
// limits read: capacity and rows per pass for every kind of cache.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, OptionError } from 'webattention';
import { MAX_CACHE_POSITIONS, ringGeometry } from '../internals.mjs';

test('ringGeometry: maxLength alone; a ring of window + 63 that wraps; a smaller maxLength that never does', () => {
  assert.deepEqual(ringGeometry({ maxLength: 100, window: 0 }), { capacity: 100, rowsPerPass: 100 });
  // A ring: the first row of a pass still needs the key window − 1 positions back.
  assert.deepEqual(ringGeometry({ maxLength: 0, window: 16 }), { capacity: 79, rowsPerPass: 64 });
  assert.deepEqual(ringGeometry({ maxLength: 1000, window: 16 }), { capacity: 79, rowsPerPass: 64 });
  // maxLength at or under window + 63: maxLength slots, never wrapped, so any pass fits.
  assert.deepEqual(ringGeometry({ maxLength: 79, window: 16 }), { capacity: 79, rowsPerPass: 79 });
  assert.deepEqual(ringGeometry({ maxLength: 20, window: 16 }), { capacity: 20, rowsPerPass: 20 });
  assert.deepEqual(ringGeometry({ maxLength: 0, window: 1 }), { capacity: 64, rowsPerPass: 64 });
  const largest = ringGeometry({ maxLength: 0, window: MAX_CACHE_POSITIONS });
  assert.equal(largest.capacity, 2 ** 31 - 1, 'the largest ring still counts its slots in an int32');
  for (const g of [largest, ringGeometry({ maxLength: 5, window: 0 })]) assert.ok(Number.isInteger(g.rowsPerPass));
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
