// The transfer options (staging_uploads.js's transferModes): inputs through the module's own
// staging buffers, result arrays made while the GPU works (by default both from 1 MiB; here
// forced on and off). Each gives the same results as the plain path (bit for bit: the same kernels on the same bytes), on growing and shrinking calls
// (a staging buffer replaced by a larger one, or still mapping when the next call comes, which
// then takes writeBuffer()), with key and value apart (three staged inputs) and weights.
// Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { transferModes } from '../../web/src/webgpu/staging_uploads.js';
import { filled } from '../contract/contract.mjs';
import { adapterName, gpu, pinDefaultsWhereSelecting, randomStateDict } from './node_setup.mjs';

const DEFAULT_MODES = { ...transferModes };
after(() => Object.assign(transferModes, DEFAULT_MODES));

const create = { embedDim: 16, numHeads: 2, backend: 'webgpu' };
// [L, S]; [8, 20000]: inputs and per-head weights over 1 MiB, so 'auto' turns both options on.
const calls = [[5, 7], [40, 33], [40, 33], [8, 20000], [9, 70], [64, 64], [3, 3]];
const input = (rows, seed) => ({ data: filled(rows * 16, seed), shape: [1, rows, 16] });

async function runAll(modes) {
  Object.assign(transferModes, modes);
  // The same kernels in every run (on a GPU that selects by measurement, pinned), or bits differ.
  const { undo } = pinDefaultsWhereSelecting();
  const mha = await MultiHeadAttention.create({ ...create, gpu });
  try {
    mha.loadStateDict(randomStateDict(mha.stateDictShapes, 4));
    const results = [];
    for (const [L, S] of calls) {
      const q = input(L, L);
      const kv = input(S, S + 100);
      // Not awaited one by one for the last two: the staging buffers may still be mapping.
      results.push(mha.forward(q, kv, input(S, S + 200), { needWeights: true, averageAttnWeights: false }));
      if (L !== 64) await results.at(-1);
    }
    return await Promise.all(results);
  } finally {
    mha.dispose();
    undo();
    Object.assign(transferModes, DEFAULT_MODES);
  }
}

describe(`transfer options (Dawn, ${adapterName})`, () => {
  let expected;
  test('both off (writeBuffer(), result copied out after the readback)', async () => {
    expected = await runAll({ staging: false, prefault: false });
  });
  for (const modes of [{ staging: true, prefault: false }, { staging: false, prefault: true }, { staging: true, prefault: true },
    { staging: 'auto', prefault: 'auto' }]) {
    test(`${JSON.stringify(modes)}: the same results, bit for bit`, async () => {
      const actual = await runAll(modes);
      actual.forEach((r, i) => {
        assert.deepEqual(r.output.data, expected[i].output.data, `call ${i} output`);
        assert.deepEqual(r.attnWeights.data, expected[i].attnWeights.data, `call ${i} weights`);
      });
    });
  }
});
