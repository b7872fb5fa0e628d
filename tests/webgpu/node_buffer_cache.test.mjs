// Per-call GPU buffers are cached per module: reused, grown, freed when later calls need far less
// (never under a GpuBatch's recorded work), destroyed on dispose() and dropped on device loss,
// with results equal to WASM throughout. Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GpuBatch, MultiHeadAttention } from '#webattention';
import { TRIM_CALLS } from '../../web/src/webgpu/buffer_pool.js';
import { filled } from '../contract/contract.mjs';
import { assertClose, boolMask, freshDevice, pinDefaultsWhereSelecting, randomStateDict, runs } from './node_setup.mjs';

// Calls compared bit for bit run the same kernels (pinned where the GPU selects by measurement).
after(pinDefaultsWhereSelecting().undo);

describe('per-call GPU buffers are cached per module', () => {
  /** A fresh device whose createBuffer() is counted and whose buffers' destroy() is tracked. */
  async function countingDevice() {
    const own = await freshDevice();
    const made = [];          // labels of the buffers created, in order
    const live = new Set();   // buffers created and not destroyed
    const createBuffer = own.createBuffer;
    own.createBuffer = function (descriptor) {
      const b = createBuffer.call(this, descriptor);
      made.push(descriptor.label);
      live.add(b);
      const destroy = b.destroy;
      b.destroy = function () { live.delete(b); return destroy.call(this); };
      return b;
    };
    return { own, made, live };
  }

  const create = { embedDim: 16, numHeads: 2, kdim: 12, vdim: 12 };
  function inputs(B, L, S, seed) {
    return [
      { data: filled(B * L * 16, seed), shape: [B, L, 16] },
      { data: filled(B * S * 12, seed + 1), shape: [B, S, 12] },
      { data: filled(B * S * 12, seed + 2), shape: [B, S, 12] },
      { keyPaddingMask: { data: boolMask(B * S, 7), shape: [B, S] }, attnMask: { data: filled(L * S, seed + 3), shape: [L, S] }, needWeights: true },
    ];
  }

  /** A WASM module and one on `gpu` with the same seeded weights. */
  async function loadedPair(gpu, seed) {
    const wasm = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
    const mha = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu });
    const stateDict = randomStateDict(wasm.stateDictShapes, seed);
    wasm.loadStateDict(stateDict);
    mha.loadStateDict(stateDict);
    return { wasm, mha };
  }

  test('a second identical call creates no buffer; larger calls grow the cache; results equal WASM and stay equal; dispose destroys them', async () => {
    const { own, made, live } = await countingDevice();
    const { wasm, mha } = await loadedPair(own, 5);
    try {
      const check = async (args, what) => {
        const actual = await mha.forward(...args);
        const expected = await wasm.forward(...args);
        assertClose(actual.output, expected.output, `${what} output`);
        assertClose(actual.attnWeights, expected.attnWeights, `${what} attnWeights`);
        return actual;
      };
      runs.length = 0;
      const small1 = inputs(2, 9, 20, 1);
      made.length = 0;
      const first = await check(small1, 'first call');
      assert.ok(made.length >= 8, `the first call makes its buffers (${made.join(', ')})`);
      made.length = 0;
      const again = await check(small1, 'same call again');
      assert.deepEqual(made, [], 'the same call again creates no buffer (the readback buffer is mapped and unmapped again)');
      assert.deepEqual(again.output.data, first.output.data, 'same result, bit for bit');
      assert.deepEqual(again.attnWeights.data, first.attnWeights.data);

      const big = inputs(2, 70, 150, 2);
      await check(big, 'larger call');
      assert.ok(made.length > 0, 'a larger call grows the cache');
      made.length = 0;
      await check(big, 'larger call again');
      await check(inputs(1, 33, 101, 3), 'a call between the two sizes');
      const back = await check(small1, 'the first call after growing');
      assert.deepEqual(made, [], 'calls no larger than the largest so far create no buffer');
      assert.deepEqual(back.output.data, first.output.data, 'same result as before the cache grew');

      const decode = inputs(2, 1, 600, 4);
      await check(decode, 'decode path');
      made.length = 0;
      await check(decode, 'decode path again');
      assert.deepEqual(made, [], 'the decode path reuses its buffers too');

      // Overlapping calls on one module run one after the other on the cached buffers.
      const overlapping = [small1, big, decode, inputs(1, 20, 50, 6), small1];
      const results = await Promise.all(overlapping.map((args) => mha.forward(...args)));
      for (const [i, args] of overlapping.entries()) {
        const expected = await wasm.forward(...args);
        assertClose(results[i].output, expected.output, `overlapping call ${i}`);
        assertClose(results[i].attnWeights, expected.attnWeights, `overlapping call ${i} attnWeights`);
      }
      assert.deepEqual(results[4].output.data, first.output.data);
      assert.ok(runs.every((r) => r === 'webgpu'), `every call ran on the GPU (${runs.join(', ')})`);
      assert.ok(live.size > 4, 'weights and cached buffers are alive before dispose');
    } finally {
      mha.dispose();
      wasm.dispose();
    }
    assert.equal(live.size, 0, `dispose() destroys the weights and every cached buffer (${[...live].map((b) => b.label).join(', ')})`);

    // A new module on the same device after dispose: same results.
    const again = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu: own });
    try {
      again.loadStateDict(randomStateDict(again.stateDictShapes, 5));
      const wasm2 = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
      wasm2.loadStateDict(randomStateDict(wasm2.stateDictShapes, 5));
      const args = inputs(2, 9, 20, 1);
      assertClose((await again.forward(...args)).output, (await wasm2.forward(...args)).output, 'after dispose, a new module');
      wasm2.dispose();
    } finally {
      again.dispose();
      own.destroy();
    }
  });

  test(`buffers a large call left are freed once ${TRIM_CALLS} calls in a row needed far less (gpuProfile().bufferBytes), never under a batch's recorded work`, async () => {
    const { own } = await countingDevice();
    const { wasm, mha } = await loadedPair(own, 9);
    try {
      // Keys and values over 1 MiB each (staging buffers too), a short query: cheap on SwiftShader.
      const [q, k, v] = inputs(1, 4, 24000, 10);
      await mha.forward(q, k, v);
      const afterLarge = mha.gpuProfile().bufferBytes;
      assert.ok(afterLarge > 4 << 20, `the large call's buffers: ${afterLarge} bytes`);
      const small = inputs(1, 3, 5, 11).slice(0, 3);
      const want = (await wasm.forward(...small)).output;
      // Batched calls only: the batch holds their work, nothing is freed until it is submitted.
      const batch = new GpuBatch();
      const recorded = [];
      for (let i = 0; i < 2 * TRIM_CALLS; i++) recorded.push(await mha.forward(...small, { output: 'gpu-buffer', batch }));
      assert.equal(mha.gpuProfile().bufferBytes >= afterLarge, true, 'nothing freed under the batch');
      await batch.submit();
      for (const r of recorded) {
        assert.deepEqual(Array.from(await r.output.read()), Array.from((await mha.forward(...small)).output.data));
        r.output.dispose();
      }
      for (let i = 0; i < 2 * TRIM_CALLS; i++) assertClose((await mha.forward(...small)).output, want, `small call ${i}`);
      const afterSmall = mha.gpuProfile().bufferBytes;
      assert.ok(afterSmall < afterLarge / 8, `freed: ${afterLarge} → ${afterSmall} bytes`);
      assertClose((await mha.forward(q, k, v)).output, (await wasm.forward(q, k, v)).output, 'the large call again, buffers made again');
    } finally {
      mha.dispose();
      wasm.dispose();
      own.destroy();
    }
  });

  test('device loss drops the cache; the module carries on on WASM', async () => {
    const { own, made, live } = await countingDevice();
    const mha = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu: own });
    const wasm = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
    try {
      const stateDict = randomStateDict(mha.stateDictShapes, 9);
      mha.loadStateDict(stateDict);
      wasm.loadStateDict(stateDict);
      const args = inputs(1, 12, 30, 8);
      await mha.forward(...args);
      assert.ok(made.length > 4);
      own.destroy();
      await own.lost;
      await new Promise((r) => setTimeout(r, 0));
      const params = [...live].map((b) => b.label).filter((l) => !/weight|bias/.test(l));
      assert.deepEqual(params, [], 'only the weights remain until dispose()');
      runs.length = 0;
      const actual = await mha.forward(...args);
      assert.deepEqual(runs, ['wasm']);
      assertClose(actual.output, (await wasm.forward(...args)).output, 'after device loss');
    } finally {
      mha.dispose();
      wasm.dispose();
    }
    assert.equal(live.size, 0);
  });
});
