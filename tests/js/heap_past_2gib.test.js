// Heap addresses at or past 2 GiB (the WASM heap may grow to 4 GiB): _malloc returns an i32, so
// such an address reads as negative in JS unless it is taken as unsigned. A model of ~2 GB of
// weights gets there; this test gets there by holding blocks of 1 GiB (one malloc cannot take 2 GiB;
// never written, so they cost address space, not memory) until the heap's next block lies past
// 2 GiB, while a module loads its weights and runs a call, which then must give the bits a module
// loaded below 2 GiB gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { heapHooks } from '../internals.mjs';
import { filled, seededStateDict } from '../contract/random.mjs';

test('weights and inputs at heap addresses past 2 GiB load and compute as below it', async () => {
  const options = { embedDim: 64, numHeads: 4, threads: 1, backend: 'wasm' };
  const x = { data: filled(5 * 64, 3), shape: [1, 5, 64] };
  const low = await MultiHeadAttention.create(options);
  const sd = seededStateDict(low.stateDictShapes, 7);
  low.loadStateDict(sd);
  const expected = (await low.forward(x, x, x)).output.data;
  let core = null, highest = 0;
  const held = [];
  heapHooks.malloc = (c, bytes) => {
    core = c;
    while (!held.length || held.at(-1) < 2 ** 31) {
      const block = c._malloc(2 ** 30) >>> 0;
      if (!block) break;
      held.push(block);
    }
    const at = c._malloc(bytes);
    highest = Math.max(highest, at >>> 0);
    return at;
  };
  try {
    const high = await MultiHeadAttention.create(options);
    high.loadStateDict(sd);
    const got = (await high.forward(x, x, x)).output.data;
    assert.ok(held.length >= 2, 'the 1 GiB blocks were not allocated');
    assert.ok(highest >= 2 ** 31, `no call's block landed past 2 GiB (highest ${highest})`);
    assert.deepEqual(got, expected);
    high.dispose();
  } finally {
    heapHooks.malloc = null;
    for (const block of held) core._free(block);
    low.dispose();
  }
});
