// A batched cache's rows of different lengths (issue 38) on WASM, on the module and thread count
// the environment picks (WEBATTENTION_WASM, WEBATTENTION_THREADS: the pool leaves cache calls to
// the calling thread, so they run there too). The runs: tests/contract/cache_rows.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { OptionError } from '#webattention';
import { sameBits } from '../contract/compare.mjs';
import { filled, seededStateDict } from '../contract/random.mjs';
import { ROWS_CREATE, ROWS_GQA_CREATE, ROWS_LAYOUTS, checkHostileRows, checkRowsRun, hostileRowsRun, rowsRun } from '../contract/cache_rows.mjs';

const runs = [...ROWS_LAYOUTS.map((layout) => [layout, ROWS_CREATE]), [ROWS_LAYOUTS[1], ROWS_GQA_CREATE], [ROWS_LAYOUTS[3], ROWS_GQA_CREATE]];
for (const [layout, create] of runs) {
  test(`rows of different lengths = one cache per row, bit for bit (${JSON.stringify(layout.cache)}, ${create.numKvHeads ? 'GQA' : 'MHA'})`, async () => {
    checkRowsRun(assert, api, await rowsRun(api, layout, create), layout);
  });
}

test('misuse of rows and lengths is a typed error naming them that leaves the cache as it was', async () => {
  checkHostileRows(assert, api, await hostileRowsRun(api));
});

test('rows without a cache is an OptionError naming rows', async () => {
  const mha = await api.MultiHeadAttention.create({ embedDim: 16, numHeads: 4 });
  try {
    const x = { data: new Float32Array(16), shape: [1, 1, 16] };
    await assert.rejects(mha.forward(x, x, x, { rows: [0] }), (e) => e instanceof OptionError && e.argument === 'rows');
  } finally {
    mha.dispose();
  }
});

test('a rows call\'s positionIds are per listed row: its rows\' own lengths give the call without them, bit for bit', async () => {
  const mha = await api.MultiHeadAttention.create(ROWS_CREATE);
  try {
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 60));
    const make = () => mha.createCache({ batchSize: 4, maxLength: 16 });
    const [given, implied] = [make(), make()];
    const x = (n, L, seed) => ({ data: filled(n * L * 16, seed), shape: [n, L, 16] });
    const prompt = x(4, 3, 1);
    const more = x(1, 2, 2);
    for (const cache of [given, implied]) {
      await mha.forward(prompt, prompt, prompt, { cache });
      await mha.forward(more, more, more, { cache, rows: [2] });
    }
    const step = x(2, 2, 3);
    const positionIds = { data: new Int32Array([3, 4, 5, 6]), shape: [2, 2] };  // rows 1 and 2 at lengths 3 and 5
    const a = await mha.forward(step, step, step, { cache: given, rows: [1, 2], positionIds });
    const b = await mha.forward(step, step, step, { cache: implied, rows: [1, 2] });
    assert.ok(sameBits(a.output.data, b.output.data));
    assert.deepEqual(given.lengths, [3, 5, 7, 3]);
  } finally {
    mha.dispose();
  }
});
