// forward()'s `out` on the GPU (README's forward() options): a 'cpu' result read back from the
// device is written into the caller's array, the same bits as a fresh output, for a plain call, a
// cached step (the cache on the GPU) and float16 inputs (rounded into a Uint16Array); with output
// 'gpu-buffer' it is an OptionError naming out. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OptionError } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { sameBits } from '../contract/compare.mjs';
import { roundToHalf } from '../internals.mjs';
import { runs, seededModules } from './node_setup.mjs';

const E = 16;
const { module } = seededModules({ embedDim: E, numHeads: 4, numKvHeads: 2, rotary: {}, backend: 'webgpu' });
const rows = (B, L, seed) => ({ data: filled(B * L * E, seed), shape: [B, L, E] });

/** mha.forward(q, q, q, options) fresh and into `out`: on the GPU both, the same bits, output.data is out. */
async function assertGpuWritesOut(mha, q, options, out, what) {
  const fresh = await mha.forward(q, q, q, options());
  runs.length = 0;
  const given = await mha.forward(q, q, q, { ...options(), out });
  assert.deepEqual(runs, ['webgpu'], what);
  assert.equal(given.output.data, out, what);
  assert.ok(sameBits(out, fresh.output.data), what);
}

test('out on the GPU: a plain call, cached steps and float16 inputs, the same bits as a fresh output', async () => {
  const mha = await module();
  await assertGpuWritesOut(mha, rows(2, 3, 1), () => ({ isCausal: true }), new Float32Array(2 * 3 * E), 'plain');
  const [cache, twin] = [mha.createCache({ batchSize: 1, maxLength: 8 }), mha.createCache({ batchSize: 1, maxLength: 8 })];
  for (let step = 0; step < 2; step++) {
    const s = rows(1, 1, 10 + step);
    const fresh = await mha.forward(s, s, s, { cache: twin });
    const out = new Float32Array(E);
    assert.equal((await mha.forward(s, s, s, { cache, out })).output.data, out);
    assert.ok(sameBits(out, fresh.output.data), `step ${step}`);
  }
  const half = { data: roundToHalf('float16', filled(3 * E, 4)), shape: [1, 3, E], dtype: 'float16' };
  await assertGpuWritesOut(mha, half, () => ({}), new Uint16Array(3 * E), 'float16');
});

test("out with output: 'gpu-buffer' is an OptionError naming out", async () => {
  const mha = await module();
  const x = rows(1, 2, 5);
  await assert.rejects(mha.forward(x, x, x, { output: 'gpu-buffer', out: new Float32Array(2 * E) }),
    (e) => e instanceof OptionError && e.argument === 'out');
});
