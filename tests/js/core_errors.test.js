// Errors raised inside the WASM core, in the caller's words (issue "Hostile callers", finding 9):
// each reaches JS as its typed class with `argument` set to the option the caller wrote (maxLength,
// window, batchSize, the state-dict key, headBilinearForm's head) and a message with no C++ name
// in it (max_length, key_padding_mask, head_bilinear_form, …). One row per error the core can
// raise past the JS checks; after each, the module still works.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryError, MultiHeadAttention, OptionError, StateDictError } from '#webattention';
import { MAX_CACHE_POSITIONS } from '../internals.mjs';

const E = 8;
const x = { data: new Float32Array(2 * E).fill(0.5), shape: [1, 2, E] };
const loaded = async (options = {}) => {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2, ...options });
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
    [name, { data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.1), shape }])));
  return mha;
};

// [what, options of create(), the failing call, class, argument, message]
const ROWS = [
  ['a cache whose maxLength is past one buffer', {}, (m) => m.createCache({ maxLength: MAX_CACHE_POSITIONS }),
    MemoryError, 'maxLength', /^maxLength: the cache's keys needs \d+ floats/],
  ['a window whose ring is past one buffer (no maxLength given)', {}, (m) => m.createCache({ window: MAX_CACHE_POSITIONS }),
    MemoryError, 'window', /^window: the cache's keys needs/],
  ['a batch that multiplies a cache past one buffer', {}, (m) => m.createCache({ maxLength: 4096, batchSize: 2 ** 20 }),
    MemoryError, 'batchSize', /^batchSize: the cache's keys needs/],
  ['headBilinearForm of a rotary module', { rotary: {} }, (m) => m.headBilinearForm(0),
    OptionError, 'head', /^headBilinearForm: with rotary embeddings/],
  ['forward before loadStateDict', {}, null, StateDictError, 'in_proj_weight', /'in_proj_weight' was not loaded \(call loadStateDict\(\) first\)/],
  ['headBilinearForm of a qkNorm module', { qkNorm: {} }, (m) => m.headBilinearForm(0),
    OptionError, 'head', /^headBilinearForm: with qkNorm the scores are not bilinear/],
];

for (const [what, options, call, Class, argument, message] of ROWS) {
  test(`core error in JS words: ${what}`, async () => {
    const mha = call ? await loaded(options) : await MultiHeadAttention.create({ embedDim: E, numHeads: 2, ...options });
    try {
      await assert.rejects(async () => (call ? call(mha) : mha.forward(x, x, x)), (e) => {
        assert.ok(e instanceof Class, `${e.name}: ${e.message}`);
        assert.equal(e.argument, argument);
        assert.match(e.message, message);
        const withoutKeys = e.message.replace(/\b(in|q|k|v)_proj_(weight|bias)\b/g, '');  // state-dict keys: JS names too
        assert.doesNotMatch(withoutKeys, /\b[a-z]+_[a-z_]+\b/, 'a C++ name in the message');
        return true;
      });
      if (call) {
        const { output } = await mha.forward(x, x, x);
        assert.deepEqual(output.shape, [1, 2, E]);
      }
    } finally {
      mha.dispose();
    }
  });
}
