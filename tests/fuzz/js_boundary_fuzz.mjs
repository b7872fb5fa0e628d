// Property-based fuzzer of the JS boundary (issue "Hostile callers"): random calls of forward()
// and scaledDotProductAttention() whose tensors or options a hostile caller has spoiled — holes,
// Proxies whose answers change, getters (throwing or not), detached buffers, arrays of another
// realm, views at an offset, huge or sparse ranks, strings and non-finite sizes, wrong element
// types, off-by-one lengths, masks of the wrong shape, unknown options, an `out` array right,
// wrong or detached by a getter. Every call must either
// throw a typed WebAttentionError (or, for a getter that throws, that getter's own error, passed
// through unchanged: the documented choice), or, where the spoiled input still means the same
// tensor, return exactly the output of the plain input. After every call the WASM memory in use is
// unchanged and a known call still gives its known answer. Issue 20's options: modules with
// softcap, scale, sinks, qk-norm, a bias per projection, RoPE scaled or from a table (too short for
// some calls: those must be refused), hostile values of each at create(), position ids past the
// table, and loadStateDict() in the Hugging Face, GPT-2 and BERT layouts (js_boundary_module_calls.mjs).
// Issue 34's (js_boundary_read_once.mjs): resizable and growable shared buffers, inputs shrunk,
// transferred or overwritten after the call or by a later argument's getter, state dicts with
// number or Symbol keys or a later entry's getter spoiling an earlier one, scalar options float32
// cannot hold, and saveSafetensors() → loadSafetensors() round trips of odd names and metadata.
//   node tests/fuzz/js_boundary_fuzz.mjs [--seconds S = 30] [--seed N]
import vm from 'node:vm';
import { parseArgs } from 'node:util';
import * as api from '#webattention';
import { hostileCreateCall, layoutLoadCall, rotaryTable } from './js_boundary_module_calls.mjs';
import { READ_ONCE_SPOILERS, extremeScaleCall, saveLoadCall, spoiledAfterCheckCall, stateDictCall } from './js_boundary_read_once.mjs';

const { MultiHeadAttention, WebAttentionError, scaledDotProductAttention, wasmMemoryInUse } = api;

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '30' }, seed: { type: 'string', default: String(Date.now() % 1e9) } } });
let state = Number(values.seed) >>> 0;
const random = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32);
const int = (n) => Math.floor(random() * n);
const pick = (list) => list[int(list.length)];

/** The error a throwing getter raises: it must reach the caller unchanged. */
const THROWN = new Error('thrown by the caller\'s getter');
const otherRealm = vm.runInNewContext('({ Float32Array })');

const filled = (n) => Float32Array.from({ length: n }, () => random() * 2 - 1);
const tensor = (...shape) => ({ data: filled(shape.reduce((a, b) => a * b, 1)), shape });

// Spoilers of one tensor: each returns [the spoiled tensor, whether it still means the same tensor].
const SPOIL_TENSOR = {
  hole: (t) => { const shape = [...t.shape]; delete shape[int(shape.length)]; return [{ data: t.data, shape }, false]; },
  proxyStable: (t) => [{ data: t.data, shape: new Proxy([...t.shape], {}) }, true],
  proxyChanging: (t) => {
    const seen = new Set();
    return [{ data: t.data, shape: new Proxy([...t.shape], { get: (a, k) => (seen.has(k) ? 1e5 : (seen.add(k), Reflect.get(a, k))) }) }, true];
  },
  throwingShape: (t) => [{ data: t.data, get shape() { throw THROWN; } }, false],
  throwingData: (t) => [{ shape: t.shape, get data() { throw THROWN; } }, false],
  getterShape: (t) => [{ data: t.data, get shape() { return [...t.shape]; } }, true],
  otherRealm: (t) => { const d = new otherRealm.Float32Array(t.data.length); d.set(t.data); return [{ data: d, shape: t.shape }, true]; },
  offsetView: (t) => { const big = new Float32Array(t.data.length + 7); big.set(t.data, 3); return [{ data: big.subarray(3, 3 + t.data.length), shape: t.shape }, true]; },
  ortDims: (t) => [{ data: t.data, dims: [...t.shape], type: 'float32' }, true],
  detached: (t) => { const d = t.data.slice(); structuredClone(d.buffer, { transfer: [d.buffer] }); return [{ data: d, shape: t.shape }, false]; },
  hugeSparseRank: (t) => { const shape = []; shape.length = pick([9, 2 ** 20, 2 ** 31 + 1]); return [{ data: t.data, shape }, false]; },
  badDim: (t) => { const shape = [...t.shape]; shape[int(shape.length)] = pick(['2', NaN, -1, 0, 1.5, 1e400, 2 ** 53, null, {}]); return [{ data: t.data, shape }, false]; },
  wrongType: (t) => [{ data: pick([Float64Array.from(t.data), [...t.data], new Uint16Array(t.data.length), null]), shape: t.shape }, false],
  offByOne: (t) => [{ data: t.data.subarray(0, t.data.length - 1), shape: t.shape }, false],
  dataProxy: (t) => [{ data: new Proxy(t.data, {}), shape: t.shape }, false],
  ...READ_ONCE_SPOILERS(pick),
};

