// A device lost in flight or between calls: every call still correct, through the WASM fallback;
// a module made after the shared device was lost gets a new one. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { acquireGpu } from '../internals.mjs';
import { captureWarnings, checkAgainstFixture, createGpu, fixtures, freshDevice, runs } from './node_setup.mjs';

describe('a lost device: the module carries on on WASM', () => {
  const c = () => fixtures.find((f) => f.name === 'kpm_bool_attn_float');

  test('device.destroy() during the 2nd of 4 calls: all 4 correct, backend switches to wasm with a warning', async () => {
    const f = c();
    const own = await freshDevice();
    const mha = await MultiHeadAttention.create({ ...f.create, backend: 'webgpu', gpu: own });
    mha.loadStateDict(f.stateDict);
    const { query, key, value } = f.inputs;
    const { result: results, warnings } = await captureWarnings(async () => {
      runs.length = 0;
      const out = [await mha.forward(query, key, value, f.options)];
      assert.equal(mha.backend, 'webgpu');
      const inFlight = mha.forward(query, key, value, f.options);
      own.destroy();
      out.push(await inFlight);
      out.push(await mha.forward(query, key, value, f.options));
      out.push(await mha.forward(query, key, value, f.options));
      return out;
    });
    try {
      results.forEach((r, i) => checkAgainstFixture({ ...f, name: `call ${i + 1}` }, r));
      assert.deepEqual(runs, ['webgpu', 'wasm', 'wasm', 'wasm']);
      assert.equal(mha.backend, 'wasm');
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0], /device was lost \(destroyed.*computes on WASM/);
    } finally {
      mha.dispose();
    }
  });

  test('device lost between calls: the next call goes straight to WASM, correct', async () => {
    const f = c();
    const own = await freshDevice();
    const mha = await MultiHeadAttention.create({ ...f.create, backend: 'webgpu', gpu: own });
    try {
      mha.loadStateDict(f.stateDict);
      const { query, key, value } = f.inputs;
      runs.length = 0;
      checkAgainstFixture(f, await mha.forward(query, key, value, f.options));
      own.destroy();
      await own.lost;
      assert.equal(mha.backend, 'wasm');
      mha.loadStateDict(f.stateDict);  // still loads (into WASM)
      checkAgainstFixture(f, await mha.forward(query, key, value, f.options));
      assert.deepEqual(runs, ['webgpu', 'wasm']);
    } finally {
      mha.dispose();
    }
  });

  test('a module made after the shared device was lost gets a new device', async () => {
    const gpu2 = createGpu();
    const f = c();
    const first = await MultiHeadAttention.create({ ...f.create, backend: 'webgpu', gpu: gpu2 });
    first.dispose();
    // Reach the shared device through a module's forward: lose it by destroying every device
    // the package made on gpu2 (it made one); the next create() must not reuse it.
    const shared = await acquireGpu({ gpu: gpu2, backend: 'webgpu' });
    shared.device.destroy();
    await shared.device.lost;
    const second = await MultiHeadAttention.create({ ...f.create, backend: 'webgpu', gpu: gpu2 });
    try {
      second.loadStateDict(f.stateDict);
      runs.length = 0;
      checkAgainstFixture(f, await second.forward(f.inputs.query, f.inputs.key, f.inputs.value, f.options));
      assert.deepEqual(runs, ['webgpu']);
      assert.equal(second.backend, 'webgpu');
    } finally {
      second.dispose();
    }
  });
});
