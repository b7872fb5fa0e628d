// A module's configuration: MultiHeadAttention.create()'s options checked and resolved (sizes,
// grouped-query and rotary options, threads, backend options), the limits they are checked
// against (threads, the WASM heap), and the config as the core's MhaConfig receives it.
import { ACTIVATIONS_DTYPES, INTEGER_WEIGHTS_DTYPES, WEIGHTS_DTYPES } from '../storage/storage_types.js';
import { OptionError, describe } from '../base/errors.js';
import { checkBoolean, checkChoice, checkOptions, checkPositive, checkSize } from '../base/option_checks.js';
import { parameterFloats } from '../storage/parameter_layout.js';
import { WASM_MAX_BYTES } from '../wasm/core_binding.js';
import { resolveRotary, rotaryCore } from './rotary_options.js';
import { GPU_PRECISIONS } from '../webgpu/selection/kernel_config.js';

/**
 * The fields of a module's config, the one list of them: each is a create() option resolved by
 * `resolve(options, fieldsBefore)` in this order (a default may read the fields before it) and
 * given to the core's MhaConfig (cpp/bindings/embind.cpp, its value_object) as `core(value)`
 * says, or under its own name. index.d.ts's MultiHeadAttentionOptions and
 * ResolvedMultiHeadAttentionConfig name the same fields (tests/js/module_config.test.js).
 */
const CONFIG_FIELDS = [
  { name: 'embedDim', resolve: (o) => checkSize('embedDim', o.embedDim) },
  { name: 'numHeads', resolve: resolveNumHeads },
  { name: 'kdim', resolve: (o, c) => checkSize('kdim', o.kdim, c.embedDim) },
  { name: 'vdim', resolve: (o, c) => checkSize('vdim', o.vdim, c.embedDim) },
  { name: 'headDim', resolve: (o, c) => checkSize('headDim', o.headDim, c.embedDim / c.numHeads) },
  { name: 'valueHeadDim', resolve: (o, c) => checkSize('valueHeadDim', o.valueHeadDim, c.embedDim / c.numHeads) },
  { name: 'bias', resolve: resolveBias },
  { name: 'numKvHeads', resolve: resolveNumKvHeads },
  {
    name: 'rotary',
    resolve: resolveRotary,
    // 0 rotaryDim: no rotary.
    core: rotaryCore,
  },
  { name: 'scale', resolve: (o, c) => (o.scale === undefined ? 1 / Math.sqrt(c.headDim) : checkPositive('scale', o.scale)) },
  { name: 'sinks', resolve: (o) => checkBoolean('sinks', o.sinks, false) },
  { name: 'qkNorm', resolve: resolveQkNorm, core: (q) => ({ qkNorm: q !== null, qkNormEps: q?.eps ?? 1e-6 }) },
  // null: no softcap (the core's 0).
  { name: 'softcap', resolve: (o) => (o.softcap === undefined ? null : checkPositive('softcap', o.softcap)), core: (s) => ({ softcap: s ?? 0 }) },
  // How the weight matrices are stored (biases are always float32): docs/attention-math.md.
  { name: 'weightsDtype', resolve: (o) => checkChoice('weightsDtype', o.weightsDtype, WEIGHTS_DTYPES, 'float32') },
  // The projections' inputs: float32 (exact on the stored weights) or int8 (quantised per block of
  // 32, multiplied in integers; int8 and int4 weights only): docs/attention-math.md.
  { name: 'activations', resolve: resolveActivations },
];

/** create()'s options that choose where the module runs rather than what it computes. */
export const PLACEMENT_OPTIONS = ['threads', 'backend', 'gpu', 'webgpuMinFlops', 'expect', 'hostWeights', 'gpuPrecision'];

/** Every option MultiHeadAttention.create() takes. */
export const CREATE_OPTIONS = [...CONFIG_FIELDS.map((f) => f.name), ...PLACEMENT_OPTIONS];

/** Most threads (workers + the calling thread) one module may use. */
export const MAX_THREADS = 64;

/**
 * The `threads` option: 'auto' (autoCount, chosen per call) or an integer in [1, MAX_THREADS]
 * (always that many). Returns { threads, auto }.
 */
export function resolveThreads(argument, value, autoCount) {
  if (value === 'auto') return { threads: autoCount, auto: true };
  if (!Number.isInteger(value) || value < 1 || value > MAX_THREADS) {
    throw new OptionError(`${argument}: expected 'auto' or an integer in [1, ${MAX_THREADS}], got ${describe(value)}`, {
      argument, expected: `'auto' or [1, ${MAX_THREADS}]`, actual: describe(value),
    });
  }
  return { threads: value, auto: false };
}

