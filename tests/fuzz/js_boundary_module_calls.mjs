// Issue 20's calls for the JS boundary fuzzer (js_boundary_fuzz.mjs): create() with one hostile
// score, qk-norm, rotary (scaling or table) or bias option among valid ones, which must be refused
// with a typed error; and loadStateDict() of a module's own weights renamed into a checkpoint
// layout ('hf', 'gpt2', 'bert': Hugging Face's names, GPT-2's transposed Conv1D, BERT's), spoiled
// or not. A load that still means the same weights must give exactly the output of the module
// loaded in the torch layout; any other must be refused with a typed error.

import { EXTREME_SCALARS } from './js_boundary_read_once.mjs';

/** A table of `rows` positions for heads of width headDim (its cos and sin [rows, headDim / 2]). */
export const rotaryTable = (rows, headDim) => {
  const half = headDim / 2;
  const angle = (n) => Math.floor(n / half) * 0.1 * ((n % half) + 1);
  return { cos: { data: Float32Array.from({ length: rows * half }, (_, n) => Math.cos(angle(n))), shape: [rows, half] },
    sin: { data: Float32Array.from({ length: rows * half }, (_, n) => Math.sin(angle(n))), shape: [rows, half] } };
};

const table = (cosShape, sinShape) => ({ cos: { data: new Float32Array(cosShape[0] * cosShape[1]), shape: cosShape },
  sin: { data: new Float32Array(sinShape[0] * sinShape[1]), shape: sinShape } });

/** Options create() must refuse for a module of 2 heads (head width E / 2 >= 2). */
const hostileOptions = (E, { pick, tensor, spoilTensorBadly }) => {
  const half = E / 4;
  return pick([
    { softcap: pick([0, -1, NaN, Infinity, '2', ...EXTREME_SCALARS]) }, { scale: pick([0, -1, NaN, Infinity, '0.5', ...EXTREME_SCALARS]) },
    { sinks: pick(['yes', 1, {}]) }, { qkNorm: pick([5, true, { eps: 0 }, { eps: -1 }, { eps: NaN }, { eps: pick(EXTREME_SCALARS) }, { epsilon: 1e-6 }]) },
    { rotary: { base: pick([1, 1 + 1e-9, 1e39]) } },
    { bias: pick([{ q: 'yes' }, { x: true }, 'true', 1]) },
    { rotary: { scaling: pick([{ type: 'cubic', factor: 2 }, { factor: 2 }, 'linear', { type: 'linear', factor: pick([0, -2, NaN, Infinity, ...EXTREME_SCALARS]) },
      { type: 'linear', factor: 2, lowFreqFactor: 1 }, { type: 'llama3', factor: 8, lowFreqFactor: 4, highFreqFactor: 1 },
      { type: 'llama3', factor: 8, originalMaxPositions: pick([0, -1, 0.5, NaN]) }]) } },
    { rotary: { table: pick([table([3, half + 1], [3, half + 1]), table([3, half], [2, half]), table([0, half], [0, half]),
      { cos: table([3, half], [3, half]).cos }, { ...table([3, half], [3, half]), sin: spoilTensorBadly(tensor(3, half)) }]) } },
    { rotary: { base: 100, table: table([3, half], [3, half]) } },
    { rotary: { table: table([3, half], [3, half]), scaling: { type: 'linear', factor: 2 } } },
  ]);
};

/** A create() call with a hostile option among valid ones: must throw a typed error. */
export function hostileCreateCall(MultiHeadAttention, E, validOptions, tools) {
  const hostile = hostileOptions(E, tools);
  return {
    name: `create ${Object.keys(hostile)[0]}`,
    run: async () => {
      const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2, ...validOptions, ...hostile });
      mha.dispose();
      return { output: { data: new Float32Array(0) } };  // accepted: no expected result, a finding
    },
    expected: null,
  };
}

/** Rows [from, from + rows) of a [_, cols] matrix, transposed or not. */
const rowsOf = (data, cols, from, rows) => data.slice(from * cols, (from + rows) * cols);
const transpose = (data, rows, cols) => Float32Array.from({ length: rows * cols }, (_, n) => data[(n % rows) * cols + Math.floor(n / rows)]);

/** The parts of a torch-layout state dict of E-wide self-attention: { 'q.weight', ..., 'sinks', 'q_norm' }. */
function partsOf(sd, E) {
  const parts = {};
  const inW = sd.in_proj_weight.data;
  ['q', 'k', 'v'].forEach((p, i) => {
    parts[`${p}.weight`] = rowsOf(inW, E, i * E, E);
    if (sd.in_proj_bias) parts[`${p}.bias`] = sd.in_proj_bias.data.slice(i * E, (i + 1) * E);
    if (sd[`${p}_proj_bias`]) parts[`${p}.bias`] = sd[`${p}_proj_bias`].data;
  });
  parts['out.weight'] = sd['out_proj.weight'].data;
  if (sd['out_proj.bias']) parts['out.bias'] = sd['out_proj.bias'].data;
  for (const extra of ['sinks', 'q_norm.weight', 'k_norm.weight']) if (sd[extra]) parts[extra] = sd[extra].data;
  return parts;
}

const vector = (data) => ({ data, shape: [data.length] });
const matrix = (data, rows, cols) => ({ data, shape: [rows, cols] });

