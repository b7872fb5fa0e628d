// scaledDotProductAttention() and selfAttention() on the GPU (api/attention_engines.js): the
// PyTorch SDPA fixtures with backend 'webgpu', each checked to have run there; random calls
// against the same call on WASM (head widths of their own, masks, causal, large logits, rows with
// every key masked, the flash and the decode path); GPU tensors in, 'gpu-buffer' results out,
// float16 too; the NaN rule (a call whose rows see a NaN runs on WASM); calls the device cannot
// take; a GpuBatch; the typed errors of the backend options. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { runCase } from '../contract/contract.mjs';
import { loadFixtures } from '../js/fixtures.js';
import { MAX_ENGINES, asFloat32, engineHooks, roundToHalf } from '../internals.mjs';
import { adapterName, assertClose, device, gpu, runs } from './node_setup.mjs';
import { gpuTensor, halfGpuTensor } from './gpu_tensor_inputs.mjs';

const { scaledDotProductAttention: sdpa, selfAttention } = api;
const sdpaFixtures = loadFixtures().filter((c) => c.kind === 'sdpa' || c.kind === 'self');
const onGpu = { backend: 'webgpu', gpu };

// Seeded values in [-amplitude, amplitude).
const values = (n, seed, amplitude = 1) => Float32Array.from({ length: n }, (_, i) => amplitude * Math.sin(i * 12.9898 + seed * 78.233));
const tensor = (shape, seed, amplitude) => ({ data: values(shape.reduce((a, b) => a * b, 1), seed, amplitude), shape });
// A GpuTensor read back as a host tensor.
const onHost = async (t) => ({ data: await t.read(), shape: t.shape });

// The call on WASM and on the GPU (recorded: the GPU's run only), compared output and weights.
async function sameAsWasm({ q, k, v, options = {} }, what) {
  const want = await sdpa(q, k, v, options);
  runs.length = 0;
  const got = await sdpa(q, k, v, { ...options, ...onGpu });
  assert.deepEqual(runs, ['webgpu'], `${what}: ran on the GPU`);
  assert.deepEqual(got.output.shape, want.output.shape);
  assertClose(got.output, want.output, `${what} output`);
  if (want.attnWeights) assertClose(got.attnWeights, want.attnWeights, `${what} weights`);
  else assert.equal(got.attnWeights, null);
  return got;
}

