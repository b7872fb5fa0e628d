// The KV cache on the GPU used as a hostile caller would (issue 21, findings 4, 5, 6 and 13):
// unawaited steps, reset() and dispose() while a step runs, a multi-pass step that fails part
// way, a step that does not fit the device, and a windowed step's cost. Each GPU result is
// compared with the same calls on WASM (the reference backend here). Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DisposedError, MemoryError, MultiHeadAttention, StateDictError } from '#webattention';
import { cacheHooks, passHooks, ringGeometry } from '../internals.mjs';
import { filled } from '../contract/random.mjs';
import { assertClose, device, gpu, randomStateDict, runs } from './node_setup.mjs';

const CREATE = { embedDim: 16, numHeads: 4, numKvHeads: 2 };
const E = CREATE.embedDim;
const WINDOW = 5;
// A step longer than a windowed cache's rows per pass runs as several passes.
const LONG = 3 * ringGeometry({ maxLength: 0, window: WINDOW }).rowsPerPass - 7;

const shapesOf = await MultiHeadAttention.create(CREATE);
const sd = randomStateDict(shapesOf.stateDictShapes, 3);
shapesOf.dispose();
const modules = [];
after(() => {
  modules.forEach((m) => m.dispose());
  cacheHooks.beforePass = null;
  passHooks.onDispatches = null;
});

async function pair() {
  const [gpuMha, wasm] = await Promise.all([
    MultiHeadAttention.create({ ...CREATE, backend: 'webgpu', gpu }),
    MultiHeadAttention.create({ ...CREATE, backend: 'wasm' }),
  ]);
  gpuMha.loadStateDict(sd);
  wasm.loadStateDict(sd);
  modules.push(gpuMha, wasm);
  return { gpuMha, wasm };
}

const tokens = (n, seed) => ({ data: filled(n * E, seed), shape: [1, n, E] });
const step = (mha, cache, x) => mha.forward(x, x, x, { cache });