// Spoilers of the options object of a forward().
const SPOIL_OPTIONS = {
  unknownKey: (o) => [{ ...o, isCasual: true }, false],
  throwingGetter: (o) => [Object.defineProperty({ ...o }, 'needWeights', { get() { throw THROWN; }, enumerable: true }), false],
  badMask: (o, { B, S }) => [{ ...o, keyPaddingMask: { data: new Uint8Array(B * S + 1), shape: [B, S + 1] } }, false],
  badBoolean: (o) => [{ ...o, isCausal: pick(['yes', 1, null]) }, false],
  badPositionIds: (o, { B, L }) => [{ ...o, positionIds: pick([{ data: new Int32Array(B * L).fill(-1), shape: [B, L] },
    { data: new Float32Array(B * L), shape: [B, L] }, { data: new Int32Array(B * L + 1), shape: [B, L + 1] }, new Int32Array(B * L)]) }, false],
  // The ids a call uses anyway: the same bits, where the module has rotary and S = L.
  // Past a given table's rows (4), or negative where there is none: refused either way.
  pastTablePositionIds: (o, { B, L, table }) => [{ ...o, positionIds: { data: new Int32Array(B * L).fill(table ? 4 : -5), shape: [B, L] } }, false],
  defaultPositionIds: (o, { B, L, S, rotary }) => [{ ...o, positionIds: { data: Int32Array.from({ length: B * L }, (_, n) => n % L), shape: [B, L] } },
    rotary && L === S],
  // `out`: the caller's array for the output (the same result), or one of the wrong kind or size,
  // or one a getter of the same options object detaches before it is checked.
  out: (o, { B, L, E }) => [{ ...o, out: new Float32Array(B * L * E) }, true],
  badOut: (o, { B, L, E }) => [{ ...o, out: pick([new Float32Array(B * L * E + 1), new Float64Array(B * L * E), new Uint16Array(B * L * E),
    [...new Float32Array(B * L * E)], new Float32Array(B * L * E).buffer]) }, false],
  outDetachedByGetter: (o, { B, L, E }) => {
    const out = new Float32Array(B * L * E);
    const spoiler = { ...o, out };
    return [Object.defineProperty(spoiler, 'needWeights', { get() { structuredClone(out.buffer, { transfer: [out.buffer] }); return o.needWeights; } }), false];
  },
};

// The modules' score options, biases, sinks, qk-norm and scaled RoPE (issue 20): the spoiled calls
// must behave the same under each.
// A table of 4 positions: calls of more rows are refused.
const MODULE_OPTIONS = (E) => [{}, { bias: { q: true, k: true, v: true } }, { bias: { k: true }, scale: 0.3, softcap: 2 }, { bias: false, softcap: 0.5, sinks: true },
  { qkNorm: {}, rotary: { scaling: { type: 'llama3', factor: 8, originalMaxPositions: 4 } } },
  { bias: { q: true, out: true }, sinks: true, qkNorm: { eps: 1e-3 }, rotary: { interleaved: true, scaling: { type: 'linear', factor: 3 } } },
  { softcap: 3, rotary: { table: rotaryTable(4, E / 2) } }];

const modules = new Map();
/** A module of random weights: { mha, E, options, sd (its torch-layout state dict) }. */
async function moduleOf(E) {
  const variant = int(MODULE_OPTIONS(E).length);
  const key = `${E} ${variant}`;
  if (!modules.has(key)) {
    const options = MODULE_OPTIONS(E)[variant];
    const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2, ...options });
    const sd = Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, tensor(...shape)]));
    mha.loadStateDict(sd);
    modules.set(key, { mha, E, options, sd });
  }
  return modules.get(key);
}

const spoilTensor = (t) => SPOIL_TENSOR[pick(Object.keys(SPOIL_TENSOR))](t);
const spoilTensorBadly = (t) => { for (;;) { const [spoiled, same] = spoilTensor(t); if (!same) return spoiled; } };
const TOOLS = { random, int, pick, tensor, spoilTensor, spoilTensorBadly };

/** The plain call's output, or null where it is refused (a call past a rotary table's rows). */
async function plainOutput(call) {
  try {
    return (await call()).output.data;
  } catch (e) {
    if (e instanceof WebAttentionError) return null;
    throw e;
  }
}

