// forward()'s `out` with output 'gpu-buffer' (docs/webgpu/tensors.md#tensors-on-the-gpu):
// the output copied into a place of the caller's own GPUBuffer, bit for bit the output of the same
// call without it (plain, cached steps, float16, a windowed step cut into passes, a GpuBatch of
// layers on ping-pong buffers, scaledDotProductAttention(), a call the NaN rule sends to the CPU);
// a cached step into `out` makes no buffer; the result's dispose() leaves the buffer; bad `out`s
// are typed errors naming out, a destroyed one too (unbatched and in a batch), and the module stays
// usable. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GpuBatch, scaledDotProductAttention } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { roundToHalf } from '../internals.mjs';
import { adapterName, device, freshDevice, runs, seededModules } from './node_setup.mjs';
import { COPY_DST, COPY_SRC, MAP_READ, STORAGE, gpuTensor } from './gpu_tensor_inputs.mjs';
import { counted } from './gpu_batch_steps.mjs';

const E = 16;
const { module } = seededModules({ embedDim: E, numHeads: 4, numKvHeads: 2, rotary: {}, backend: 'webgpu' });
const rows = (B, L, seed) => ({ data: filled(B * L * E, seed), shape: [B, L, E] });
const USAGE = STORAGE | COPY_SRC | COPY_DST;
// A buffer with `bytes` after a 256-byte head, the place of an output at byteOffset 256.
const place = (bytes, usage = USAGE, on = device) => ({ gpuBuffer: on.createBuffer({ size: 256 + bytes, usage }), byteOffset: 256 });

// The values of both calls' outputs: one with `out`, one without, on twin caches when cached.
async function withAndWithout(mha, q, options, out) {
  const fresh = await mha.forward(q, q, q, { ...options(0), output: 'gpu-buffer' });
  const given = await mha.forward(q, q, q, { ...options(1), output: 'gpu-buffer', out });
  assert.equal(given.output.gpuBuffer, out.gpuBuffer);
  assert.equal(given.output.byteOffset, out.byteOffset);
  const values = [await given.output.read(), await fresh.output.read()];
  fresh.output.dispose();
  given.output.dispose();  // the caller's buffer: left alone
  assert.equal(await refusedCopy(out.gpuBuffer), null, 'dispose() left the caller\'s buffer');
  return values;
}

// A float32 GPU tensor's values (a copy to a mappable buffer).
async function readBack({ gpuBuffer, shape }) {
  const bytes = shape.reduce((a, b) => a * b) * 4;
  const staging = device.createBuffer({ size: bytes, usage: MAP_READ | COPY_DST });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(gpuBuffer, 0, staging, 0, bytes);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(MAP_READ);
  const values = new Float32Array(staging.getMappedRange().slice(0));
  staging.destroy();
  return values;
}

// WebGPU's error for a copy out of `buffer` (destroyed: refused), or null.
async function refusedCopy(buffer) {
  const probe = device.createBuffer({ size: 4, usage: COPY_DST });
  device.pushErrorScope('validation');
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, 0, probe, 0, 4);
  device.queue.submit([encoder.finish()]);
  const error = await device.popErrorScope();
  probe.destroy();
  return error;
}

