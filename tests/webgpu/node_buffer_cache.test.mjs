// Per-call GPU buffers are cached per module: reused, grown, destroyed on dispose() and dropped on
// device loss, with results equal to WASM throughout. Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
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

  test('a second identical call creates no buffer; larger calls grow the cache; results equal WASM and stay equal; dispose destroys them', async () => {
    const { own, made, live } = await countingDevice();
    const wasm = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
    const mha = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu: own });
    try {
      const stateDict = randomStateDict(wasm.stateDictShapes, 5);
      wasm.loadStateDict(stateDict);
      mha.loadStateDict(stateDict);
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
