// create({ backend: 'webgpu', hostWeights: false }) (docs/webgpu/fallback_and_tests.md#weights-on-the-gpu-only): the
// weights are checked and quantised by the core as any module's, uploaded, then freed from WASM
// memory. Such a module computes what a module with host weights computes, bit for bit (plain
// calls, 'gpu-buffer' results, cached steps, int4 weights), and holds no WASM memory for its
// weights across loads; a call route() would send to WASM is a typed error instead (a NaN input,
// a call that does not fit, a lost device), as are headBilinearForm() and a load of non-finite
// weights (the module keeps the weights it had); the threshold does not apply; the option is
// checked. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BackendError, MemoryError, MultiHeadAttention, OptionError, StateDictError, wasmMemoryInUse } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { captureWarnings, device, freshDevice, randomStateDict, runs } from './node_setup.mjs';

const E = 32;
const CREATE = { embedDim: E, numHeads: 4, numKvHeads: 2, backend: 'webgpu' };
const input = (rows, seed) => ({ data: filled(rows * E, seed), shape: [1, rows, E] });

// A module of `options` with the seeded weights, on `gpu` (the shared test device unless told).
async function made(options, { seed = 5, gpu = device } = {}) {
  const mha = await MultiHeadAttention.create({ ...CREATE, gpu, ...options });
  mha.loadStateDict(randomStateDict(mha.stateDictShapes, seed));
  return mha;
}

// The same calls on both modules: a plain call, a 'gpu-buffer' one, and three cached steps.
async function sameCalls(hostless, withHost) {
  const x = input(7, 11);
  const results = [];
  for (const mha of [hostless, withHost]) {
    const out = [(await mha.forward(x, x, x)).output];
    const onGpu = await mha.forward(x, x, x, { output: 'gpu-buffer' });
    out.push(await onGpu.output.read());
    onGpu.output.dispose();
    const cache = mha.createCache({ maxLength: 16 });
    for (const [rows, seed] of [[5, 21], [1, 22], [1, 23]]) {
      const t = input(rows, seed);
      out.push((await mha.forward(t, t, t, { cache })).output);
    }
    results.push(out);
  }
  results[0].forEach((a, i) => assert.deepEqual(a, results[1][i], `call ${i}`));
}

