// A cached step with GPU-resident tensors longer than one pass of a windowed cache (a long prefill
// on a sliding-window layer: webgpu/cached_passes.js): each pass copies its rows of the GPU input on
// the device, and 'gpu-buffer' results are put together there (pass_merge.js). The same bits as the
// same step from the host (whose passes slice host arrays), outputs, weights and the cache after
// it (a decode step on each); float16 inputs and results; in a GpuBatch (its passes submitted after
// the batch's earlier calls, its results the batch's; a batch refused after it puts the ring back
// from the snapshot); the refusal of an input without COPY_SRC, which leaves the cache as it was.
// Set-up: node_setup.mjs.
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

  test('in a GpuBatch, between calls of other layers: the same bits as unbatched, the caches alike after it', async () => {
    const [first, mha, last] = [await module({}, 31), await module({}, 32), await module({}, 33)];
    const plainCache = (m) => m.createCache({ batchSize: B, maxLength: 1024 });
    const run = async (caches, batch) => {
      const x = gpuTensor(host(L, 34).data, [B, L, E]);
      const at = (cache) => ({ cache, output: 'gpu-buffer', ...(batch ? { batch } : {}) });
      const y = (await first.forward(x, x, x, at(caches[0]))).output;
      const z = await mha.forward(y, y, y, { ...at(caches[1]), needWeights: true });
      const w = (await last.forward(z.output, z.output, z.output, { output: 'gpu-buffer', ...(batch ? { batch } : {}) })).output;
      if (batch) {
        assert.equal(batch.pending, 3);
        await batch.submit();
      }
      const values = await Promise.all([z.output, z.attnWeights, w].map((t) => t.read()));
      for (const t of [x, y, z.output, z.attnWeights, w]) (t.dispose ?? (() => t.gpuBuffer.destroy())).call(t);
      return values;
    };
    const want = [plainCache(first), cacheOf(mha)];
    const got = [plainCache(first), cacheOf(mha)];
    const [a, b] = [await run(want), await run(got, new GpuBatch())];
    ['output', 'weights', 'the next layer\'s output'].forEach((what, i) => assert.ok(sameBits(b[i], a[i]), what));
    assert.deepEqual(got.map((c) => c.length), want.map((c) => c.length));
    const next = host(1, 35);
    const [p, q] = [await mha.forward(next, next, next, { cache: want[1] }), await mha.forward(next, next, next, { cache: got[1] })];
    assert.ok(sameBits(q.output.data, p.output.data), 'a decode step after it: the caches hold the same');
  });

  test('in a GpuBatch refused at its submit: its results destroyed, its cache back (the ring overwritten by its passes put back)', async () => {
    const [mha, other] = [await module({}, 41), await module({}, 42)];
    const [cache, reference] = [cacheOf(mha), cacheOf(mha)];
    const before = host(20, 43);
    for (const c of [cache, reference]) await mha.forward(before, before, before, { cache: c });
    const batch = new GpuBatch();
    const x = gpuTensor(host(L, 44).data, [B, L, E]);
    const r = await mha.forward(x, x, x, { cache, output: 'gpu-buffer', batch });
    assert.equal(cache.length, 20 + L);
    const doomed = gpuTensor(host(1, 45).data, [B, 1, E]);
    const s2 = (await other.forward(doomed, doomed, doomed, { output: 'gpu-buffer', batch })).output;
    doomed.gpuBuffer.destroy();
    await assert.rejects(batch.submit(), (e) => e.name === 'BackendError' && e.argument === 'query' && /call 1 of the batch/.test(e.message));
    assert.equal(cache.length, 20, 'the length before the batch');
    await assert.rejects(r.output.read(), { name: 'BackendError' });
    for (const t of [r.output, s2]) t.dispose();
    x.gpuBuffer.destroy();
    const next = host(1, 46);
    const [p, q] = [await mha.forward(next, next, next, { cache: reference }), await mha.forward(next, next, next, { cache })];
    assert.ok(sameBits(q.output.data, p.output.data), 'a decode step after it: the storage as before the batch');
  });

  test('refused before anything runs, the cache as it was: an input without COPY_SRC', async () => {
    const mha = await module();
    const cache = cacheOf(mha);
    const input = host(L, 9);
    const refused = (e) => e.name === 'MemoryError' && e.argument === 'cache';
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
