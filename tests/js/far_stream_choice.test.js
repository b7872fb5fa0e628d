// A decode step's int8-activation projections read their far panels in groups of 4 or in pairs,
// the two taking turns call by call until the first calls' timings choose one
// (cpp/src/kernels/far_stream_choice.h). Both must give the same bits: the same one-row call,
// repeated past the choice on a fresh module of each integer weights dtype, returns the first
// call's output every time. Its own file (its own process under node --test): each kernel's
// choice is made once per WASM instance, and other files' calls would make it first.
// scripts/test.sh runs tests/js on every single-threaded module and on the pool.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { randomTensor, rng, seededStateDict } from '../contract/contract.mjs';

const E = 256;  // 32 panels a projection: groups of 4 (stride 8) and pairs (stride 16) group them otherwise
const CALLS = 240;  // ~2 projection calls each: past the 32 + 2 × 64 calls to the choice

for (const weightsDtype of ['int8', 'int4']) {
  test(`${weightsDtype} weights, int8 activations: one-row calls before, during and after the choice give the same bits`, async () => {
    const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 8, weightsDtype, activations: 'int8' });
    try {
      mha.loadStateDict(seededStateDict(mha.stateDictShapes, 11));
      const x = randomTensor([1, 1, E], rng(12));
      const first = (await mha.forward(x, x, x)).output.data;
      for (let call = 1; call < CALLS; ++call) {
        const { data } = (await mha.forward(x, x, x)).output;
        assert.deepEqual(data, first, `call ${call} differs from the first`);
      }
    } finally {
      mha.dispose();
    }
  });
}