describe(`out with output 'gpu-buffer' (Dawn, ${adapterName})`, () => {
  test('plain, cached, float16 and a windowed step of several passes: the output without out, bit for bit, in place', async () => {
    const mha = await module();
    const [got, want] = await withAndWithout(mha, rows(2, 3, 1), () => ({ isCausal: true }), place(2 * 3 * E * 4));
    assert.deepEqual(got, want, 'plain');
    const caches = [mha.createCache({ maxLength: 8 }), mha.createCache({ maxLength: 8 })];
    for (const [step, L] of [[0, 3], [1, 1]]) {
      const [a, b] = await withAndWithout(mha, rows(1, L, 10 + step), (i) => ({ cache: caches[i] }), place(L * E * 4));
      assert.deepEqual(a, b, `cached step ${step}`);
    }
    const half = { data: roundToHalf('float16', filled(3 * E, 4)), shape: [1, 3, E], dtype: 'float16' };
    const [h1, h2] = await withAndWithout(mha, half, () => ({}), { ...place(3 * E * 2), dtype: 'float16' });
    assert.ok(h1 instanceof Uint16Array);
    assert.deepEqual(h1, h2, 'float16');
    // out the call's own input buffer: written after the kernels read it.
    const own = gpuTensor(filled(3 * E, 6), [1, 3, E]);
    const before = await mha.forward(own, own, own, { output: 'gpu-buffer' });
    await mha.forward(own, own, own, { output: 'gpu-buffer', out: own });
    assert.deepEqual(await readBack(own), await before.output.read(), 'out the input itself');
    before.output.dispose();
    own.gpuBuffer.destroy();
    // 70 rows: two passes of a window-4 ring (65 rows a pass: storage/kv_ring.js ringGeometry()).
    const windowed = [mha.createCache({ maxLength: 128, window: 4 }), mha.createCache({ maxLength: 128, window: 4 })];
    const [w1, w2] = await withAndWithout(mha, gpuTensor(filled(70 * E, 5), [1, 70, E]), (i) => ({ cache: windowed[i] }), place(70 * E * 4));
    assert.deepEqual(w1, w2, 'a windowed step of several passes');
  });

  test('a decode step into out makes no buffer; a batch of layers on ping-pong buffers is one submit, the per-layer values', async () => {
    const layers = [await module({}, 31), await module({}, 32)];
    const caches = layers.map((m) => m.createCache({ maxLength: 16 }));
    const reference = layers.map((m) => m.createCache({ maxLength: 16 }));
    const ping = [place(E * 4), place(E * 4)].map((p) => ({ ...p, shape: [1, 1, E] }));
    const batch = new GpuBatch();
    const layerStep = async (x, cacheList, into) => {
      let t = x;
      for (const [i, m] of layers.entries()) {
        t = (await m.forward(t, t, t, { cache: cacheList[i], output: 'gpu-buffer', ...(into ? { out: into[i], batch } : {}) })).output;
      }
      return t;
    };
    for (let s = 0; s < 4; s++) {
      const x = gpuTensor(filled(E, 40 + s), [1, 1, E]);
      const want = await layerStep(x, reference, null);
      const { buffers: made, result: got } = await counted(async () => {
        const t = await layerStep(x, caches, ping);
        await batch.submit();
        return t;
      });
      if (s > 1) assert.equal(made, 0, `step ${s}: no buffer made`);
      assert.equal(got.gpuBuffer, ping[1].gpuBuffer);
      assert.deepEqual(await got.read(), await want.read(), `step ${s}`);
      x.gpuBuffer.destroy();
    }
  });

  test("scaledDotProductAttention() and a call the NaN rule sends to the CPU write out too", async () => {
    const q = gpuTensor(filled(2 * 5 * 8, 60), [2, 5, 8]);
    const want = await scaledDotProductAttention(q, q, q, { gpu: device, output: 'gpu-buffer', isCausal: true });
    const out = place(2 * 5 * 8 * 4);
    const got = await scaledDotProductAttention(q, q, q, { gpu: device, output: 'gpu-buffer', isCausal: true, out });
    assert.equal(got.output.gpuBuffer, out.gpuBuffer);
    assert.deepEqual(await got.output.read(), await want.output.read());
    const mha = await module();
    const x = rows(1, 3, 61);
    x.data[5] = NaN;  // a row sees it: the call runs on the CPU
    const fresh = await mha.forward(x, x, x, { output: 'gpu-buffer' });
    const into = place(3 * E * 4);
    runs.length = 0;
    const cpu = await mha.forward(x, x, x, { output: 'gpu-buffer', out: into });
    assert.deepEqual(runs, ['wasm']);
    assert.equal(cpu.output.gpuBuffer, into.gpuBuffer);
    assert.deepEqual(await cpu.output.read(), await fresh.output.read());
    for (const t of [want.output, fresh.output]) t.dispose();
    q.gpuBuffer.destroy();
  });

  test('bad out: typed errors naming out, before anything runs; the module usable after', async () => {
    const mha = await module();
    const x = rows(1, 2, 70);
    const bytes = 2 * E * 4;
    const mapped = device.createBuffer({ size: bytes, usage: MAP_READ | COPY_DST });
    const pending = mapped.mapAsync(MAP_READ);
    const cases = [
      [new Float32Array(2 * E), 'OptionError'],
      [{ gpuBuffer: {} }, 'DTypeError'],
      [{ gpuBuffer: new Proxy(device.createBuffer({ size: bytes, usage: USAGE }), {}) }, 'DTypeError'],
      [{ gpuBuffer: device.createBuffer({ size: bytes, usage: STORAGE | COPY_SRC }) }, 'DTypeError'],  // no COPY_DST
      [{ gpuBuffer: device.createBuffer({ size: bytes - 4, usage: USAGE }) }, 'ShapeError'],
      [{ ...place(bytes), byteOffset: 258 }, 'ShapeError'],
      [{ ...place(bytes), shape: [1, 3, E] }, 'ShapeError'],
      [{ ...place(bytes), dtype: 'float16' }, 'DTypeError'],
      [{ gpuBuffer: mapped }, 'DTypeError'],
    ];
    for (const [out, name] of cases) {
      await assert.rejects(mha.forward(x, x, x, { output: 'gpu-buffer', out }), { name, argument: 'out' }, `${name} for ${JSON.stringify(out)}`);
    }
    await pending;
    mapped.destroy();
    const fine = place(bytes);
    const ok = await mha.forward(x, x, x, { output: 'gpu-buffer', out: fine });
    assert.deepEqual(await ok.output.read(), (await mha.forward(x, x, x)).output.data);
  });

  test('a destroyed out, or one of another device: a BackendError naming out, unbatched and in a batch; the cache back; usable after', async () => {
    const mha = await module();
    const other = await freshDevice();
    const x = gpuTensor(filled(E, 80), [1, 1, E]);
    const cache = mha.createCache({ maxLength: 8 });
    const destroyed = place(E * 4);
    destroyed.gpuBuffer.destroy();
    await assert.rejects(mha.forward(x, x, x, { output: 'gpu-buffer', out: destroyed }), { name: 'BackendError', argument: 'out' });
    await assert.rejects(mha.forward(x, x, x, { output: 'gpu-buffer', out: place(E * 4, USAGE, other) }), { name: 'BackendError', argument: 'out' });
    const batch = new GpuBatch();
    const doomed = place(E * 4);
    await mha.forward(x, x, x, { cache, output: 'gpu-buffer', out: doomed, batch });
    assert.equal(cache.length, 1);
    doomed.gpuBuffer.destroy();
    await assert.rejects(batch.submit(), (e) => e.name === 'BackendError' && e.argument === 'out' && /call 0 of the batch/.test(e.message));
    assert.equal(cache.length, 0, 'the cache back');
    const fine = place(E * 4);
    const ok = await mha.forward(x, x, x, { cache, output: 'gpu-buffer', out: fine });
    assert.deepEqual(await ok.output.read(), (await mha.forward(x, x, x, { cache: mha.createCache({ maxLength: 8 }) })).output.data);
    x.gpuBuffer.destroy();
    other.destroy();
  });
});
