// A batched cache's rows of different lengths (issue 38) on the GPU: forward() with `rows`, calls
// on every row from their own lengths, and truncate(lengths), each batch's cache row and length a
// kernel input (kernels/row_table.wgsl.js). The runs of tests/contract/cache_rows.mjs
// (tests/js/cache_rows.test.js on WASM): bit for bit against one GPU cache per row fed the same
// tokens, and each row within tolerance of its float64 reference; misuse as on WASM; the weights,
// key padding and verification masks of such rows, bit for bit a cache of their own's (weights 0
// past each row's keys). Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { sameBits } from '../contract/compare.mjs';
import { withModule } from '../contract/cache_rollback.mjs';
import { ROWS_CREATE, ROWS_GQA_CREATE, ROWS_LAYOUTS, checkHostileRows, checkRowsRun, hostileRowsRun, rowsRun } from '../contract/cache_rows.mjs';
import { filled } from '../contract/random.mjs';
import { gpu, runs } from './node_setup.mjs';

const ON_GPU = { backend: 'webgpu', gpu };
const onlyGpu = (before) => runs.slice(before).every((where) => where === 'webgpu');

const cases = [...ROWS_LAYOUTS.map((layout) => [layout, ROWS_CREATE]), [ROWS_LAYOUTS[3], ROWS_GQA_CREATE]];
for (const [layout, create] of cases) {
  test(`WebGPU: rows of different lengths = one cache per row, bit for bit (${JSON.stringify(layout.cache)}, ${create.numKvHeads ? 'GQA' : 'MHA'})`, async () => {
    const before = runs.length;
    const r = await rowsRun(api, layout, { ...create, ...ON_GPU });
    assert.ok(onlyGpu(before), 'every call on the GPU');
    checkRowsRun(assert, api, r, layout);
  });
}

test('WebGPU: misuse of rows and lengths is a typed error naming them that leaves the cache as it was', async () => {
  const before = runs.length;
  const r = await hostileRowsRun(api, ON_GPU);
  assert.ok(onlyGpu(before), 'every call on the GPU');
  checkHostileRows(assert, api, r);
});

// n batch rows of `rows` seeded inputs of width 16, and batch row b of one as a batch of 1.
const x = (n, rows, seed) => ({ data: filled(n * rows * 16, seed), shape: [n, rows, 16] });
const rowOf = (t, b) => ({ data: t.data.subarray(b * t.shape[1] * 16, (b + 1) * t.shape[1] * 16), shape: [1, t.shape[1], 16] });