/** One random call: { name, run: () => the spoiled call's promise, expected: output data or null }. */
async function randomCall() {
  const [B, L, S, E] = [1 + int(2), 1 + int(5), 1 + int(5), pick([4, 8, 12])];
  if (random() < 0.05) return saveLoadCall(api, TOOLS);
  if (random() < 0.3) {  // SDPA on [B, L, E]
    const [q, k, v] = [tensor(B, L, E), tensor(B, S, E), tensor(B, S, E)];
    const expected = (await scaledDotProductAttention(q, k, v)).output.data;
    if (random() < 0.1) return extremeScaleCall(scaledDotProductAttention, [q, k, v], TOOLS);
    if (random() < 0.2) return spoiledAfterCheckCall('sdpa', (args) => scaledDotProductAttention(...args), [q, k, v], expected, TOOLS);
    const name = pick(Object.keys(SPOIL_TENSOR));
    const [spoiled, same] = SPOIL_TENSOR[name](q);
    return { name: `sdpa ${name}`, run: () => scaledDotProductAttention(spoiled, k, v), expected: same ? expected : null };
  }
  const module = await moduleOf(E);
  const { mha } = module;
  if (random() < 0.1) return hostileCreateCall(MultiHeadAttention, E, module.options, TOOLS);
  const [q, k, v] = [tensor(B, L, E), tensor(B, S, E), tensor(B, S, E)];
  const options = { needWeights: random() < 0.5, isCausal: L === S && random() < 0.5 };
  const expected = await plainOutput(() => mha.forward(q, k, v, options));
  if (random() < 0.15) return layoutLoadCall(MultiHeadAttention, module, [q, k, v, options], expected, TOOLS);
  if (random() < 0.1) return stateDictCall(MultiHeadAttention, module, [q, k, v, options], expected, TOOLS);
  if (random() < 0.15 && expected) return spoiledAfterCheckCall('forward', (args) => mha.forward(...args, options), [q, k, v], expected, TOOLS);
  if (random() < 0.25) {
    const name = pick(Object.keys(SPOIL_OPTIONS));
    const [spoiled, same] = SPOIL_OPTIONS[name](options, { B, L, S, E, rotary: Boolean(mha.config.rotary), table: Boolean(module.options.rotary?.table) });
    return { name: `options ${name}`, run: () => mha.forward(q, k, v, spoiled), expected: same ? expected : null };
  }
  const name = pick(Object.keys(SPOIL_TENSOR));
  const which = int(3);
  const [spoiled, same] = SPOIL_TENSOR[name]([q, k, v][which]);
  const args = [q, k, v];
  args[which] = spoiled;
  return { name: `forward ${['query', 'key', 'value'][which]} ${name}`, run: () => mha.forward(...args, options), expected: same ? expected : null };
}

const canary = { data: new Float32Array([1, 0, 0, 1]), shape: [2, 2] };
const canaryAnswer = (await scaledDotProductAttention(canary, canary, canary)).output.data;
const findings = [];
const counts = new Map();
const deadline = performance.now() + Number(values.seconds) * 1000;
let calls = 0;
while (performance.now() < deadline && findings.length < 20) {
  const call = await randomCall();
  const before = await wasmMemoryInUse();
  let outcome;
  try {
    const { output } = await call.run();
    outcome = call.expected && output.data.length === call.expected.length && output.data.every((x, i) => Object.is(x, call.expected[i]))
      ? 'same result' : 'WRONG RESULT';
  } catch (e) {
    outcome = e === THROWN ? 'getter error passed through' : e instanceof WebAttentionError ? e.name : `UNTYPED ${e?.name}: ${e?.message}`;
  }
  if ((await wasmMemoryInUse()) !== before) outcome += ' + MEMORY CHANGED';
  const after = (await scaledDotProductAttention(canary, canary, canary)).output.data;
  if (!after.every((x, i) => Object.is(x, canaryAnswer[i]))) outcome += ' + CANARY WRONG';
  const key = `${call.name}: ${outcome}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
  if (/WRONG|UNTYPED|MEMORY|CANARY/.test(outcome)) findings.push(`call ${calls} (seed ${values.seed}): ${key}`);
  calls++;
}
for (const [key, n] of [...counts].sort()) console.log(`${String(n).padStart(7)}  ${key}`);
console.log(`${calls} calls in ${values.seconds} s, seed ${values.seed}: ${findings.length} findings`);
for (const f of findings) console.log(`FINDING ${f}`);
for (const { mha } of modules.values()) mha.dispose();
process.exit(findings.length ? 1 : 0);
