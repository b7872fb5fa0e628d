// A GPU call's host inputs after forward() returns: the module copies its large inputs into
// arrays it reuses (base/host_copies.js), so these tests use inputs over POOLED_BYTES. Changing,
// filling with NaN or transferring the caller's arrays right after the call changes nothing; calls
// in flight together each keep their own copies; later calls that reuse the arrays get their own
// results. Every result is checked against WASM on the values the call was given. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { POOLED_BYTES } from '../../web/src/base/host_copies.js';
import { adapterName, assertClose, gpu, randomStateDict, runs } from './node_setup.mjs';

const E = 16;
const S = Math.ceil(POOLED_BYTES / (E * 4)) + 3;  // key and value just over the pooled size
const tensor = (rows, seed) => ({ data: filled(rows * E, seed), shape: [1, rows, E] });
const call = (seed, L = 4) => [tensor(L, seed), tensor(S, seed + 1), tensor(S, seed + 2)];
const snapshot = (args) => args.map((t) => ({ data: t.data.slice(), shape: t.shape }));

async function modules() {
  const wasm = await MultiHeadAttention.create({ embedDim: E, numHeads: 2, backend: 'wasm' });
  const gpuMha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2, backend: 'webgpu', gpu });
  const stateDict = randomStateDict(wasm.stateDictShapes, 5);
  wasm.loadStateDict(stateDict);
  gpuMha.loadStateDict(stateDict);
  return { wasm, gpuMha, dispose: () => (wasm.dispose(), gpuMha.dispose()) };
}

describe(`a GPU call's host inputs after the call (Dawn, ${adapterName})`, () => {
  test('changed, filled with NaN or transferred right after the call: the result is that of the values given', async () => {
    const { wasm, gpuMha, dispose } = await modules();
    try {
      for (let round = 0; round < 3; round++) {  // rounds 2 and 3 reuse the first round's arrays
        const args = call(10 * round);
        const given = snapshot(args);
        runs.length = 0;
        const pending = gpuMha.forward(...args, { needWeights: true });
        args[0].data.fill(NaN);
        args[1].data.fill(1e30);
        structuredClone(args[2].data.buffer, { transfer: [args[2].data.buffer] });  // detaches the value
        const actual = await pending;
        assert.deepEqual(runs, ['webgpu']);
        const expected = await wasm.forward(...given, { needWeights: true });
        assertClose(actual.output, expected.output, `round ${round} output`);
        assertClose(actual.attnWeights, expected.attnWeights, `round ${round} weights`);
      }
    } finally {
      dispose();
    }
  });

  test('calls in flight together keep their own copies; calls after them reuse the arrays, with their own values', async () => {
    const { wasm, gpuMha, dispose } = await modules();
    try {
      for (let round = 0; round < 2; round++) {
        // key passed as value too in one call: one copy for both.
        const calls = [call(1 + round), call(20 + round), call(40 + round, 9)].map((args, i) => (i === 1 ? [args[0], args[1], args[1]] : args));
        const given = calls.map(snapshot);
        const pending = calls.map((args) => gpuMha.forward(...args));
        for (const args of calls) for (const t of args) t.data.fill(-3);
        const actual = await Promise.all(pending);
        for (let i = 0; i < calls.length; i++) {
          const expected = await wasm.forward(...given[i]);
          assertClose(actual[i].output, expected.output, `round ${round}, call ${i}`);
        }
      }
    } finally {
      dispose();
    }
  });
});