test('WebGPU: the weights and masks of rows of different lengths = one cache per row\'s, bit for bit', async () => {
  const checked = await withModule(api, { embedDim: 16, numHeads: 4, rotary: { dim: 4 }, ...ON_GPU }, async (mha) => {
    const batched = mha.createCache({ batchSize: 2, maxLength: 32 });
    const alone = [0, 1].map(() => mha.createCache({ batchSize: 1, maxLength: 32 }));
    const feed = async (input, rows) => {
      await mha.forward(input, input, input, { cache: batched, rows });
      for (const [i, b] of (rows ?? [0, 1]).entries()) await mha.forward(rowOf(input, i), rowOf(input, i), rowOf(input, i), { cache: alone[b] });
    };
    await feed(x(2, 3, 5));
    await feed(x(1, 4, 9), [1]);  // rows at 3 and 7
    let count = 0;
    // L = 1 runs the decode kernels, L = 3 flash; averaged and per head; a key padding mask
    // [B, T] whose row b's first T_b columns are a cache of its own's [1, T_b]; a verification
    // mask [B, L, L] whose row b's block is a cache of its own's [1, L, L].
    for (const [L, averageAttnWeights, padded] of [[1, true, false], [1, false, true], [3, true, true], [3, false, false]]) {
      const input = x(2, L, 11 + L);
      const T = Math.max(...batched.lengths) + L;
      const kpm = Uint8Array.from({ length: 2 * T }, (_, k) => (k % T + Math.floor(k / T)) % 3 === 1);  // its own per row
      const verify = Uint8Array.from({ length: 2 * L * L }, (_, k) => k % L < Math.floor(k / L) % L && (k + Math.floor(k / (L * L))) % 2 === 1);
      const masked = L > 1 && { attnMask: { data: verify, shape: [2, L, L] } };
      const options = { needWeights: true, averageAttnWeights };
      const r = await mha.forward(input, input, input, { cache: batched, ...options, ...masked, ...(padded && { keyPaddingMask: { data: kpm, shape: [2, T] } }) });
      assert.equal(r.attnWeights.shape.at(-1), T);
      for (const b of [0, 1]) {
        const Tb = batched.lengths[b];
        const own = { ...(padded && { keyPaddingMask: { data: kpm.slice(b * T, b * T + Tb), shape: [1, Tb] } }),
          ...(masked && { attnMask: { data: verify.slice(b * L * L, (b + 1) * L * L), shape: [1, L, L] } }) };
        const s = await mha.forward(rowOf(input, b), rowOf(input, b), rowOf(input, b), { cache: alone[b], ...options, ...own });
        const blocks = s.attnWeights.data.length / Tb;  // (heads ×) L rows of weights
        assert.ok(sameBits(r.output.data.subarray(b * L * 16, (b + 1) * L * 16), s.output.data), `output, row ${b}, L ${L}`);
        for (let k = 0; k < blocks; k++) {
          const row = r.attnWeights.data.subarray((b * blocks + k) * T, (b * blocks + k + 1) * T);
          assert.ok(sameBits(row.subarray(0, Tb), s.attnWeights.data.subarray(k * Tb, (k + 1) * Tb)), `weights, row ${b}, L ${L}, ${k}`);
          assert.ok(row.subarray(Tb).every((v) => Object.is(v, 0)), `0 past row ${b}'s keys`);
          count += 1;
        }
      }
    }
    return count;
  });
  assert.equal(checked, 2 * (1 + 4 + 3 + 12));
});

test('WebGPU: a verification mask over two passes of a window\'s ring on rows of different lengths = one cache per row\'s, bit for bit', async () => {
  const L = 70;  // a window of 8 appends at most 64 rows a pass: two passes
  const r = await withModule(api, { embedDim: 16, numHeads: 4, rotary: { dim: 4 }, ...ON_GPU }, async (mha) => {
    const batched = mha.createCache({ batchSize: 2, window: 8 });
    const alone = [0, 1].map(() => mha.createCache({ batchSize: 1, window: 8 }));
    const prompt = x(2, 3, 21);
    const more = x(1, 4, 22);
    await mha.forward(prompt, prompt, prompt, { cache: batched });
    await mha.forward(more, more, more, { cache: batched, rows: [1] });
    for (const b of [0, 1]) await mha.forward(rowOf(prompt, b), rowOf(prompt, b), rowOf(prompt, b), { cache: alone[b] });
    await mha.forward(more, more, more, { cache: alone[1] });
    const input = x(2, L, 23);
    const verify = Uint8Array.from({ length: 2 * L * L }, (_, k) => k % L < Math.floor(k / L) % L && (k * 7 + Math.floor(k / (L * L))) % 5 === 1);
    const { output } = await mha.forward(input, input, input, { cache: batched, attnMask: { data: verify, shape: [2, L, L] } });
    const same = [];
    for (const b of [0, 1]) {
      const own = { attnMask: { data: verify.slice(b * L * L, (b + 1) * L * L), shape: [1, L, L] } };
      const s = await mha.forward(rowOf(input, b), rowOf(input, b), rowOf(input, b), { cache: alone[b], ...own });
      same.push(sameBits(output.data.subarray(b * L * 16, (b + 1) * L * 16), s.output.data));
    }
    return { same, lengths: batched.lengths };
  });
  assert.deepEqual(r.lengths, [73, 77]);
  assert.deepEqual(r.same, [true, true]);
});