/** MultiHeadAttention.create() options, with defaults resolved as PyTorch does (threads aside). */
export function resolveMhaConfig(options) {
  if (options === undefined) {
    throw new OptionError('MultiHeadAttention.create: expected options { embedDim, numHeads, ... }, got undefined', {
      argument: 'options', expected: 'object', actual: 'undefined',
    });
  }
  const o = checkOptions('MultiHeadAttention.create', options, CREATE_OPTIONS);
  const config = {};
  for (const { name, resolve } of CONFIG_FIELDS) config[name] = resolve(o, config);
  const { embedDim, numHeads } = config;
  // Sizes are exact here (JS numbers up to 2^53); the core's are 32-bit. A module whose weights
  // cannot fit a WASM heap is refused before any size reaches it.
  const bytes = parameterFloats(config) * 4;
  if (bytes >= WASM_MAX_BYTES) {
    const { kdim, vdim, headDim, valueHeadDim } = config;
    throw new OptionError(`MultiHeadAttention.create: embedDim ${embedDim}, numHeads ${numHeads}, kdim ${kdim}, vdim ${vdim}, `
      + `headDim ${headDim}, valueHeadDim ${valueHeadDim}: the weights need ${bytes} bytes, more than a WASM heap holds (${WASM_MAX_BYTES})`, {
      argument: 'embedDim', expected: `weights under ${WASM_MAX_BYTES} bytes`, actual: bytes,
    });
  }
  return config;
}

/** The config as the core's MhaConfig takes it (WasmExecutor configures the core with it). */
export function coreConfig(config) {
  return Object.assign({}, ...CONFIG_FIELDS.map(({ name, core }) => (core ? core(config[name]) : { [name]: config[name] })));
}

/** The projections that have a bias: { q, k, v, out }, each a boolean. */
export const BIAS_FLAGS = ['q', 'k', 'v', 'out'];

// bias: true (default) or false for all four projections, or { q, k, v, out } for each (an
// omitted one has none: { q: true, k: true, v: true } is Qwen2's).
function resolveBias(options) {
  const { bias } = options;
  if (bias === undefined || typeof bias === 'boolean') {
    const all = bias ?? true;
    return Object.fromEntries(BIAS_FLAGS.map((f) => [f, all]));
  }
  if (bias === null || typeof bias !== 'object') {
    throw new OptionError(`bias: expected a boolean or { q, k, v, out } of booleans, got ${describe(bias)}`, {
      argument: 'bias', expected: 'boolean or { q, k, v, out }', actual: describe(bias),
    });
  }
  const flags = checkOptions('bias', bias, BIAS_FLAGS);
  return Object.fromEntries(BIAS_FLAGS.map((f) => [f, checkBoolean(`bias.${f}`, flags[f], false)]));
}

// numHeads; embedDim must be a multiple of it unless both head widths are given.
function resolveNumHeads(options, { embedDim }) {
  const numHeads = checkSize('numHeads', options.numHeads);
  const freeDims = options.headDim !== undefined && options.valueHeadDim !== undefined;
  if (!freeDims && embedDim % numHeads !== 0) {
    throw new OptionError(
      `embedDim: expected a multiple of numHeads (${numHeads}), got ${embedDim} (or give headDim and valueHeadDim)`,
      { argument: 'embedDim', expected: `multiple of ${numHeads}`, actual: embedDim });
  }
  return numHeads;
}

// numKvHeads: a divisor of numHeads, default numHeads (grouped-query attention).
function resolveNumKvHeads(options, { numHeads }) {
  const numKvHeads = checkSize('numKvHeads', options.numKvHeads, numHeads);
  if (numHeads % numKvHeads !== 0) {
    throw new OptionError(`numKvHeads: expected a divisor of numHeads (${numHeads}), got ${numKvHeads}`, {
      argument: 'numKvHeads', expected: `divisor of ${numHeads}`, actual: numKvHeads,
    });
  }
  return numKvHeads;
}

// activations: 'float32' (default) or 'int8', which needs weights stored as integer codes (int8,
// int4): float weights have none to multiply, and a silent float32 fallback would hide the choice.
function resolveActivations(options, { weightsDtype }) {
  const activations = checkChoice('activations', options.activations, ACTIVATIONS_DTYPES, 'float32');
  if (activations === 'int8' && !INTEGER_WEIGHTS_DTYPES.includes(weightsDtype)) {
    throw new OptionError(`activations: 'int8' needs weightsDtype ${INTEGER_WEIGHTS_DTYPES.map((d) => `'${d}'`).join(' or ')}, `
      + `got weightsDtype '${weightsDtype}'`, {
      argument: 'activations', expected: `weightsDtype ${INTEGER_WEIGHTS_DTYPES.join(' | ')}`, actual: weightsDtype,
    });
  }
  return activations;
}