describe('the KV cache on WebGPU, used as a hostile caller would', () => {
  test('a cache over the device\'s largest buffer: MemoryError naming maxLength, or window, made of nothing; the module usable', async () => {
    const { gpuMha, wasm } = await pair();
    const { limits } = gpuMha.gpuDevice;
    const limit = Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize);
    const positions = 2 ** Math.ceil(Math.log2(limit / 16));  // over the limit at any head layout of 16 or more bytes a position
    for (const [options, argument] of [[{ maxLength: positions }, 'maxLength'], [{ window: positions }, 'window'], [{ maxLength: 1024, batchSize: positions / 1024 }, 'maxLength']]) {
      assert.throws(() => gpuMha.createCache(options), (e) => e instanceof MemoryError && e.argument === argument && e.actual > limit, JSON.stringify(options));
    }
    const x = tokens(1, 41);
    assertClose((await step(gpuMha, gpuMha.createCache({ maxLength: 4 }), x)).output, (await step(wasm, wasm.createCache({ maxLength: 4 }), x)).output, 'a cache that fits');
  });

  test('a step before loadStateDict(): a StateDictError (not another module\'s cache), the length unchanged, then right once loaded', async () => {
    const gpuMha = await MultiHeadAttention.create({ ...CREATE, backend: 'webgpu', gpu });
    modules.push(gpuMha);
    const cache = gpuMha.createCache({ maxLength: 8 });
    const x = tokens(2, 40);
    await assert.rejects(step(gpuMha, cache, x), (e) => e instanceof StateDictError && e.argument === 'stateDict' && /loadStateDict/.test(e.message));
    assert.equal(cache.length, 0);
    gpuMha.loadStateDict(sd);
    const { wasm } = await pair();
    assertClose((await step(gpuMha, cache, x)).output, (await step(wasm, wasm.createCache({ maxLength: 8 }), x)).output, 'the step after the load');
  });

  test('finding 6: 24 unawaited steps on one cache queue in order, as on WASM (none refused)', async () => {
    const { gpuMha, wasm } = await pair();
    const gpuCache = gpuMha.createCache({ maxLength: 64 });
    const wasmCache = wasm.createCache({ maxLength: 64 });
    const inputs = Array.from({ length: 24 }, (_, i) => tokens(1 + (i % 3), 100 + i));
    runs.length = 0;
    const gpuSteps = inputs.map((x) => step(gpuMha, gpuCache, x));
    const wasmSteps = inputs.map((x) => step(wasm, wasmCache, x));
    const total = inputs.reduce((n, x) => n + x.shape[1], 0);
    assert.equal(gpuCache.length, total, 'the length counts the steps made, as on WASM');
    const [got, want] = await Promise.all([Promise.all(gpuSteps), Promise.all(wasmSteps)]);
    got.forEach((r, i) => assertClose(r.output, want[i].output, `step ${i}`));
    assert.equal(gpuCache.length, total);
    assert.equal(wasmCache.length, total);
    assert.ok(runs.length === 24 && runs.every((where) => where === 'webgpu'), `every step on the GPU: ${runs}`);
  });

  test('finding 4: reset() during a multi-pass step waits for it: right output, length 0 at once, the next step right', async () => {
    const { gpuMha, wasm } = await pair();
    const gpuCache = gpuMha.createCache({ window: WINDOW });
    const long = tokens(LONG, 7);
    const running = step(gpuMha, gpuCache, long);
    gpuCache.reset();
    assert.equal(gpuCache.length, 0, 'length after reset()');
    const next = tokens(3, 8);
    const afterReset = step(gpuMha, gpuCache, next);  // made after the reset: positions 0..2
    assert.equal(gpuCache.length, 3);
    const wasmCache = wasm.createCache({ window: WINDOW });
    assertClose((await running).output, (await step(wasm, wasmCache, long)).output, 'the step the reset waited for');
    wasmCache.reset();
    assertClose((await afterReset).output, (await step(wasm, wasmCache, next)).output, 'the step after reset()');
    assert.equal(gpuCache.length, 3);
  });

  test('finding 5: cache.dispose() during a step lets it finish right; steps queued behind it are DisposedErrors', async () => {
    const { gpuMha, wasm } = await pair();
    const gpuCache = gpuMha.createCache({ window: WINDOW });
    const long = tokens(LONG, 9);
    const running = step(gpuMha, gpuCache, long);
    const queued = step(gpuMha, gpuCache, tokens(1, 10));
    gpuCache.dispose();
    assertClose((await running).output, (await step(wasm, wasm.createCache({ window: WINDOW }), long)).output, 'the running step');
    await assert.rejects(queued, DisposedError);
    await assert.rejects(step(gpuMha, gpuCache, tokens(1, 11)), DisposedError);
    // The module goes on: a plain call and a new cache work.
    const x = tokens(4, 12);
    assertClose((await gpuMha.forward(x, x, x)).output, (await wasm.forward(x, x, x)).output, 'a plain call after');
  });

  test('finding 5: mha.dispose() during a call is a DisposedError on WebGPU, as on WASM (plain and cached)', async () => {
    // What each call gives when it completes: the same calls on WASM, on a fresh cache.
    const x = tokens(LONG, 13);
    const { wasm } = await pair();
    const expected = [(await wasm.forward(x, x, x)).output, (await step(wasm, wasm.createCache({ window: WINDOW }), x)).output];
    for (const when of ['at once', 'after a turn of the event loop']) {
      for (const backend of ['webgpu', 'wasm']) {
        const mha = await MultiHeadAttention.create({ ...CREATE, backend, ...(backend === 'webgpu' ? { gpu } : {}) });
        mha.loadStateDict(sd);
        const cache = mha.createCache({ window: WINDOW });
        const calls = [mha.forward(x, x, x), step(mha, cache, x)];
        if (when !== 'at once') await new Promise((r) => setImmediate(r));
        mha.dispose();
        for (const [i, call] of calls.entries()) {
          const what = `${backend}, ${when}, call ${i}`;
          // WASM computes at the call: its results are there before the dispose. A GPU call
          // disposed at once cannot have finished; after a turn of the event loop, a fast GPU may
          // have finished it (or be past its last dispose check): then its result stands, and must
          // be right.
          const outcome = await call.then((r) => r, (e) => e);
          const completed = !(outcome instanceof Error);
          if (backend === 'wasm') assert.ok(completed, `${what}: expected its result, got ${outcome.name}`);
          else if (when === 'at once') assert.ok(outcome instanceof DisposedError, `${what}: expected a DisposedError, got ${outcome?.name ?? 'a result'}`);
          else assert.ok(completed || outcome instanceof DisposedError, `${what}: expected a result or a DisposedError, got ${outcome.name}`);
          if (completed) assertClose(outcome.output, expected[i], `${what}: completed before the dispose`);
        }
        await assert.rejects(mha.forward(x, x, x), DisposedError);
      }
    }
  });

  test('finding 13: a multi-pass step that fails part way leaves the length and the storage as they were', async () => {
    const { gpuMha, wasm } = await pair();
    const gpuCache = gpuMha.createCache({ window: WINDOW });
    const wasmCache = wasm.createCache({ window: WINDOW });
    const prefix = tokens(10, 14);
    await step(gpuMha, gpuCache, prefix);
    await step(wasm, wasmCache, prefix);
    cacheHooks.beforePass = (index) => {
      if (index === 2) throw new Error('injected failure of the third pass');
    };
    try {
      await assert.rejects(step(gpuMha, gpuCache, tokens(LONG, 15)), /injected failure/);
    } finally {
      cacheHooks.beforePass = null;
    }
    assert.equal(gpuCache.length, 10, 'the length did not advance');
    const next = tokens(3, 16);
    assertClose((await step(gpuMha, gpuCache, next)).output, (await step(wasm, wasmCache, next)).output, 'the next step');
  });

  test('finding 13: a step that does not fit the device is a MemoryError up front, nothing runs, the cache is as it was', async () => {
    // On a device of default limits (128 MiB bindings), so that the misfit stays small.
    const gpuMha = await MultiHeadAttention.create({ ...CREATE, backend: 'webgpu', gpu: device });
    modules.push(gpuMha);
    gpuMha.loadStateDict(sd);
    const limit = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
    // Per-head weights [1, 4, L, L] of more bytes than one buffer may have.
    const L = Math.ceil(Math.sqrt(limit / (4 * CREATE.numHeads))) + 1;
    const cache = gpuMha.createCache({ maxLength: L });
    runs.length = 0;
    const x = tokens(L, 17);
    await assert.rejects(gpuMha.forward(x, x, x, { cache, needWeights: true, averageAttnWeights: false }),
      (e) => e instanceof MemoryError && e.argument === 'cache');
    assert.deepEqual(runs, []);
    assert.equal(cache.length, 0);
  });

  test('finding 13: a windowed decode step visits the window, not the whole cache (decode grid of O(W) keys)', async () => {
    const { gpuMha, wasm } = await pair();
    const window = 16;
    const gpuCache = gpuMha.createCache({ window });
    const wasmCache = wasm.createCache({ window });
    const prefix = tokens(600, 18);
    await step(gpuMha, gpuCache, prefix);
    await step(wasm, wasmCache, prefix);
    const grids = [];
    passHooks.onDispatches = (dispatches) => grids.push(...dispatches.filter((d) => d.kernel.includes('decodePartial')));
    try {
      const x = tokens(1, 19);
      assertClose((await step(gpuMha, gpuCache, x)).output, (await step(wasm, wasmCache, x)).output, 'the step');
    } finally {
      passHooks.onDispatches = null;
    }
    assert.equal(grids.length, 1, 'one decode dispatch');
    assert.equal(grids[0].groups[0], 1, `chunks of keys: the ${window} of the window fit one (601 positions would take 3)`);
  });
});
