// cache.read() on WASM (issue 20): { key, value } [B, h_kv, n, d] in position order, keys as
// stored (rotated). The values against float64 truth are checkpoint_layouts.test.js's; here a
// wrapped sliding-window ring gives the last `window` positions exactly as a cache that keeps
// everything holds them, an empty cache gives n = 0, and misuse is typed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { DisposedError, MultiHeadAttention } from '#webattention';
import { WINDOW_CASE, lastPositions, readNarrowAndFloat32, readWindowAndWhole } from '../contract/cache_read.mjs';

test('a wrapped window ring reads its last `window` positions as a whole cache holds them', async () => {
  const { windowed, whole } = await readWindowAndWhole(api);
  const { B, T, window } = WINDOW_CASE;
  assert.equal(windowed.firstPosition, T - window);
  assert.equal(whole.firstPosition, 0);
  assert.deepEqual(windowed.key.shape, [B, 2, window, 4]);
  assert.deepEqual(whole.value.shape, [B, 2, T, 4]);
  assert.deepEqual(windowed.key.data, lastPositions(whole.key, T - window).data);
  assert.deepEqual(windowed.value.data, lastPositions(whole.value, T - window).data);
});

test('an empty cache reads n = 0; a disposed one is a DisposedError', async () => {
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2 });
  try {
    const cache = mha.createCache({ batchSize: 3, maxLength: 4 });
    const { key, value, firstPosition } = await cache.read();
    assert.deepEqual([key.shape, value.shape, key.data.length, firstPosition], [[3, 2, 0, 4], [3, 2, 0, 4], 0, 0]);
    cache.dispose();
    await assert.rejects(cache.read(), DisposedError);
  } finally {
    mha.dispose();
  }
});

for (const dtype of ['float16', 'int8']) {
  test(`a ${dtype} cache reads the float32 cache's keys and values as ${dtype} stores them, its ring wrapped too`, async () => {
    const { narrow, windowed, expected } = await readNarrowAndFloat32(api, dtype);
    assert.deepEqual(narrow.key.data, expected.key.data);
    assert.deepEqual(narrow.value.data, expected.value.data);
    const { T, window } = WINDOW_CASE;
    assert.deepEqual(windowed.key.data, lastPositions(expected.key, T - window).data);
    assert.deepEqual(windowed.value.data, lastPositions(expected.value, T - window).data);
  });
}
