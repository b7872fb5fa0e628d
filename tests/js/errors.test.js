// Bad input: each case must throw a typed error naming the argument, the expected and the actual
// shape or type; the same module must then still give the right answer, and nothing may leak.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, capabilities,
  WebAttentionError, ShapeError, DTypeError, StateDictError, OptionError, DisposedError,
} from '#webattention';

const E = 8, H = 2, B = 2, L = 3, S = 4;
const seq = (n, f = 0.1) => new Float32Array(n).map((_, i) => Math.sin(i * f + 1));
const t = (shape, f) => ({ data: seq(shape.reduce((a, b) => a * b, 1), f), shape });

const query = t([B, L, E], 0.3), key = t([B, S, E], 0.7), value = t([B, S, E], 1.1);

async function makeModule(options = { embedDim: E, numHeads: H }) {
  const mha = await MultiHeadAttention.create(options);
  const sd = Object.fromEntries(mha.stateDictShapes.map(({ name, shape }, i) => [name, t(shape, 0.05 * (i + 1))]));
  mha.loadStateDict(sd);
  return { mha, sd };
}

const { mha, sd } = await makeModule();
const good = await mha.forward(query, key, value, { needWeights: true });

// Asserts `call` rejects with `Class`, the message contains every `parts` string, and a valid
// forward() on the shared module afterwards gives the same answer as before.
async function rejects(call, Class, parts) {
  let error;
  try {
    await call();
  } catch (e) {
    error = e;
  }
  assert.ok(error, 'expected an error');
  assert.ok(error instanceof Class, `expected ${Class.name}, got ${error?.name}: ${error?.message}`);
  assert.ok(error instanceof WebAttentionError && error instanceof Error);
  assert.equal(error.name, Class.name);
  for (const part of parts) assert.ok(error.message.includes(part), `"${error.message}" lacks "${part}"`);
  const again = await mha.forward(query, key, value, { needWeights: true });
  assert.deepEqual(again.output.data, good.output.data);
  assert.deepEqual(again.attnWeights.data, good.attnWeights.data);
}

const badForward = [
  ['query of wrong width', () => mha.forward(t([B, L, 5]), key, value), ShapeError, ['query', '[2, 3, 8]', '[2, 3, 5]']],
  ['query of rank 4', () => mha.forward(t([1, B, L, E]), key, value), ShapeError, ['query', '2-D or 3-D', '[1, 2, 3, 8]']],
  ['key batch mismatch', () => mha.forward(query, t([1, S, E]), value), ShapeError, ['key', '[2, S, 8]', '[1, 4, 8]']],
  ['value length differs from key', () => mha.forward(query, key, t([B, 5, E])), ShapeError, ['value', '[2, 4, 8]', '[2, 5, 8]']],
  ['data shorter than shape', () => mha.forward({ data: new Float32Array(10), shape: [B, L, E] }, key, value), ShapeError, ['query', '48', '10']],
  ['Float64Array data', () => mha.forward({ data: new Float64Array(48), shape: [B, L, E] }, key, value), DTypeError, ['query', 'Float32Array', 'Float64Array(48)']],
  ['plain array as tensor', () => mha.forward([1, 2, 3], key, value), DTypeError, ['query', 'tensor', 'Array(3)']],
  ['missing key', () => mha.forward(query, undefined, value), DTypeError, ['key', 'tensor', 'undefined']],
  ['non-integer shape', () => mha.forward({ data: new Float32Array(48), shape: [B, L, 8.5] }, key, value), ShapeError, ['query.shape', 'integers']],
  ['key padding mask shape', () => mha.forward(query, key, value, { keyPaddingMask: { data: new Uint8Array(6), shape: [B, 3] } }), ShapeError, ['keyPaddingMask', '[2, 4]', '[2, 3]']],
  ['key padding mask Int32Array', () => mha.forward(query, key, value, { keyPaddingMask: { data: new Int32Array(8), shape: [B, S] } }), DTypeError, ['keyPaddingMask', 'Uint8Array', 'Int32Array(8)']],
  ['attn mask shape', () => mha.forward(query, key, value, { attnMask: { data: new Uint8Array(12), shape: [S, L] } }), ShapeError, ['attnMask', '[3, 4] or [4, 3, 4]', '[4, 3]']],
  ['3-D attn mask wrong heads', () => mha.forward(query, key, value, { attnMask: { data: new Float32Array(24), shape: [2, L, S] } }), ShapeError, ['attnMask', '[4, 3, 4]', '[2, 3, 4]']],
  ['unknown option', () => mha.forward(query, key, value, { need_weights: true }), OptionError, ['need_weights', 'needWeights']],
  ['non-boolean option', () => mha.forward(query, key, value, { isCausal: 1 }), OptionError, ['isCausal', 'boolean', 'number 1']],
  ['options not an object', () => mha.forward(query, key, value, 'causal'), OptionError, ['options object', 'string']],
];
for (const [name, call, Class, parts] of badForward) {
  test(`forward rejects ${name}, then works`, () => rejects(call, Class, parts));
}

