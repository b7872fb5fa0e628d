// Backend selection in Node: 'webgpu' without an adapter throws BackendError; 'auto' and its
// threshold (webgpuMinFlops) on this adapter; option checks, a `gpu` device that is not one or is
// lost already. Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BackendError, MultiHeadAttention, OptionError } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { DEFAULT_WEBGPU_MIN_FLOPS, forwardFlops, resolveMhaForward } from '../internals.mjs';
import { autoBackendForLargeCalls } from './adapter.mjs';
import { assertClose, checkAgainstFixture, fixtures, gpu, kind, pinDefaultsWhereSelecting, randomStateDict, runs } from './node_setup.mjs';

// Calls compared bit for bit run the same kernels (pinned where the GPU selects by measurement).
after(pinDefaultsWhereSelecting().undo);

describe('backend selection', () => {
  const base = { embedDim: 8, numHeads: 2 };

  test("'webgpu' with no WebGPU at all (Node without a gpu option) throws BackendError", async () => {
    assert.equal(globalThis.navigator?.gpu, undefined);
    await assert.rejects(MultiHeadAttention.create({ ...base, backend: 'webgpu' }), (e) => {
      assert.ok(e instanceof BackendError, e.stack);
      assert.equal(e.name, 'BackendError');
      assert.match(e.message, /WebGPU is not available/);
      return true;
    });
  });

  test("'webgpu' where requestAdapter() finds no adapter throws BackendError", async () => {
    const noAdapter = { requestAdapter: async () => null };
    await assert.rejects(MultiHeadAttention.create({ ...base, backend: 'webgpu', gpu: noAdapter }), BackendError);
    const throwing = { requestAdapter: async () => { throw new Error('driver gone'); } };
    await assert.rejects(MultiHeadAttention.create({ ...base, backend: 'webgpu', gpu: throwing }), /driver gone/);
  });

  test("'auto' without an adapter (or without WebGPU), and 'wasm', run on WASM", async () => {
    const noAdapter = { requestAdapter: async () => null };
    const throwing = { requestAdapter: async () => { throw new Error('driver gone'); } };
    for (const options of [{ gpu: noAdapter }, { gpu: throwing }, {}, { backend: 'wasm', gpu }]) {
      // webgpuMinFlops 0: the first call makes 'auto' look for a GPU.
      const mha = await MultiHeadAttention.create({ ...base, ...options, webgpuMinFlops: 0 });
      try {
        mha.loadStateDict(randomStateDict(mha.stateDictShapes, 4));
        const x = { data: filled(3 * 8, 1), shape: [1, 3, 8] };
        runs.length = 0;
        await mha.forward(x, x, x);
        assert.ok(!runs.includes('webgpu'), JSON.stringify(options));  // (a module with no GPU at all reports no runs)
        assert.equal(mha.backend, 'wasm');
      } finally {
        mha.dispose();
      }
    }
  });

  // A call of forwardFlops >= 2^26 (the default threshold): (L = S = 128, E = 256, h = 4).
  const bigCall = async (mha) => {
    const x = { data: filled(128 * 256, 5), shape: [1, 128, 256] };
    const plan = resolveMhaForward(mha.config, x, x, x);
    assert.ok(forwardFlops(plan, mha.config) >= DEFAULT_WEBGPU_MIN_FLOPS);
    return mha.forward(x, x, x);
  };
  /** The package's GPU object, counting requestAdapter() calls. */
  const counting = () => {
    const probe = { calls: 0 };
    probe.gpu = { requestAdapter: (options) => { probe.calls++; return gpu.requestAdapter(options); } };
    return probe;
  };

  test("'auto' asks for no adapter until a call reaches the threshold", async () => {
    const probe = counting();
    const f = fixtures.find((x) => x.name === 'weights_avg');
    const mha = await MultiHeadAttention.create({ ...f.create, backend: 'auto', gpu: probe.gpu });
    try {
      mha.loadStateDict(f.stateDict);
      runs.length = 0;
      checkAgainstFixture(f, await mha.forward(f.inputs.query, f.inputs.key, f.inputs.value, f.options));
      assert.equal(probe.calls, 0);
      assert.equal(mha.backend, 'wasm');
      assert.deepEqual(runs, ['wasm']);
    } finally {
      mha.dispose();
    }
  });

  // Both kinds of adapter: calls below the threshold stay on WASM without an adapter probe; at
  // the threshold a hardware GPU takes them, SwiftShader is left alone (slower than WASM at every
  // size). Either way: one probe for both modules and all calls, WASM's results.
  test(`'auto' at the default threshold on this ${kind} adapter: large calls on ${autoBackendForLargeCalls(kind)}, small ones on WASM`, async () => {
    const where = autoBackendForLargeCalls(kind);
    const probe = counting();
    const make = (backend) => MultiHeadAttention.create({ embedDim: 256, numHeads: 4, backend, gpu: probe.gpu });
    const [a, b, reference] = [await make('auto'), await make('auto'), await make('wasm')];
    try {
      for (const mha of [a, b, reference]) mha.loadStateDict(randomStateDict(mha.stateDictShapes, 9));
      const x = { data: filled(8 * 256, 5), shape: [1, 8, 256] };
      assert.ok(forwardFlops(resolveMhaForward(a.config, x, x, x), a.config) < DEFAULT_WEBGPU_MIN_FLOPS);
      runs.length = 0;
      await a.forward(x, x, x);
      assert.deepEqual(runs, ['wasm'], 'a call below the threshold');
      assert.equal(probe.calls, 0, 'no adapter probe below the threshold');
      runs.length = 0;
      const [ra, rb] = await Promise.all([bigCall(a), bigCall(b)]);
      await bigCall(a);
      // On a hardware adapter these calls, near the threshold, also run on WASM, timed, while
      // 'auto' measures the device's threshold (auto_threshold.js): each reports both.
      assert.equal(runs.filter((r) => r === where).length, 3, runs.join());
      assert.deepEqual([...new Set(runs)].sort(), kind === 'hardware' ? ['wasm', 'webgpu'] : ['wasm'], runs.join());
      assert.deepEqual(ra.output.data, rb.output.data);
      assert.equal(a.backend, where);
      assert.equal(probe.calls, 1, 'one adapter probe for both modules and all calls');
      assertClose(ra.output, (await bigCall(reference)).output, `'auto' (${where}) vs 'wasm'`);
    } finally {
      a.dispose();
      b.dispose();
      reference.dispose();
    }
  });

  test(`'auto' with webgpuMinFlops: small calls on WASM, large on the GPU (default threshold ${DEFAULT_WEBGPU_MIN_FLOPS} on hardware adapters)`, async () => {
    const f = fixtures.find((x) => x.name === 'weights_avg');
    const threshold = 20_000;
    const mha = await MultiHeadAttention.create({ ...f.create, backend: 'auto', gpu, webgpuMinFlops: threshold });
    try {
      mha.loadStateDict(f.stateDict);
      const E = f.create.embedDim;
      const x = (B, L) => ({ data: filled(B * L * E, L), shape: [B, L, E] });
      const smallCall = resolveMhaForward(mha.config, x(1, 2), x(1, 2), x(1, 2));
      const largeCall = resolveMhaForward(mha.config, x(2, 40), x(2, 40), x(2, 40));
      const fixtureCall = resolveMhaForward(mha.config, f.inputs.query, f.inputs.key, f.inputs.value, f.options);
      assert.ok(forwardFlops(smallCall, mha.config) < threshold && forwardFlops(largeCall, mha.config) > threshold
        && forwardFlops(fixtureCall, mha.config) > threshold);
      runs.length = 0;
      await mha.forward(x(1, 2), x(1, 2), x(1, 2));
      assert.equal(mha.backend, 'wasm', 'no choice made before the first large call');
      await mha.forward(x(2, 40), x(2, 40), x(2, 40));
      assert.equal(mha.backend, 'webgpu');
      checkAgainstFixture(f, await mha.forward(f.inputs.query, f.inputs.key, f.inputs.value, f.options));
      assert.deepEqual(runs, ['wasm', 'webgpu', 'webgpu']);
    } finally {
      mha.dispose();
    }
  });

  test("'auto' uploads a state dict loaded before its device existed, and a later one", async () => {
    const [a, b] = fixtures.filter((c) => c.name === 'weights_avg' || c.name === 'kpm_bool_attn_float');
    const mha = await MultiHeadAttention.create({ ...a.create, backend: 'auto', gpu, webgpuMinFlops: 0 });
    try {
      const sd = Object.fromEntries(Object.entries(a.stateDict).map(([k, t]) => [k, { data: t.data.slice(), shape: t.shape }]));
      mha.loadStateDict(sd);
      for (const t of Object.values(sd)) t.data.fill(7);  // the module copied what it needs
      runs.length = 0;
      checkAgainstFixture(a, await mha.forward(a.inputs.query, a.inputs.key, a.inputs.value, a.options));
      mha.loadStateDict(b.stateDict);
      checkAgainstFixture(b, await mha.forward(b.inputs.query, b.inputs.key, b.inputs.value, b.options));
      assert.deepEqual(runs, ['webgpu', 'webgpu']);
    } finally {
      mha.dispose();
    }
  });

  test('bad backend options throw OptionError naming the option', async () => {
    for (const [options, argument] of [[{ backend: 'cuda' }, 'backend'], [{ gpu: 42 }, 'gpu'],
      [{ backend: 'webgpu', gpu: {} }, 'gpu'], [{ webgpuMinFlops: -1 }, 'webgpuMinFlops'], [{ webgpuMinFlops: '1e6' }, 'webgpuMinFlops']]) {
      await assert.rejects(MultiHeadAttention.create({ ...base, ...options }), (e) => {
        assert.ok(e instanceof OptionError, `${JSON.stringify(options)}: ${e.stack}`);
        assert.equal(e.argument, argument);
        return true;
      });
    }
  });

  test('a `gpu` that only looks like a GPUDevice (a Proxy of one, a look-alike): OptionError naming gpu; one lost already: BackendError for \'webgpu\', WASM for \'auto\'', async () => {
    const device = await (await gpu.requestAdapter()).requestDevice();
    const lookAlike = { createBuffer() {}, createCommandEncoder() {}, queue: { writeBuffer() {}, submit() {} }, lost: new Promise(() => {}), features: new Set(), limits: {} };
    for (const fake of [new Proxy(device, {}), lookAlike]) {
      for (const backend of ['webgpu', 'auto']) {
        await assert.rejects(MultiHeadAttention.create({ ...base, backend, gpu: fake }), { name: 'OptionError', argument: 'gpu' });
      }
    }
    device.destroy();
    await device.lost;
    await assert.rejects(MultiHeadAttention.create({ ...base, backend: 'webgpu', gpu: device }), (e) => e instanceof BackendError && e.argument === 'gpu' && /lost already/.test(e.message));
    const onWasm = await MultiHeadAttention.create({ ...base, backend: 'auto', gpu: device, webgpuMinFlops: 0 });
    onWasm.loadStateDict(randomStateDict(onWasm.stateDictShapes, 2));
    runs.length = 0;
    const x = { data: filled(3 * 8, 4), shape: [1, 3, 8] };
    await onWasm.forward(x, x, x);
    assert.deepEqual([runs, onWasm.backend], [['wasm'], 'wasm']);
    onWasm.dispose();
  });
});