describe(`scaledDotProductAttention() on backend 'webgpu' (${adapterName})`, () => {
  test('the fixtures are there: sdpa and selfAttention cases', () => assert.ok(sdpaFixtures.length >= 8, `${sdpaFixtures.length}`));

  for (const c of sdpaFixtures) {
    test(`webgpu parity with PyTorch: ${c.kind} ${c.name}`, async () => {
      runs.length = 0;
      const r = await runCase(api, { ...c, options: { ...c.options, ...onGpu } });
      assert.deepEqual(runs, ['webgpu'], 'the call ran on the GPU');
      assert.ok(r.ok, r.detail);
    });
  }

  const shapes = [
    { name: 'dk 8, dv 6, L 5, S 7, batched [2, 3]', lead: [2, 3], L: 5, S: 7, dk: 8, dv: 6 },
    { name: 'one query row (the decode path), S 300, dk 64', lead: [4], L: 1, S: 300, dk: 64, dv: 64 },
    { name: 'L 70, S 33, dk 32, dv 40', lead: [], L: 70, S: 33, dk: 32, dv: 40 },
    { name: 'large logits (amplitude 30), dk 16', lead: [2], L: 9, S: 9, dk: 16, dv: 16, amplitude: 30 },
  ];
  for (const s of shapes) {
    const q = tensor([...s.lead, s.L, s.dk], 1, s.amplitude);
    const k = tensor([...s.lead, s.S, s.dk], 2, s.amplitude);
    const v = tensor([...s.lead, s.S, s.dv], 3);
    const N = s.lead.reduce((a, b) => a * b, 1);
    const boolMask = { data: Uint8Array.from({ length: N * s.L * s.S }, (_, i) => (i % 5 === 0 ? 1 : 0)), shape: [...s.lead, s.L, s.S] };
    const additive = { data: Float32Array.from({ length: s.L * s.S }, (_, i) => (i % 7 === 0 ? -Infinity : Math.cos(i))), shape: [s.L, s.S] };
    for (const [label, options] of [['no mask', {}], ['causal', { isCausal: true }], ['boolean mask per batch, weights', { attnMask: boolMask, needWeights: true }],
      ['additive mask with -Inf, causal, scale 0.2', { attnMask: additive, isCausal: true, scale: 0.2 }]]) {
      test(`= WASM: ${s.name}, ${label}`, () => sameAsWasm({ q, k, v, options }, `${s.name}, ${label}`));
    }
  }

  test('a row whose every key is masked is zero, as on WASM', async () => {
    const mask = { data: Uint8Array.from({ length: 4 * 6 }, (_, i) => (i < 6 ? 1 : 0)), shape: [4, 6] };
    const got = await sameAsWasm({ q: tensor([4, 8], 4), k: tensor([6, 8], 5), v: tensor([6, 8], 6), options: { attnMask: mask, needWeights: true } }, 'masked row');
    assert.ok(got.output.data.subarray(0, 8).every((x) => x === 0));
  });

  test("selfAttention() on the GPU, with 'gpu-buffer' results", async () => {
    const x = tensor([2, 12, 16], 7);
    const want = await selfAttention(x, { needWeights: true });
    runs.length = 0;
    const got = await selfAttention(x, { ...onGpu, output: 'gpu-buffer', needWeights: true });
    assert.deepEqual(runs, ['webgpu']);
    assert.deepEqual([got.output.shape, got.attnWeights.shape], [[2, 12, 16], [2, 12, 12]]);
    assertClose(await onHost(got.output), want.output, 'output');
    assertClose(await onHost(got.attnWeights), want.attnWeights, 'weights');
    got.output.dispose();
    got.attnWeights.dispose();
  });

  test("GPU tensors in (backend 'webgpu' by default), float32 and float16, 'gpu-buffer' out", async () => {
    const [q, k, v] = [tensor([3, 10, 8], 8), tensor([3, 11, 8], 9), tensor([3, 11, 4], 10)];
    const want = await sdpa(q, k, v, { isCausal: true });
    // The same values as float16, on the host and on the device.
    const half = (t) => ({ data: roundToHalf('float16', t.data), shape: t.shape, dtype: 'float16' });
    const halfOnGpu = (t) => halfGpuTensor(t.data, t.shape);
    const [qh, kh, vh] = [half(q), half(k), half(v)];
    const wantHalf = await sdpa(qh, kh, vh, { isCausal: true });
    runs.length = 0;
    const got = await sdpa(gpuTensor(q.data, q.shape), gpuTensor(k.data, k.shape), gpuTensor(v.data, v.shape), { isCausal: true, gpu: device, output: 'gpu-buffer' });
    const gotHalf = await sdpa(halfOnGpu(qh), halfOnGpu(kh), halfOnGpu(vh), { isCausal: true, gpu: device });
    assert.deepEqual(runs, ['webgpu', 'webgpu']);
    assertClose(await onHost(got.output), want.output, 'float32 GPU tensors');
    assert.equal(gotHalf.output.dtype, 'float16', 'float16 inputs make a float16 result');
    const widened = (t) => ({ data: asFloat32(t.data, 'float16'), shape: t.shape });
    assertClose(widened(gotHalf.output), widened(wantHalf.output), 'float16 GPU tensors');
    got.output.dispose();
  });

  test('calls recorded into a GpuBatch: one submit, for calls of other widths and of the same widths alike', async () => {
    const [q, k, v, v4] = [tensor([2, 6, 8], 21), tensor([2, 9, 8], 22), tensor([2, 9, 8], 23), tensor([2, 9, 4], 24)];
    const first = await sdpa(q, k, v);
    const want = await sdpa(first.output, k, v4, { isCausal: true });
    const queue = Object.getPrototypeOf(device.queue);
    const { submit } = queue;
    let submits = 0;
    queue.submit = function counting(...args) { submits++; return submit.apply(this, args); };
    const batch = new api.GpuBatch();
    const inBatch = { gpu: device, output: 'gpu-buffer', batch };
    const [kg, vg, v4g] = [gpuTensor(k.data, k.shape), gpuTensor(v.data, v.shape), gpuTensor(v4.data, v4.shape)];
    try {
      runs.length = 0;
      const a = await sdpa(gpuTensor(q.data, q.shape), kg, vg, inBatch);
      const b = await sdpa(a.output, kg, v4g, { ...inBatch, isCausal: true });
      assert.equal(submits, 0, 'nothing submitted before batch.submit()');
      // The widths of the first call again: an engine of its own (its slot), so no submit first.
      const c = await sdpa(gpuTensor(q.data, q.shape), kg, vg, inBatch);
      assert.equal(submits, 0, 'a call of the same widths submits nothing');
      await batch.submit();
      assert.equal(submits, 1);
      assert.deepEqual(runs, ['webgpu', 'webgpu', 'webgpu']);
      assertClose(await onHost(b.output), want.output, 'the second call, fed the first\'s output');
      assertClose(await onHost(c.output), first.output, 'the third call');
      for (const t of [a, b, c]) t.output.dispose();
    } finally {
      queue.submit = submit;
    }
    await assert.rejects(sdpa(q, k, v, { ...onGpu, batch }), (e) => e.name === 'OptionError' && e.argument === 'output');
  });

  test('a stack of more same-width calls than MAX_ENGINES, each fed the last, in one GpuBatch: one submit a step, as unbatched', async () => {
    const layers = MAX_ENGINES + 3;
    const [q, k, v] = [tensor([2, 3, 16], 31), tensor([2, 5, 16], 32), tensor([2, 5, 16], 33)];
    let want = q;
    for (let i = 0; i < layers; i++) want = (await sdpa(want, k, v, { isCausal: i % 2 === 1 })).output;
    const queue = Object.getPrototypeOf(device.queue);
    const { submit } = queue;
    let submits = 0;
    queue.submit = function counting(...args) { submits++; return submit.apply(this, args); };
    const batch = new api.GpuBatch();
    const [kg, vg] = [gpuTensor(k.data, k.shape), gpuTensor(v.data, v.shape)];
    try {
      for (let step = 0; step < 2; step++) {
        submits = 0;
        const outputs = [];
        let x = gpuTensor(q.data, q.shape);
        for (let i = 0; i < layers; i++) {
          x = (await sdpa(x, kg, vg, { gpu: device, output: 'gpu-buffer', batch, isCausal: i % 2 === 1 })).output;
          outputs.push(x);
        }
        assert.equal(submits, 0, `step ${step}: nothing submitted before batch.submit()`);
        await batch.submit();
        assert.equal(submits, 1, `step ${step}: one submit`);
        assertClose(await onHost(x), want, `step ${step}: the last call's output`);
        for (const t of outputs) t.dispose();
      }
    } finally {
      queue.submit = submit;
    }
  });

  test('a NaN that a row sees: the call runs on WASM and gives its answer; masked away, it stays on the GPU', async () => {
    const q = tensor([4, 8], 11);
    const k = tensor([5, 8], 12);
    const v = tensor([5, 8], 13);
    k.data[8] = NaN;  // key row 1
    const want = await sdpa(q, k, v);
    runs.length = 0;
    const got = await sdpa(q, k, v, onGpu);
    assert.deepEqual(runs, ['wasm']);
    assert.deepEqual(Array.from(got.output.data), Array.from(want.output.data));
    const mask = { data: Uint8Array.from({ length: 20 }, (_, i) => (i % 5 === 1 ? 1 : 0)), shape: [4, 5] };
    await sameAsWasm({ q, k, v, options: { attnMask: mask } }, 'the NaN row masked for every query');
  });

  test("'auto' takes the GPU above webgpuMinFlops, and WASM below it", async () => {
    const [q, k, v] = [tensor([6, 8], 14), tensor([6, 8], 15), tensor([6, 8], 16)];
    runs.length = 0;
    await sdpa(q, k, v, { backend: 'auto', gpu, webgpuMinFlops: 0 });
    await sdpa(q, k, v, { backend: 'auto', gpu, webgpuMinFlops: 1e12 });
    assert.deepEqual(runs, ['webgpu', 'wasm']);
  });

  test('head widths over the GPU kernels\' limit: host inputs run on WASM, GPU inputs are a MemoryError', async () => {
    const [q, k, v] = [tensor([2, 600], 17), tensor([3, 600], 18), tensor([3, 600], 19)];
    const want = await sdpa(q, k, v);
    runs.length = 0;
    const got = await sdpa(q, k, v, onGpu);
    assert.deepEqual(runs, ['wasm']);
    assert.deepEqual(Array.from(got.output.data), Array.from(want.output.data));
    await assert.rejects(sdpa(gpuTensor(q.data, q.shape), k, v, { gpu: device }), (e) => e.name === 'MemoryError' && e.argument === 'q');
  });

  test('widths past the engines kept: each call still right (the least recent disposed)', async () => {
    for (let d = 1; d <= 11; d++) await sameAsWasm({ q: tensor([3, d], d), k: tensor([4, d], d + 1), v: tensor([4, d], d + 2) }, `dk ${d}`);
    await sameAsWasm({ q: tensor([3, 1], 1), k: tensor([4, 1], 2), v: tensor([4, 1], 3) }, 'dk 1 again');
  });

  test('an engine left idle gives its GPU buffers back; a later call of its widths makes it again', async () => {
    const deviceProto = Object.getPrototypeOf(device);
    const bufferProto = Object.getPrototypeOf(device.createBuffer({ size: 4, usage: 0x8 }));
    const { createBuffer } = deviceProto;
    const { destroy } = bufferProto;
    const made = new Set();
    const destroyed = new Set();
    const idleMs = engineHooks.idleMs;
    engineHooks.idleMs = 0;
    deviceProto.createBuffer = function recording(...args) { const b = createBuffer.apply(this, args); made.add(b); return b; };
    bufferProto.destroy = function recording() { destroyed.add(this); return destroy.call(this); };
    try {
      const call = () => sameAsWasm({ q: tensor([5, 13], 25), k: tensor([6, 13], 26), v: tensor([6, 13], 27) }, 'dk 13');
      await call();
      const own = [...made].filter((b) => /webattention (query|output)$/.test(b.label));  // this engine's per-call buffers
      assert.ok(own.length >= 2 && own.every((b) => !destroyed.has(b)), 'made by the call, kept while it runs');
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(own.every((b) => destroyed.has(b)), 'given back once idle');
      await call();
    } finally {
      deviceProto.createBuffer = createBuffer;
      bufferProto.destroy = destroy;
      engineHooks.idleMs = idleMs;
    }
  });

  test('an engine with work in an unsubmitted GpuBatch is kept, past its idle time and past eviction, till the submit', async () => {
    const idleMs = engineHooks.idleMs;
    engineHooks.idleMs = 0;
    try {
      const [q, k, v] = [tensor([4, 17], 28), tensor([5, 17], 29), tensor([5, 17], 30)];
      const want = await sdpa(q, k, v);
      const batch = new api.GpuBatch();
      const { output } = await sdpa(gpuTensor(q.data, q.shape), gpuTensor(k.data, k.shape), gpuTensor(v.data, v.shape), { gpu: device, output: 'gpu-buffer', batch });
      await new Promise((resolve) => setTimeout(resolve, 20));  // idle: disposed unless held
      for (let d = 40; d < 40 + MAX_ENGINES; d++) await sdpa(tensor([2, d], d), tensor([2, d], d), tensor([2, d], d), onGpu);  // evicted unless held
      await batch.submit();
      assertClose(await onHost(output), want.output, 'the batched call');
      output.dispose();
    } finally {
      engineHooks.idleMs = idleMs;
    }
  });

  test('typed errors: the backend options, and the module usable after them', async () => {
    const x = tensor([3, 8], 20);
    const named = (argument, name = 'OptionError') => (e) => e.name === name && e.argument === argument;
    await assert.rejects(sdpa(x, x, x, { backend: 'cuda' }), named('backend'));
    await assert.rejects(sdpa(x, x, x, { backend: 'wasm', output: 'gpu-buffer' }), named('backend'));
    await assert.rejects(sdpa(gpuTensor(x.data, x.shape), x, x, { backend: 'wasm', gpu: device }), named('backend'));
    await assert.rejects(sdpa(x, x, x, { output: 'gpu' }), named('output'));
    await assert.rejects(sdpa(x, x, x, { ...onGpu, output: 'gpu-buffer', out: new Float32Array(24) }), named('out'));
    await assert.rejects(sdpa(x, x, x, { backend: 'webgpu', gpu: 5 }), named('gpu'));
    await assert.rejects(sdpa(x, x, x, { backend: 'webgpu', webgpuMinFlops: -1 }), named('webgpuMinFlops'));
    await assert.rejects(selfAttention(x, { backend: 'webgpu', gpu: 'x' }), named('gpu'));
    await assert.rejects(sdpa(x, x, x, { backend: 'webgpu' }), named('backend', 'BackendError'));  // Node: no navigator.gpu
    assert.equal((await sdpa(x, x, x, { backend: 'auto' })).output.shape[0], 3, "'auto' without a GPU: WASM");
    await sameAsWasm({ q: x, k: x, v: x }, 'after the errors');
  });
});