const badStateDicts = [
  ['missing entry', () => { const d = { ...sd }; delete d['out_proj.bias']; return d; }, ['out_proj.bias', 'missing', '[8]']],
  ['unknown entry', () => ({ ...sd, bias_k: t([1, 1, E]) }), ['bias_k', 'in_proj_weight']],
  ['misshaped tensor', () => ({ ...sd, in_proj_weight: t([E, 3 * E]) }), ['in_proj_weight', '[24, 8]', '[8, 24]']],
  ['wrong-length Float32Array', () => ({ ...sd, in_proj_bias: new Float32Array(23) }), ['in_proj_bias', '[24]', 'Float32Array(23)']],
  ['Float64Array value', () => ({ ...sd, in_proj_bias: { data: new Float64Array(24), shape: [24] } }), ['in_proj_bias', 'Float32Array', 'Float64Array(24)']],
  ['not an object', () => 42, ['stateDict', 'number 42']],
];
for (const [name, make, parts] of badStateDicts) {
  test(`loadStateDict rejects ${name}, keeps the old weights`, () => rejects(() => mha.loadStateDict(make()), StateDictError, parts));
}

test('a Map state dict and bare Float32Arrays load the same weights', async () => {
  const other = await MultiHeadAttention.create({ embedDim: E, numHeads: H });
  other.loadStateDict(new Map(Object.entries(sd).map(([k, v]) => [k, v.data])));
  const r = await other.forward(query, key, value, { needWeights: true });
  assert.deepEqual(r.output.data, good.output.data);
  other.dispose();
});

const badCreate = [
  ['embedDim not divisible by numHeads', { embedDim: 10, numHeads: 4 }, ['embedDim', 'multiple of numHeads (4)', '10']],
  ['zero heads', { embedDim: 8, numHeads: 0 }, ['numHeads', 'integer >= 1', 'number 0']],
  ['string embedDim', { embedDim: '8', numHeads: 2 }, ['embedDim', 'integer >= 1', 'string "8"']],
  ['unknown option', { embedDim: 8, numHeads: 2, batchFirst: true }, ['batchFirst', 'embedDim']],
  ['bias not boolean', { embedDim: 8, numHeads: 2, bias: 'yes' }, ['bias', 'boolean']],
];
for (const [name, options, parts] of badCreate) {
  test(`create rejects ${name}`, () => rejects(() => MultiHeadAttention.create(options), OptionError, parts));
}

test('functional forms reject bad input and keep working', async () => {
  const q = t([2, 3, 4]), k = t([2, 5, 4]), v = t([2, 5, 6]);
  const ok = await scaledDotProductAttention(q, k, v);
  await rejects(() => scaledDotProductAttention(q, t([2, 5, 3]), v), ShapeError, ['k', '[2, S, 4]', '[2, 5, 3]']);
  await rejects(() => scaledDotProductAttention(q, k, t([2, 4, 6])), ShapeError, ['v', '[2, 5, dv]', '[2, 4, 6]']);
  await rejects(() => scaledDotProductAttention(q, k, v, { scale: -1 }), OptionError, ['scale', '> 0', '-1']);
  await rejects(() => scaledDotProductAttention(q, k, v, { attnMask: { data: new Uint8Array(15), shape: [5, 3] } }), ShapeError, ['attnMask', '[3, 5]', '[5, 3]']);
  await rejects(() => selfAttention(t([5])), ShapeError, ['x', '[L, C]', '[5]']);
  await rejects(() => selfAttention(t([2, 2]), { weights: true }), OptionError, ['weights', 'returnWeights']);
  assert.deepEqual((await scaledDotProductAttention(q, k, v)).output.data, ok.output.data);
});

test('use after dispose throws DisposedError; dispose twice is harmless', async () => {
  const { mha: m } = await makeModule();
  m.dispose();
  m.dispose();
  await assert.rejects(() => m.forward(query, key, value), DisposedError);
  assert.throws(() => m.loadStateDict(sd), (e) => e instanceof DisposedError && e.message.includes('loadStateDict'));
});

test('no WASM memory leaks over many good and bad calls', async () => {
  const warm = await makeModule();
  await warm.mha.forward(query, key, value, { needWeights: true });
  const before = await wasmMemoryInUse();
  for (let i = 0; i < 50; i++) {
    await warm.mha.forward(query, key, value, { needWeights: i % 2 === 0 });
    await assert.rejects(() => warm.mha.forward(query, key, t([B, 5, E])));
    await assert.rejects(() => warm.mha.forward(query, key, value, { attnMask: t([9, 9]) }));
    await scaledDotProductAttention(t([3, 4]), t([5, 4]), t([5, 2]), { needWeights: true });
  }
  assert.equal(await wasmMemoryInUse(), before);
  const before2 = await wasmMemoryInUse();
  for (let i = 0; i < 20; i++) (await makeModule()).mha.dispose();
  assert.equal(await wasmMemoryInUse(), before2);
  // With threads > 1 (WEBATTENTION_THREADS, or 'auto' on several cores) the modules share a
  // worker pool: none of the above may have broken it.
  assert.equal(warm.mha.threads, (await capabilities()).threads);
  warm.mha.dispose();
});
