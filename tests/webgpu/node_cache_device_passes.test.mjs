// A cached step with GPU-resident tensors longer than one pass of a windowed cache (a long prefill
// on a sliding-window layer: webgpu/cached_passes.js): each pass copies its rows of the GPU input on
// the device, and 'gpu-buffer' results are put together there (pass_merge.js). The same bits as the
// same step from the host (whose passes slice host arrays), outputs, weights and the cache after
// it (a decode step on each); float16 inputs and results; the refusals (a batched call, an input
// without COPY_SRC), which leave the cache as it was. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GpuBatch } from '#webattention';
import { filled, sameBits } from '../contract/contract.mjs';
import { roundToHalf } from '../internals.mjs';
import { adapterName, runs, seededModules } from './node_setup.mjs';
import { COPY_DST, STORAGE, gpuTensor, halfGpuTensor } from './gpu_tensor_inputs.mjs';

const E = 16;
const B = 2;
const WINDOW = 8;  // a ring of 72 slots: 65 rows a pass (storage/kv_ring.js ringGeometry())
const L = 150;     // three passes
const { module } = seededModules({ embedDim: E, numHeads: 4, numKvHeads: 2, backend: 'webgpu', rotary: { dim: 4 } });
const cacheOf = (mha) => mha.createCache({ batchSize: B, maxLength: 1024, window: WINDOW });
const host = (rows, seed) => ({ data: filled(B * rows * E, seed), shape: [B, rows, E] });
const half = (t) => ({ data: roundToHalf('float16', t.data), shape: t.shape, dtype: 'float16' });
// A float16 host tensor's bits in a GPU buffer.
const halfOnGpu = (t) => halfGpuTensor(t.data, t.shape);
const read = async (t) => (t.read ? t.read() : t.data);

// The step from the host and from the GPU (each on a cache of its own), then one decode step on each:
// the same bits throughout.
async function sameAsHost({ toDevice, options = {}, input = host(L, 5), next = host(1, 6) }) {
  const mha = await module();
  const [hostCache, deviceCache] = [cacheOf(mha), cacheOf(mha)];
  const want = await mha.forward(input, input, input, { ...options, cache: hostCache, output: 'cpu' });
  runs.length = 0;
  const x = toDevice(input);
  const got = await mha.forward(x, x, x, { ...options, cache: deviceCache });
  assert.deepEqual(runs, ['webgpu'], 'one call on the GPU');
  assert.deepEqual(got.output.shape, want.output.shape);
  assert.ok(sameBits(await read(got.output), want.output.data), 'the output');
  if (options.needWeights) assert.ok(sameBits(await read(got.attnWeights), want.attnWeights.data), 'the weights');
  assert.equal(deviceCache.length, hostCache.length);
  const [a, b] = [await mha.forward(next, next, next, { cache: hostCache }), await mha.forward(next, next, next, { cache: deviceCache })];
  assert.ok(sameBits(b.output.data, a.output.data), 'a decode step after it: the caches hold the same');
  for (const t of [got.output, got.attnWeights]) t?.dispose?.();
}

describe(`a cached step of GPU tensors over several passes of a windowed cache (${adapterName})`, () => {
  test("float32 GPU input, 'gpu-buffer' results with per-head weights = the host's step", () =>
    sameAsHost({ toDevice: (t) => gpuTensor(t.data, t.shape), options: { output: 'gpu-buffer', needWeights: true, averageAttnWeights: false } }));

  test('float32 GPU input, host results with averaged weights = the host\'s step', () =>
    sameAsHost({ toDevice: (t) => gpuTensor(t.data, t.shape), options: { needWeights: true } }));

  test("float16 GPU input, float16 'gpu-buffer' results = the host's float16 step", () =>
    sameAsHost({ toDevice: halfOnGpu, input: half(host(L, 7)), next: half(host(1, 8)), options: { output: 'gpu-buffer' } }));

  test('host input, \'gpu-buffer\' results (put together on the device) = the host\'s step', () =>
    sameAsHost({ toDevice: (t) => t, options: { output: 'gpu-buffer' } }));

  test('refused before anything runs, the cache as it was: a batched call; an input without COPY_SRC', async () => {
    const mha = await module();
    const cache = cacheOf(mha);
    const input = host(L, 9);
    const refused = (e) => e.name === 'MemoryError' && e.argument === 'cache';
    const batch = new GpuBatch();
    const x = gpuTensor(input.data, input.shape);
    await assert.rejects(mha.forward(x, x, x, { cache, output: 'gpu-buffer', batch }), refused);
    const storageOnly = gpuTensor(input.data, input.shape, { usage: STORAGE | COPY_DST });
    await assert.rejects(mha.forward(storageOnly, storageOnly, storageOnly, { cache }), refused);
    assert.equal(cache.length, 0);
    const short = gpuTensor(input.data.subarray(0, B * 60 * E), [B, 60, E]);
    await mha.forward(short, short, short, { cache, output: 'gpu-buffer' }).then((r) => r.output.dispose());
    assert.equal(cache.length, 60, 'one pass still takes GPU tensors');
  });

  test('float16 of an odd width (copies move whole words): refused, float16 results and inputs alike', async () => {
    const odd = await module({ embedDim: 15, numHeads: 3, numKvHeads: 3, rotary: undefined });
    const cache = cacheOf(odd);
    const input = half({ data: filled(B * L * 15, 10), shape: [B, L, 15] });
    const refused = (why) => (e) => e.name === 'MemoryError' && e.argument === 'cache' && e.message.includes(why);
    await assert.rejects(odd.forward(input, input, input, { cache, output: 'gpu-buffer' }), refused('float16 results need even widths'));
    const x = halfOnGpu(input);
    await assert.rejects(odd.forward(x, x, x, { cache }), refused('float16 inputs need an even width'));
    assert.equal(cache.length, 0);
  });
});
