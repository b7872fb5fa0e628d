// A refused loadStateDict() changes nothing, on any backend (tests/js/failed_load.test.js on the
// WASM modules and the worker pool, tests/webgpu/node_failed_load.test.mjs on WebGPU): every
// refusal happens before the first entry is loaded, so a state dict whose last entry is bad
// leaves the module computing exactly what its earlier weights computed, whatever weightsDtype
// stores them. Each bad state dict changes every entry (so that a half-done load would show) and
// breaks its last one: a non-finite int8 weight (docs/attention-math/storage.md §11), a 16-bit weight of
// the other 16-bit kind, a +Inf sink, a wrong shape.
import { sameBits } from './compare.mjs';
import { filled, seededStateDict } from './random.mjs';

export const WEIGHTS_DTYPES = ['int8', 'float16', 'bfloat16', 'float32'];

// in_proj_weight packed; and GQA's separate q/k/v weights, whose one-K/V-head B = 1 calls have
// nothing to split, so that on a pool they run on the calling thread.
const CONFIGS = [{ embedDim: 8, numHeads: 2, sinks: true }, { embedDim: 8, numHeads: 2, numKvHeads: 1, sinks: true }];
const B = 2, L = 3, E = 8;

const size = (shape) => shape.reduce((a, b) => a * b, 1);
const F16_INF = 0x7c00, BF16_MINUS_INF = 0xff80, F16_ONE = 0x3c00, BF16_ONE = 0x3f80;
const halfTensor = (dtype, shape, bits, at) => {
  const data = new Uint16Array(size(shape)).fill(dtype === 'float16' ? F16_ONE : BF16_ONE);
  data[at] = bits;
  return { data, shape, dtype };
};
const withNaN = (shape, at) => {
  const data = filled(size(shape), 99, 0.5);
  data[at] = NaN;
  return { data, shape };
};

/**
 * The bad last entries: { what, dtypes (the weightsDtypes that refuse it), key (its name in the
 * state dict), value(shape) (its tensor, shape the module's), error (class name), argument, says
 * (in the message) }. prefix: loaded under that prefix.
 */
const BAD = [
  { what: 'a NaN in an int8 weight', dtypes: ['int8'], key: 'out_proj.weight', value: (s) => withNaN(s, 13),
    error: 'StateDictError', argument: 'out_proj.weight', says: 'must be finite, got NaN at [1, 5]' },
  { what: 'a NaN in an int8 weight, under a prefix', dtypes: ['int8'], key: 'out_proj.weight', prefix: 'layers.0.', value: (s) => withNaN(s, 0),
    error: 'StateDictError', argument: 'layers.0.out_proj.weight', says: 'got NaN at [0, 0]' },
  { what: 'a float16 +Inf in an int8 weight', dtypes: ['int8'], key: 'out_proj.weight', value: (s) => halfTensor('float16', s, F16_INF, 63),
    error: 'StateDictError', argument: 'out_proj.weight', says: 'got Infinity at [7, 7]' },
  { what: 'a bfloat16 -Inf in an int8 weight', dtypes: ['int8'], key: 'out_proj.weight', value: (s) => halfTensor('bfloat16', s, BF16_MINUS_INF, 8),
    error: 'StateDictError', argument: 'out_proj.weight', says: 'got -Infinity at [1, 0]' },
  { what: 'a bfloat16 weight for float16 storage', dtypes: ['float16'], key: 'out_proj.weight', value: (s) => halfTensor('bfloat16', s, BF16_ONE, 0),
    error: 'DTypeError', argument: "stateDict['out_proj.weight']", says: 'got bfloat16' },
  { what: 'a float16 weight for bfloat16 storage', dtypes: ['bfloat16'], key: 'out_proj.weight', value: (s) => halfTensor('float16', s, F16_ONE, 0),
    error: 'DTypeError', argument: "stateDict['out_proj.weight']", says: 'got float16' },
  { what: 'a +Inf sink', dtypes: WEIGHTS_DTYPES, key: 'sinks', value: () => ({ data: new Float32Array([0, Infinity]), shape: [2] }),
    error: 'StateDictError', argument: 'sinks', says: 'got Infinity at [1]' },
  { what: 'a weight of the wrong shape', dtypes: WEIGHTS_DTYPES, key: 'out_proj.weight', value: () => ({ data: new Float32Array(E), shape: [1, E] }),
    error: 'StateDictError', argument: 'out_proj.weight', says: 'expected shape [8, 8], got [1, 8]' },
];

/** Seeded entries (seed offset `seed`), the sinks finite. */
function stateDict(mha, seed) {
  return seededStateDict(mha.stateDictShapes, seed);
}

/** Every entry other than the good one's, then `bad.key` (last) replaced by the bad value, under bad.prefix. */
function badStateDict(mha, bad) {
  const sd = stateDict(mha, 50);
  const shape = mha.stateDictShapes.find((s) => s.name === bad.key).shape;
  delete sd[bad.key];
  sd[bad.key] = bad.value(shape);
  return Object.fromEntries(Object.entries(sd).map(([name, t]) => [(bad.prefix ?? '') + name, t]));
}

/**
 * What the module computes from its weights: a B = 2 forward (outputs and per-head weights), a
 * B = 1 forward, and both heads' bilinear forms (which the calling thread's core computes on
 * every backend).
 */
async function observe(mha) {
  const x = { data: filled(B * L * E, 77), shape: [B, L, E] };
  const first = { data: x.data.slice(0, L * E), shape: [1, L, E] };
  const both = await mha.forward(x, x, x, { needWeights: true, averageAttnWeights: false });
  const one = await mha.forward(first, first, first);
  return [both.output.data, both.attnWeights.data, one.output.data, mha.headBilinearForm(0).matrix.data, mha.headBilinearForm(1).matrix.data];
}


/**
 * For each module (packed and GQA) storing `weightsDtype`: loads a good state dict, then each bad
 * one that dtype refuses. Each must throw its typed error naming the key, and leave every
 * observation bit for bit as the good weights gave it. Throws (assert-style) on the first
 * difference; resolves to the number of refusals checked.
 */
export async function assertFailedLoadsChangeNothing(api, weightsDtype, create = {}) {
  let checked = 0;
  for (const config of CONFIGS) {
    const mha = await api.MultiHeadAttention.create({ ...config, weightsDtype, ...create });
    try {
      mha.loadStateDict(stateDict(mha, 10));
      const good = await observe(mha);
      for (const bad of BAD.filter((b) => b.dtypes.includes(weightsDtype))) {
        const label = `${weightsDtype} ${JSON.stringify(config)}: ${bad.what}`;
        let error = null;
        try {
          mha.loadStateDict(badStateDict(mha, bad), bad.prefix ? { prefix: bad.prefix } : undefined);
        } catch (e) {
          error = e;
        }
        if (!(error instanceof api[bad.error]) || error.argument !== bad.argument
          || !error.message.includes(`'${(bad.prefix ?? '') + bad.key}'`) || !error.message.includes(bad.says)) {
          throw new Error(`${label}: expected a ${bad.error} naming ${bad.argument} that says '${bad.says}', got ${error?.name}: ${error?.message}`);
        }
        const after = await observe(mha);
        const changed = after.findIndex((a, i) => !sameBits(a, good[i]));
        if (changed >= 0) throw new Error(`${label}: the refused load changed the module (observation ${changed})`);
        checked += 1;
      }
    } finally {
      mha.dispose();
    }
  }
  return checked;
}
