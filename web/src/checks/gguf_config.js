// MultiHeadAttention.fromGguf()'s mapping: one layer's create() options and checkpoint naming
// from a GgufFile (loadGguf()): the sizes, RoPE and weights dtype its metadata and tensors imply,
// by the architecture's row below. Nothing is guessed: an unknown architecture, a metadata key
// that changes attention which no rule here reads, a tensor that does (rope_freqs), or weights of
// mixed types is an OptionError naming the key or tensors as the file spells them.
import { OptionError, describe } from '../base/errors.js';
import { QUANTISED_SOURCES } from '../storage/quantised_entries.js';
import { typedArrayType } from '../base/typed_arrays.js';
import { checkOptions } from '../base/option_checks.js';

/**
 * The architectures read, with the rotary pairing their stored Q/K rows imply: llama.cpp's
 * converter permutes a llama model's Q and K rows within each head so that its rotary pairs of
 * adjacent dims (2i, 2i + 1) turn what Hugging Face's rotate_half pairs (i, i + d/2) turned:
 * read as stored, they take rotary.interleaved. Qwen 2 and 3 are stored unpermuted and use
 * llama.cpp's NeoX rotary, the pairs (i, i + d/2).
 */
const ARCHITECTURES = {
  llama: { interleaved: true },
  qwen2: { interleaved: false },
  qwen3: { interleaved: false },
};

/** `<arch>.` keys under attention. and rope. that the mapping reads (the rest are refused). */
const READ_KEYS = ['attention.head_count', 'attention.head_count_kv', 'attention.key_length', 'attention.value_length',
  'attention.layer_norm_rms_epsilon', 'attention.causal', 'rope.dimension_count', 'rope.freq_base', 'rope.scaling.type',
  'rope.scaling.factor', 'rope.scaling.original_context_length', 'rope.scaling.finetuned'];

/** The weight tensors' stored types as the weightsDtype that keeps them as they are. */
const WEIGHTS_DTYPE = { float32: 'float32', float16: 'float16', bfloat16: 'bfloat16', ...QUANTISED_SOURCES };

/** What fromGguf() takes beside the file. */
export const FROM_GGUF_OPTIONS = ['layer'];

const refuse = (key, expected, actual, why = '') => new OptionError(`gguf ${key}: expected ${expected}, got ${actual}${why}`,
  { argument: key, expected, actual });

/** The file's value of `key` for `layer` (a per-layer array's element), checked. */
function read(metadata, key, layer, check, fallback) {
  let value = metadata.get(key);
  if (Array.isArray(value)) value = value[layer];
  if (value === undefined) {
    if (fallback !== undefined) return fallback;
    throw refuse(key, check.what, 'nothing (the key is missing)');
  }
  if (typeof value === 'bigint') value = Number(value);
  if (!check.ok(value)) throw refuse(key, check.what, describe(value));
  return value;
}
const count = { what: 'an integer >= 1', ok: (v) => Number.isInteger(v) && v >= 1 };
const positive = { what: 'a number > 0', ok: (v) => typeof v === 'number' && v > 0 && v < Infinity };
const flag = { what: 'a boolean', ok: (v) => typeof v === 'boolean' };

/** The file checked as a GgufFile: its metadata and architecture row. */
function architectureOf(file) {
  if (!(file instanceof Map) || !(file.metadata instanceof Map)) {
    throw new OptionError(`file: expected a GgufFile (loadGguf()'s result), got ${describe(file)}`, { argument: 'file', expected: 'GgufFile', actual: describe(file) });
  }
  const arch = file.metadata.get('general.architecture');
  if (!Object.hasOwn(ARCHITECTURES, arch ?? '')) {
    throw refuse('general.architecture', `one of ${Object.keys(ARCHITECTURES).map((a) => `'${a}'`).join(', ')}`, describe(arch),
      ' (fromGguf knows only these; give create() the options and loadStateDict(file, { layout: \'gguf\', prefix }) yourself)');
  }
  for (const key of file.metadata.keys()) {
    const local = key.startsWith(`${arch}.`) ? key.slice(arch.length + 1) : null;
    if (local && /^(attention|rope)\./.test(local) && !READ_KEYS.includes(local)) {
      throw refuse(key, 'no such key', describe(file.metadata.get(key)), ' (it changes attention, and fromGguf does not read it)');
    }
  }
  if (file.has('rope_freqs.weight')) {
    throw new OptionError("gguf tensor 'rope_freqs.weight': per-frequency RoPE factors are not read by fromGguf (create({ rotary: { table } }) takes the angles)", {
      argument: 'rope_freqs.weight', expected: 'absent', actual: 'present',
    });
  }
  return { arch, row: ARCHITECTURES[arch], metadata: file.metadata };
}

