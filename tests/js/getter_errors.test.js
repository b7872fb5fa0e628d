// A getter that throws is not wrapped, on every entry point (README, "Errors"): whatever it throws
// (an object, null) reaches the caller unchanged, and the module carries on. On 1aa1392
// loadStateDict() wrapped a tensor's getter error into a StateDictError (a thrown null became an
// untyped TypeError), with the torch layout and with 'hf'.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, scaledDotProductAttention, selfAttention, saveSafetensors } from '#webattention';
import { seededStateDict } from '../contract/random.mjs';

test('getter errors pass through unwrapped from every call, and the module still computes', async () => {
  const mha = await MultiHeadAttention.create({ embedDim: 2, numHeads: 1, rotary: {}, threads: 1 });
  try {
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 5));
    const x = { data: new Float32Array([1, 0, 0, 1]), shape: [2, 2] };
    const expected = (await mha.forward(x, x, x)).output.data;
    for (const thrown of [{ mine: true }, null]) {
      const shapeThrows = { data: new Float32Array(4), get shape() { throw thrown; } };
      const calls = {
        sdpa: () => scaledDotProductAttention(x, shapeThrows, x),
        selfAttention: () => selfAttention({ get data() { throw thrown; }, shape: [2, 2] }),
        forward: () => mha.forward(x, x, shapeThrows),
        attnMask: () => mha.forward(x, x, x, { attnMask: shapeThrows }),
        positionIds: () => mha.forward(x, x, x, { positionIds: { data: new Int32Array(2), get shape() { throw thrown; } } }),
        option: () => mha.forward(x, x, x, { get isCausal() { throw thrown; } }),
        stateDictObject: () => mha.loadStateDict({ get in_proj_weight() { throw thrown; } }),
        stateDictMap: () => mha.loadStateDict(new Map([['in_proj_weight', shapeThrows]])),
        stateDictHf: () => mha.loadStateDict(new Map([['q_proj.weight', shapeThrows]]), { layout: 'hf' }),
        saveSafetensors: () => saveSafetensors({ a: shapeThrows }),
        create: () => MultiHeadAttention.create({ get embedDim() { throw thrown; }, numHeads: 1 }),
        createCache: () => mha.createCache({ get maxLength() { throw thrown; } }),
      };
      for (const [where, call] of Object.entries(calls)) {
        await assert.rejects(async () => call(), (e) => e === thrown, `${where}, ${JSON.stringify(thrown)}`);
      }
    }
    assert.deepEqual((await mha.forward(x, x, x)).output.data, expected);
  } finally {
    mha.dispose();
  }
});
