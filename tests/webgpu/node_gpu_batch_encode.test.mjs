// GpuBatch.encode() (docs/webgpu/steps.md#one-submit-per-step, "Your own work in the
// step"): the caller's own kernels between batched layers (here a residual add) run in the batch's
// one queue.submit(), in recording order, bit for bit the same work submitted piece by piece; its
// refusals (a device not a module's; fn not a function, async or nested; a throw from fn) record
// nothing and leave the batch usable; work WebGPU refuses rejects submit() naming the call and
// `fn`, the caches back. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GpuBatch } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { adapterName, device, freshDevice, seededModules } from './node_setup.mjs';
import { COPY_DST, COPY_SRC, STORAGE, gpuTensor } from './gpu_tensor_inputs.mjs';
import { counted } from './gpu_batch_steps.mjs';

const E = 32;
const { module } = seededModules({ embedDim: E, numHeads: 4, numKvHeads: 2, backend: 'webgpu' });

// The caller's kernel: y = h + x, elementwise (a transformer block's residual add).
const residualPipeline = device.createComputePipeline({
  layout: 'auto',
  compute: {
    entryPoint: 'main',
    module: device.createShaderModule({
      code: `@group(0) @binding(0) var<storage, read> h: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) {
  if (id.x < arrayLength(&y)) { y[id.x] = h[id.x] + x[id.x]; }
}`,
    }),
  },
});

// Encodes y = h + x on `encoder` into a new buffer; returns y as a GPU tensor of x's shape.
function residual(encoder, h, x) {
  const floats = x.shape.reduce((a, b) => a * b);
  const y = device.createBuffer({ size: floats * 4, usage: STORAGE | COPY_SRC | COPY_DST });
  const group = device.createBindGroup({
    layout: residualPipeline.getBindGroupLayout(0),
    entries: [h.gpuBuffer, x.gpuBuffer, y].map((buffer, binding) => ({ binding, resource: { buffer } })),
  });
  const pass = encoder.beginComputePass();
  pass.setPipeline(residualPipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(Math.ceil(floats / 64));
  pass.end();
  return { gpuBuffer: y, shape: x.shape, dtype: 'float32' };
}

// One block step: h = a(x); y = h + x (the caller's pass); out = b(y). With `batch` everything is
// recorded into it (the pass by encode()); without, each piece is submitted on its own.
async function blockStep([a, b], caches, x, batch) {
  const opts = (i) => ({ cache: caches[i], output: 'gpu-buffer', ...(batch ? { batch } : {}) });
  const h = (await a.forward(x, x, x, opts(0))).output;
  let y;
  if (batch) {
    y = batch.encode(device, (encoder) => residual(encoder, h, x));
  } else {
    const encoder = device.createCommandEncoder();
    y = residual(encoder, h, x);
    device.queue.submit([encoder.finish()]);
  }
  const out = (await b.forward(y, y, y, opts(1))).output;
  h.dispose();
  return { out, y };
}

const layers = async (seed) => [await module({}, seed), await module({}, seed + 1)];
const caches = (pair) => pair.map((m) => m.createCache({ maxLength: 16 }));

describe(`GpuBatch.encode() (Dawn, ${adapterName})`, () => {
  test("the caller's kernel between two layers: one submit a step, no mapAsync, the pieces submitted alone bit for bit", async () => {
    const pair = await layers(700);
    const [perPiece, batched] = [caches(pair), caches(pair)];
    const batch = new GpuBatch();
    for (const [s, rows] of [[0, 3], [1, 1], [2, 1]]) {
      const x = gpuTensor(filled(rows * E, 710 + s), [1, rows, E]);
      const want = await blockStep(pair, perPiece, x, null);
      const { submits, maps, result: got } = await counted(async () => {
        const r = await blockStep(pair, batched, x, batch);
        assert.equal(batch.pending, 3, 'two forward() calls and one encode()');
        await batch.submit();
        return r;
      });
      assert.equal(submits, 1, `step ${s}: one queue.submit()`);
      assert.equal(maps, 0, `step ${s}: no mapAsync`);
      assert.deepEqual(await got.out.read(), await want.out.read(), `step ${s}`);
      for (const t of [got.out, want.out]) t.dispose();
      for (const t of [got.y, want.y, x]) t.gpuBuffer.destroy();
    }
    assert.deepEqual(await batched[1].read(), await perPiece[1].read());
  });

  test('encode() returns what fn returned; its bad arguments and a throw from fn record nothing; the batch stays usable', async () => {
    const pair = await layers(720);
    const other = await freshDevice();
    const batch = new GpuBatch();
    const x = gpuTensor(filled(E, 721), [1, 1, E]);
    const refusals = [
      [() => batch.encode(new Proxy(device, {}), () => {}), 'OptionError', 'device'],
      [() => batch.encode({ createCommandEncoder: () => ({}) }, () => {}), 'OptionError', 'device'],
      [() => batch.encode(other, () => {}), 'OptionError', 'device'],  // no module computes on it
      [() => batch.encode(device, null), 'OptionError', 'fn'],
      [() => batch.encode(device, async () => {}), 'OptionError', 'fn'],
      [() => batch.encode(device, () => batch.encode(device, () => {})), 'OptionError', 'fn'],
    ];
    for (const [call, name, argument] of refusals) {
      assert.throws(call, { name, argument });
      assert.equal(batch.pending, 0, `${argument}: nothing recorded`);
    }
    assert.throws(() => batch.encode(device, () => { throw new RangeError('mine'); }), { name: 'RangeError', message: 'mine' });
    assert.equal(batch.encode(device, () => 42), 42);
    assert.equal(batch.pending, 1, 'the encode() that returned');
    await batch.submit();
    const [want, got] = [await blockStep(pair, caches(pair), x, null), await blockStep(pair, caches(pair), x, batch)];
    await batch.submit();
    assert.deepEqual(await got.out.read(), await want.out.read());
    for (const t of [got.out, want.out]) t.dispose();
    for (const t of [got.y, want.y, x]) t.gpuBuffer.destroy();
    other.destroy();
  });

  test('work WebGPU refuses (a pass left open): submit() rejects naming the call and fn; results destroyed, caches back, usable after', async () => {
    const pair = await layers(740);
    const [reference, batched] = [caches(pair), caches(pair)];
    const x = gpuTensor(filled(2 * E, 741), [1, 2, E]);
    for (const c of [reference, batched]) await blockStep(pair, c, x, null).then(({ out, y }) => { out.dispose(); y.gpuBuffer.destroy(); });
    const batch = new GpuBatch();
    const h = (await pair[0].forward(x, x, x, { cache: batched[0], output: 'gpu-buffer', batch })).output;
    batch.encode(device, (encoder) => { encoder.beginComputePass(); });  // never ended
    assert.deepEqual(batched.map((c) => c.length), [4, 2]);
    await assert.rejects(batch.submit(), (e) => e.name === 'BackendError' && e.argument === 'fn' && /call 1 of the batch/.test(e.message));
    assert.deepEqual(batched.map((c) => c.length), [2, 2], 'the cache back to its length before the batch');
    await assert.rejects(h.read(), { name: 'BackendError' });
    h.dispose();
    const step = gpuTensor(filled(E, 742), [1, 1, E]);
    const got = await blockStep(pair, batched, step, batch);
    await batch.submit();
    const want = await blockStep(pair, reference, step, null);
    assert.deepEqual(await got.out.read(), await want.out.read());
    for (const t of [got.out, want.out]) t.dispose();
    for (const t of [got.y, want.y, x, step]) t.gpuBuffer.destroy();
  });
});