/** rotary.scaling from rope.scaling.type / factor: none, or linear. */
function ropeScaling(metadata, arch) {
  const type = metadata.get(`${arch}.rope.scaling.type`) ?? 'none';
  if (type === 'none') return undefined;
  if (type !== 'linear') throw refuse(`${arch}.rope.scaling.type`, "'none' or 'linear'", describe(type), ' (fromGguf computes only these exactly)');
  return { type: 'linear', factor: read(metadata, `${arch}.rope.scaling.factor`, 0, positive) };
}

/** The layer's weight tensors' weightsDtype: one for all of them, or an OptionError naming two that differ. */
function weightsDtypeOf(file, prefix) {
  const names = ['attn_q', 'attn_k', 'attn_v', 'attn_qkv', 'attn_output'].map((n) => `${prefix}${n}.weight`).filter((n) => file.has(n));
  const dtypeOf = (t) => (typedArrayType(t?.data) === 'Float32Array' ? 'float32' : WEIGHTS_DTYPE[t?.dtype]);
  const dtypes = names.map((n) => dtypeOf(file.get(n)));
  const odd = dtypes.findIndex((d) => d !== dtypes[0]);
  if (dtypes.length === 0 || dtypes[0] === undefined || odd >= 0) {
    const what = dtypes.length === 0 ? 'no attention weights' : `${names[0]} ${dtypes[0] ?? 'an unknown type'}${odd >= 0 ? `, ${names[odd]} ${dtypes[odd]}` : ''}`;
    throw new OptionError(`gguf ${prefix}: expected the attention weights in one stored type, got ${what}; `
      + "pass fromGguf(file, { weightsDtype }) with a file read by loadGguf(bytes, { dequantize: true })", {
      argument: 'weightsDtype', expected: 'one stored type', actual: what,
    });
  }
  return dtypes[0];
}

/**
 * Layer `options.layer` of `file`: { modelType, layer, options (create()'s), causal, load: {
 * layout: 'gguf', prefix: 'blk.N.' } }. options.weightsDtype (given beside) replaces the one the
 * tensors imply.
 */
export function attentionOptionsFromGguf(file, options, weightsDtype) {
  const { layer } = checkOptions('fromGguf', options, FROM_GGUF_OPTIONS);
  const { arch, row, metadata } = architectureOf(file);
  const k = (name) => `${arch}.${name}`;
  const layers = read(metadata, k('block_count'), 0, count);
  if (!Number.isInteger(layer) || layer < 0 || layer >= layers) {
    throw new OptionError(`layer: expected an integer in [0, ${layers}) (gguf ${k('block_count')}), got ${describe(layer)}`, {
      argument: 'layer', expected: `[0, ${layers})`, actual: describe(layer),
    });
  }
  const prefix = `blk.${layer}.`;
  const embedDim = read(metadata, k('embedding_length'), layer, count);
  const numHeads = read(metadata, k('attention.head_count'), layer, count);
  const headDim = read(metadata, k('attention.key_length'), layer, count, embedDim / numHeads);
  const created = {
    embedDim, numHeads,
    numKvHeads: read(metadata, k('attention.head_count_kv'), layer, count, numHeads),
    headDim, valueHeadDim: read(metadata, k('attention.value_length'), layer, count, headDim),
    bias: Object.fromEntries([['q', 'attn_q'], ['k', 'attn_k'], ['v', 'attn_v'], ['out', 'attn_output']]
      .map(([flagName, name]) => [flagName, file.has(`${prefix}${name}.bias`)])),
    rotary: {
      base: read(metadata, k('rope.freq_base'), layer, positive, 10000),
      dim: read(metadata, k('rope.dimension_count'), layer, count, headDim),
      interleaved: row.interleaved,
      ...(ropeScaling(metadata, arch) ? { scaling: ropeScaling(metadata, arch) } : {}),
    },
    weightsDtype: weightsDtype ?? weightsDtypeOf(file, prefix),
  };
  if (file.has(`${prefix}attn_q_norm.weight`)) created.qkNorm = { eps: read(metadata, k('attention.layer_norm_rms_epsilon'), layer, positive) };
  if (file.has(`${prefix}attn_sinks.weight`)) created.sinks = true;
  return {
    modelType: arch, layer, options: created,
    causal: read(metadata, k('attention.causal'), layer, flag, true),
    load: { layout: 'gguf', prefix },
  };
}
