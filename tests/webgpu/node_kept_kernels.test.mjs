// A call like the one before it takes that call's kernels as they were (webgpu/call_kernels.js):
// a decode step chooses its variants once, not at every token, while the selection answers as
// it did. A pin, a time the selection records, a dropped candidate or a test's own candidates
// make the next call choose again; the steps' values are the same as those of calls that chose.
// Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, configure } from '#webattention';
import { selectionHooks } from '../internals.mjs';
import { filled } from '../contract/contract.mjs';
import { freshDevice, pinDefaultsWhereSelecting, randomStateDict } from './node_setup.mjs';
import { gpuTensor } from './gpu_tensor_inputs.mjs';

after(pinDefaultsWhereSelecting().undo);

const E = 32;

// A module on a fresh device, a cache on it holding 16 positions, and step(): one decode step on a GPU input, which
// resolves to { chose: how many times chooseKernels() ran, names: the variants that ran, output }.
async function decodeSteps() {
  const gpu = await freshDevice();
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, numKvHeads: 2, backend: 'webgpu', gpu });
  mha.loadStateDict(randomStateDict(mha.stateDictShapes, 21));
  const x = gpuTensor(filled(E, 22), [1, 1, E], { on: gpu });
  const cache = mha.createCache({ maxLength: 64 });
  // 16 positions first: the steps after (17 to 32 keys) are of one shape class (the keys bucketed).
  const prompt = { data: filled(16 * E, 23), shape: [1, 16, E] };
  await mha.forward(prompt, prompt, prompt, { cache });
  const step = async () => {
    let chose = 0;
    let names = null;
    Object.assign(selectionHooks, { onChoose: () => chose++, onCall: (n) => { names = n; } });
    try {
      const { output } = await mha.forward(x, x, x, { cache, output: 'gpu-buffer' });
      const values = await output.read();
      output.dispose();
      return { chose, names, values };
    } finally {
      Object.assign(selectionHooks, { onChoose: null, onCall: null });
    }
  };
  const done = () => {
    x.gpuBuffer.destroy();
    mha.dispose();
    gpu.destroy();
  };
  return { step, cache, done };
}

describe('kernels kept for the calls like one before', () => {
  test('a decode step chooses its variants once; the steps after take them as they were', async () => {
    const { step, done } = await decodeSteps();
    const first = await step();
    assert.equal(first.chose, 1, 'the first step chooses');
    for (let i = 0; i < 4; i++) {
      const next = await step();
      assert.equal(next.chose, 0, `step ${i + 2} chooses nothing`);
      assert.deepEqual(next.names, first.names);
    }
    done();
  });

  test('a pin, or a test offering its own candidates, makes the next step choose again', async () => {
    const { step, cache, done } = await decodeSteps();
    const first = await step();
    await step();
    const other = first.names.decode === 'split64' ? 'split256' : 'split64';
    configure({ gpuKernels: { decode: other } });
    let pinned;
    try {
      pinned = await step();
    } finally {
      configure({ gpuKernels: {} });
      pinDefaultsWhereSelecting();  // as the file runs
    }
    assert.equal(pinned.chose, 1, 'chosen again after the pin');
    assert.equal(pinned.names.decode, other, 'the pinned variant ran');
    const unpinned = await step();
    assert.equal(unpinned.chose, 1, 'chosen again after the pin was lifted');
    assert.equal(unpinned.names.decode, first.names.decode);
    selectionHooks.candidates = (family, fitting) => fitting;
    try {
      assert.equal((await step()).chose, 1, "a test's own candidates: chosen at each call");
      assert.equal((await step()).chose, 1, "a test's own candidates: chosen at each call");
    } finally {
      selectionHooks.candidates = null;
    }
    // A step that chose and one that took the kept kernels give the same values at one length.
    cache.truncate(20);
    selectionHooks.candidates = (family, fitting) => fitting;
    let chosen;
    try {
      chosen = await step();
    } finally {
      selectionHooks.candidates = null;
    }
    await step();
    cache.truncate(20);
    const kept = await step();
    assert.equal(kept.chose, 0);
    assert.deepEqual(kept.values, chosen.values);
    done();
  });
});