// qkNorm: null (not given) or { eps = 1e-6 }: an RMSNorm of every q and k head before RoPE.
function resolveQkNorm(options) {
  if (options.qkNorm === undefined) return null;
  if (options.qkNorm === null) {
    throw new OptionError('qkNorm: expected an options object { eps? }, got null', { argument: 'qkNorm', expected: 'object', actual: 'null' });
  }
  const q = checkOptions('qkNorm', options.qkNorm, ['eps']);
  return { eps: q.eps === undefined ? 1e-6 : checkPositive('qkNorm.eps', q.eps) };
}

const BACKENDS = ['auto', 'wasm', 'webgpu'];

/**
 * Checks the backend options; returns { backend, gpu, minFlops (undefined: not given), expect
 * (resolveExpect()'s), hostWeights (resolveHostWeights()'s), gpuPrecision (resolveGpuPrecision()'s) }.
 */
export function resolveBackendOptions(options) {
  const backend = options.backend ?? 'auto';
  if (!BACKENDS.includes(backend)) {
    throw new OptionError(`backend: expected one of ${BACKENDS.map((b) => `'${b}'`).join(', ')}, got ${describe(backend)}`, {
      argument: 'backend', expected: BACKENDS, actual: describe(backend),
    });
  }
  const minFlops = options.webgpuMinFlops;
  if (minFlops !== undefined && !(typeof minFlops === 'number' && minFlops >= 0)) {
    throw new OptionError(`webgpuMinFlops: expected a number >= 0, got ${describe(minFlops)}`, {
      argument: 'webgpuMinFlops', expected: 'number >= 0', actual: describe(minFlops),
    });
  }
  return {
    backend, gpu: options.gpu, minFlops, expect: resolveExpect(options.expect, backend),
    hostWeights: resolveHostWeights(options, backend),
    gpuPrecision: resolveGpuPrecision(options, backend),
  };
}

/**
 * create()'s `gpuPrecision` (default 'float32'): 'float16' lets the GPU's projections run
 * float16-arithmetic kernels where the device has 'shader-f16' (docs/webgpu/kernels.md). Only for
 * a module that may run on the GPU: backend 'webgpu' or 'auto'.
 */
function resolveGpuPrecision(options, backend) {
  const precision = checkChoice('gpuPrecision', options.gpuPrecision, GPU_PRECISIONS, 'float32');
  if (precision !== 'float32' && backend === 'wasm') {
    throw new OptionError(`gpuPrecision: '${precision}' applies to the WebGPU backend, got backend 'wasm'`, {
      argument: 'gpuPrecision', expected: "backend 'webgpu' or 'auto'", actual: "backend 'wasm'",
    });
  }
  return precision;
}

/**
 * create()'s `hostWeights` (default true): false keeps the weights on the GPU only, the WASM copy
 * freed after each load (dispatch.js), so a module on the GPU takes no host memory for them. Only
 * with backend 'webgpu' (the module never computes on WASM) and one thread (a pool would hold
 * them again, for nothing).
 */
function resolveHostWeights(options, backend) {
  const hostWeights = checkBoolean('hostWeights', options.hostWeights, true);
  if (hostWeights) return true;
  if (backend !== 'webgpu') {
    throw new OptionError(`hostWeights: false keeps the weights on the GPU only, so it takes backend 'webgpu', got backend '${backend}'`, {
      argument: 'hostWeights', expected: "backend 'webgpu'", actual: `backend '${backend}'`,
    });
  }
  if (options.threads !== undefined && options.threads !== 1) {
    throw new OptionError(`threads: a module with hostWeights: false computes on the GPU only, so it takes no threads, got ${describe(options.threads)}`, {
      argument: 'threads', expected: 'undefined or 1', actual: describe(options.threads),
    });
  }
  return false;
}

/**
 * create()'s `expect`: { L, S? = L, batchSize? = 1 }, the shapes of the calls to come, whose GPU
 * buffers and pipelines create() makes (webgpu/webgpu_executor.js reserve()), or null. Only for a
 * module that may run on the GPU: backend 'webgpu' or 'auto'.
 */
function resolveExpect(value, backend) {
  if (value === undefined) return null;
  if (backend === 'wasm') {
    throw new OptionError("expect: makes the GPU's buffers at create(), so it takes backend 'webgpu' or 'auto', got backend 'wasm'", {
      argument: 'expect', expected: "backend 'webgpu' | 'auto'", actual: "backend 'wasm'",
    });
  }
  // An object of the sizes: null or a Map is no such object (checkOptions() takes null for none).
  const o = value === null ? null : checkOptions('expect', value, ['L', 'S', 'batchSize']);
  if (o === null || value instanceof Map) {
    throw new OptionError(`expect: expected { L, S?, batchSize? }, got ${describe(value)}`, { argument: 'expect', expected: 'object', actual: describe(value) });
  }
  const L = checkSize('expect.L', o.L);
  return { L, S: checkSize('expect.S', o.S, L), batchSize: checkSize('expect.batchSize', o.batchSize, 1) };
}

