// A WebGPU cache keeps every row at one length (issue 38: rows of different lengths run on WASM
// caches, tests/js/cache_rows.test.js): a forward() with `rows` and an unequal truncate(lengths)
// are CacheErrors naming rows / lengths, up front, that leave the cache as it was; truncate() with
// one length per row, all equal, is a plain truncate. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { CacheError } from '#webattention';
import { sameBits } from '../contract/compare.mjs';
import { withModule } from '../contract/cache_rollback.mjs';
import { filled } from '../contract/random.mjs';
import { gpu, runs } from './node_setup.mjs';

test('WebGPU: a rows call and unequal truncate(lengths) are CacheErrors that leave the cache as it was', async () => {
  const before = runs.length;
  const r = await withModule(api, { backend: 'webgpu', gpu }, async (mha) => {
    const make = () => mha.createCache({ batchSize: 2, maxLength: 16 });
    const [cache, twin] = [make(), make()];
    const x = (n, seed) => ({ data: filled(2 * n * 16, seed), shape: [2, n, 16] });
    const prompt = x(3, 5);
    await Promise.all([cache, twin].map((c) => mha.forward(prompt, prompt, prompt, { cache: c })));
    const one = { data: filled(16, 6), shape: [1, 1, 16] };
    const errors = [];
    await mha.forward(one, one, one, { cache, rows: [1] }).catch((e) => errors.push(e));
    try {
      cache.truncate([1, 2]);
    } catch (e) {
      errors.push(e);
    }
    cache.truncate([2, 2]);
    twin.truncate(2);
    const lengths = cache.lengths;
    const next = x(1, 7);
    const [a, b] = await Promise.all([cache, twin].map((c) => mha.forward(next, next, next, { cache: c })));
    return { errors, lengths, same: sameBits(a.output.data, b.output.data) };
  });
  assert.ok(runs.slice(before).every((where) => where === 'webgpu'), 'every call on the GPU');
  assert.deepEqual(r.errors.map((e) => [e instanceof CacheError, e.argument]), [[true, 'rows'], [true, 'lengths']]);
  assert.deepEqual(r.lengths, [2, 2]);
  assert.ok(r.same, 'the next call equals a twin cache\'s');
});