describe('hostWeights: false: the weights on the GPU only', () => {
  for (const weightsDtype of ['float32', 'int4']) {
    test(`${weightsDtype} weights: every call bit for bit a module with host weights, on the GPU`, async () => {
      const hostless = await made({ weightsDtype, hostWeights: false });
      const withHost = await made({ weightsDtype });
      try {
        runs.length = 0;
        await sameCalls(hostless, withHost);
        assert.ok(runs.length > 0 && runs.every((r) => r === 'webgpu'), runs.join());
      } finally {
        hostless.dispose();
        withHost.dispose();
      }
    });
  }

  test('the WASM memory of its weights is freed after each load (a module with host weights keeps it)', async () => {
    const big = { embedDim: 256, numHeads: 4, backend: 'webgpu', gpu: device };
    const weightBytes = 4 * 4 * 256 * 256;  // in_proj [3E, E] and out_proj [E, E], float32
    const grown = async (options) => {
      const before = await wasmMemoryInUse();
      const mha = await MultiHeadAttention.create({ ...big, ...options });
      mha.loadStateDict(randomStateDict(mha.stateDictShapes, 1));
      mha.loadStateDict(randomStateDict(mha.stateDictShapes, 2));
      return { mha, bytes: (await wasmMemoryInUse()) - before };
    };
    const withHost = await grown({});
    const hostless = await grown({ hostWeights: false });
    try {
      assert.ok(withHost.bytes >= weightBytes, `with host weights: ${withHost.bytes} bytes`);
      assert.ok(hostless.bytes < weightBytes / 16, `hostWeights false: ${hostless.bytes} bytes held`);
      const x = { data: filled(3 * 256, 9), shape: [1, 3, 256] };
      assert.deepEqual((await hostless.mha.forward(x, x, x)).output, (await withHost.mha.forward(x, x, x)).output);
    } finally {
      withHost.mha.dispose();
      hostless.mha.dispose();
    }
  });

  test('a call WASM would take is a typed error, and the next call works', async () => {
    const mha = await made({ hostWeights: false });
    try {
      const x = input(3, 31);
      const nan = { data: x.data.slice(), shape: x.shape };
      nan.data[5] = NaN;
      runs.length = 0;
      await assert.rejects(mha.forward(nan, x, x), (e) => e instanceof BackendError && e.argument === 'query'
        && /NaN/.test(e.message) && /hostWeights: false/.test(e.message));
      await assert.rejects(mha.forward(nan, x, x, { output: 'gpu-buffer' }), (e) => e instanceof BackendError && /hostWeights: false/.test(e.message));
      // Attention weights [1, 4, L, L] of more bytes than a buffer may have: the call does not fit.
      const limit = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
      const big = input(Math.ceil(Math.sqrt(limit / 16)) + 1, 32);
      await assert.rejects(mha.forward(big, big, big, { needWeights: true, averageAttnWeights: false }),
        (e) => e instanceof MemoryError && e.argument === 'query' && /hostWeights: false/.test(e.message));
      assert.throws(() => mha.headBilinearForm(0), (e) => e instanceof BackendError && e.argument === 'hostWeights');
      assert.deepEqual(runs, []);
      await mha.forward(x, x, x);
      assert.deepEqual(runs, ['webgpu']);
    } finally {
      mha.dispose();
    }
  });

  test('a load of non-finite weights is a StateDictError; the module keeps the weights it had', async () => {
    const mha = await made({ hostWeights: false });
    try {
      const x = input(4, 41);
      const before = (await mha.forward(x, x, x)).output;
      const bad = randomStateDict(mha.stateDictShapes, 6);
      bad['out_proj.weight'].data[3] = Infinity;
      const refused = (e) => e instanceof StateDictError && /hostWeights: false/.test(e.message);
      assert.throws(() => mha.loadStateDict(bad), refused);
      // A load made while a call still waits is deferred: refused now all the same.
      const inFlight = mha.forward(x, x, x);
      assert.throws(() => mha.loadStateDict(bad), refused);
      assert.deepEqual((await inFlight).output, before);
      assert.deepEqual((await mha.forward(x, x, x)).output, before);
    } finally {
      mha.dispose();
    }
  });

  test('webgpuMinFlops does not send a small call to WASM: it has no weights there', async () => {
    const mha = await made({ hostWeights: false, webgpuMinFlops: 1e15 });
    try {
      runs.length = 0;
      const x = input(1, 51);
      await mha.forward(x, x, x);
      assert.deepEqual(runs, ['webgpu']);
    } finally {
      mha.dispose();
    }
  });

  test('a lost device: a warning that says so, then BackendErrors naming hostWeights', async () => {
    const own = await freshDevice();
    const mha = await made({ hostWeights: false }, { gpu: own });
    try {
      const x = input(2, 61);
      await mha.forward(x, x, x);
      own.destroy();
      await own.lost;
      const { warnings } = await captureWarnings(() => assert.rejects(mha.forward(x, x, x),
        (e) => e instanceof BackendError && e.argument === 'hostWeights' && /device was lost/.test(e.message)));
      assert.ok(warnings.every((w) => /refused from now on/.test(w)), warnings.join('\n'));
      assert.throws(() => mha.createCache({ maxLength: 4 }), (e) => e instanceof BackendError && e.argument === 'hostWeights');
      // It has no WASM copy to run on, so it does not claim one; its profile and device are gone.
      assert.equal(mha.backend, 'webgpu');
      assert.equal(mha.gpuProfile(), null);
      assert.equal(mha.gpuDevice, null);
    } finally {
      mha.dispose();
    }
  });

  test('the option is checked: OptionError naming it (or threads)', async () => {
    const refused = (options, argument) => assert.rejects(MultiHeadAttention.create({ ...CREATE, gpu: device, ...options }),
      (e) => e instanceof OptionError && e.argument === argument && e.message.includes(argument), JSON.stringify(options));
    await refused({ hostWeights: 'no' }, 'hostWeights');
    await refused({ hostWeights: false, backend: 'auto' }, 'hostWeights');
    await refused({ hostWeights: false, backend: 'wasm' }, 'hostWeights');
    await refused({ hostWeights: false, threads: 2 }, 'threads');
    await refused({ hostWeights: false, threads: 'auto' }, 'threads');
  });
});
