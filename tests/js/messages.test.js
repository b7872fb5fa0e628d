// Messages a new user meets (issue "For the visitor and the newcomer"): each says what to do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, OptionError, StateDictError } from '#webattention';

const E = 8;
const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2 });
const weights = Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
  [name, { data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.1), shape }]));
mha.loadStateDict(weights);
const x = { data: new Float32Array(E).fill(0.5), shape: [1, 1, E] };

test('createCache({}) names both ways to size a cache: maxLength or window', () => {
  assert.throws(() => mha.createCache({}), (e) => e instanceof OptionError && e.argument === 'maxLength'
    && /expected maxLength \(the most positions the cache holds\) or window .*got neither/.test(e.message));
  assert.throws(() => mha.createCache(), (e) => e instanceof OptionError && /got neither/.test(e.message));
});

test('a cache with isCausal: false is refused, saying a cached step is causal', async () => {
  const cache = mha.createCache({ maxLength: 4 });
  await assert.rejects(() => mha.forward(x, x, x, { cache, isCausal: false }),
    (e) => e instanceof OptionError && e.argument === 'isCausal' && /not supported with a cache/.test(e.message));
  assert.equal(cache.length, 0);
  await mha.forward(x, x, x, { cache, isCausal: true });
  await mha.forward(x, x, x, { cache });
  assert.equal(cache.length, 2);
  cache.dispose();
});

test('a strict loadStateDict of a whole model\'s keys suggests the prefix that loads them', () => {
  const prefixed = Object.fromEntries(Object.entries(weights).map(([k, v]) => [`layers.0.self_attn.${k}`, v]));
  assert.throws(() => mha.loadStateDict(prefixed), (e) => e instanceof StateDictError
    && e.message.includes("loadStateDict(sd, { prefix: 'layers.0.self_attn.' })"));
  mha.loadStateDict(prefixed, { prefix: 'layers.0.self_attn.' });
});