/** The module's weights in `layout`, or null where the layout cannot name them all. */
function inLayout(parts, E, layout, packed) {
  const has = (p) => parts[p] !== undefined;
  const inputBiases = ['q.bias', 'k.bias', 'v.bias'].filter(has).length;
  const extras = has('sinks') || has('q_norm.weight');
  const sd = {};
  if (layout === 'hf') {
    if (packed && inputBiases % 3 === 0) {
      sd['qkv_proj.weight'] = matrix(Float32Array.of(...parts['q.weight'], ...parts['k.weight'], ...parts['v.weight']), 3 * E, E);
      if (inputBiases) sd['qkv_proj.bias'] = vector(Float32Array.of(...parts['q.bias'], ...parts['k.bias'], ...parts['v.bias']));
    } else {
      for (const p of ['q', 'k', 'v']) {
        sd[`${p}_proj.weight`] = matrix(parts[`${p}.weight`], E, E);
        if (has(`${p}.bias`)) sd[`${p}_proj.bias`] = vector(parts[`${p}.bias`]);
      }
    }
    sd['o_proj.weight'] = matrix(parts['out.weight'], E, E);
    if (has('out.bias')) sd['o_proj.bias'] = vector(parts['out.bias']);
    for (const extra of ['sinks', 'q_norm.weight', 'k_norm.weight']) if (has(extra)) sd[extra] = vector(parts[extra]);
    return sd;
  }
  if (extras) return null;
  if (layout === 'gpt2') {
    if (inputBiases % 3 !== 0) return null;
    const qkv = Float32Array.of(...parts['q.weight'], ...parts['k.weight'], ...parts['v.weight']);
    sd['c_attn.weight'] = matrix(transpose(qkv, 3 * E, E), E, 3 * E);
    if (inputBiases) sd['c_attn.bias'] = vector(Float32Array.of(...parts['q.bias'], ...parts['k.bias'], ...parts['v.bias']));
    sd['c_proj.weight'] = matrix(transpose(parts['out.weight'], E, E), E, E);
    if (has('out.bias')) sd['c_proj.bias'] = vector(parts['out.bias']);
    return sd;
  }
  const bert = { q: 'self.query', k: 'self.key', v: 'self.value', out: 'output.dense' };
  for (const [p, name] of Object.entries(bert)) {
    sd[`${name}.weight`] = matrix(parts[`${p}.weight`], E, E);
    if (has(`${p}.bias`)) sd[`${name}.bias`] = vector(parts[`${p}.bias`]);
  }
  return sd;
}

/**
 * Spoilers of a layout's state dict and load options: each returns [sd, options, whether it still
 * means the same weights]. The tools (js_boundary_fuzz.mjs): `spoilTensor` spoils a tensor
 * ([tensor, same]), `spoilTensorBadly` so that it means no tensor.
 */
const SPOIL_LOAD = {
  plain: (sd, o) => [sd, o, true],
  prefix: (sd, o) => [Object.fromEntries(Object.entries(sd).map(([k, t]) => [`model.layers.0.self_attn.${k}`, t])),
    { ...o, prefix: 'model.layers.0.self_attn.' }, true],
  entry: (sd, o, { pick, spoilTensor }) => {
    const key = pick(Object.keys(sd));
    const [t, same] = spoilTensor(sd[key]);
    return [{ ...sd, [key]: t }, o, same];
  },
  missing: (sd, o, { pick }) => { const copy = { ...sd }; delete copy[pick(Object.keys(sd))]; return [copy, o, false]; },
  unknownKey: (sd, o) => [{ ...sd, 'rotary_emb.inv_freq': vector(new Float32Array(2)) }, o, false],
  // A key the module (or the layout) lacks; one value, a width no entry has.
  partMissingFromModule: (sd, o, { pick }) => {
    const absent = ['sinks', 'q_norm.weight', 'o_proj.bias', 'c_attn.bias', 'self.key.bias'].filter((k) => !(k in sd));
    return [{ ...sd, [pick(absent)]: vector(new Float32Array(1)) }, o, false];
  },
  otherLayout: (sd, o, { pick }) => [sd, { ...o, layout: pick(['torch', 'hf', 'gpt2', 'bert'].filter((l) => l !== o.layout)) }, false],
  hostileLayout: (sd, o, { pick }) => [sd, { ...o, layout: pick(['HF', 'onnx', 3, {}, ['hf']]) }, false],
  untransposed: (sd, o) => {
    const key = Object.keys(sd).find((k) => sd[k].shape.length === 2 && sd[k].shape[0] !== sd[k].shape[1]);
    return key ? [{ ...sd, [key]: matrix(sd[key].data, sd[key].shape[1], sd[key].shape[0]) }, o, false] : [sd, o, true];
  },
};

/**
 * A loadStateDict() call in a checkpoint layout on a fresh module of `options`, then forward(q, k,
 * v): `expected` (the torch-loaded module's output) where the load still means the same weights.
 */
export function layoutLoadCall(MultiHeadAttention, { E, options, sd: torchSd }, forwardArgs, expected, tools) {
  const { pick, random } = tools;
  const parts = partsOf(torchSd, E);
  const layout = pick(['hf', 'gpt2', 'bert'].filter((l) => inLayout(parts, E, l, false)));
  const name = pick(Object.keys(SPOIL_LOAD));
  const [sd, loadOptions, same] = SPOIL_LOAD[name](inLayout(parts, E, layout, random() < 0.5), { layout }, tools);
  return {
    name: `loadStateDict ${layout} ${name}`,
    run: async () => {
      const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2, ...options });
      try {
        mha.loadStateDict(sd, loadOptions);
        return await mha.forward(...forwardArgs);
      } finally {
        mha.dispose();
      }
    },
    expected: same ? expected : null,
  };
}
