// A batched cache's rows of different lengths (issue 38) on WASM, on the module and thread count
// the environment picks (WEBATTENTION_WASM, WEBATTENTION_THREADS: the pool leaves cache calls to
// the calling thread, so they run there too). The runs: tests/contract/cache_rows.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { CacheError, OptionError, ShapeError } from '#webattention';
import { sameBits } from '../contract/compare.mjs';
import { filled, seededStateDict } from '../contract/random.mjs';
import { outsideTolerance } from '../contract/cache_rollback.mjs';
import { ROWS_CREATE, ROWS_GQA_CREATE, ROWS_LAYOUTS, hostileRowsRun, rowsRun } from '../contract/cache_rows.mjs';

const runs = [...ROWS_LAYOUTS.map((layout) => [layout, ROWS_CREATE]), [ROWS_LAYOUTS[1], ROWS_GQA_CREATE], [ROWS_LAYOUTS[3], ROWS_GQA_CREATE]];
for (const [layout, create] of runs) {
  test(`rows of different lengths = one cache per row, bit for bit (${JSON.stringify(layout.cache)}, ${create.numKvHeads ? 'GQA' : 'MHA'})`, async () => {
    const r = await rowsRun(api, layout, create);
    for (const [s, step] of r.steps.entries()) {
      step.rows.forEach((b, i) => {
        const n = step.alone[i].length;
        assert.ok(sameBits(step.batched.subarray(i * n, (i + 1) * n), step.alone[i]), `step ${s}, row ${b}`);
      });
    }
    const long = layout.long;
    assert.deepEqual(r.lengths.slice(0, 7), [[3, 3, 3, 3], [3, 9, 9, 9], [3, 9, 20, 20], [3, 9, 20, 20 + long],
      [4, 9, 21, 20 + long], [6, 11, 23, 22 + long], [7, 12, 23, 23 + long]]);
    assert.deepEqual(r.lengths.slice(7), [[2, 9, 20, 40], [4, 11, 22, 42], [4, 14, 22, 45], [4, 14, 23, 45]]);
    assert.ok(r.lengthError instanceof CacheError, String(r.lengthError));
    assert.equal(r.lengthError.argument, 'lengths');
    r.outputs.forEach((out, b) => {
      if (!r.reference) return;
      const shape = [out.length / 16, 16];
      assert.equal(outsideTolerance({ data: out, shape }, { data: r.reference[b], shape }), null, `row ${b}`);
    });
  });
}

test('misuse of rows and lengths is a typed error naming them that leaves the cache as it was', async () => {
  const r = await hostileRowsRun(api);
  const expected = {
    'rows out of range': [ShapeError, 'rows'], 'a negative row': [ShapeError, 'rows'],
    'a repeated row': [ShapeError, 'rows'], 'unsorted rows': [ShapeError, 'rows'],
    'a fractional row': [ShapeError, 'rows'], 'rows not a list': [ShapeError, 'rows'],
    'batch 3 with 2 rows': [ShapeError, 'rows'], 'batch 1 with 2 rows': [ShapeError, 'rows'],
    'rows past maxLength': [CacheError, 'cache'],
    'truncate(lengths) of 3 rows': [CacheError, 'lengths'], 'truncate(lengths) above a row': [CacheError, 'lengths'],
    'truncate(lengths) below 0': [CacheError, 'lengths'], 'truncate(lengths) not integers': [CacheError, 'lengths'],
    'truncate(length) above the shorter rows': [CacheError, 'length'],
    'cache.length': [CacheError, 'lengths'], 'keep() after a rows call': [CacheError, 'indices'],
  };
  assert.deepEqual(r.refusals.map((x) => x.what), Object.keys(expected));
  for (const { what, error } of r.refusals) {
    const [type, argument] = expected[what];
    assert.ok(error instanceof type, `${what}: ${error}`);
    assert.equal(error.argument, argument, what);
  }
  assert.ok(r.readError instanceof CacheError && r.readError.argument === 'lengths', String(r.readError));
  assert.deepEqual(r.lengths, [4, 6, 4, 4]);
  assert.ok(r.unchanged, 'the next call after the refusals equals a twin cache\'s');
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
