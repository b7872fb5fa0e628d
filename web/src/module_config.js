// A module's configuration: MultiHeadAttention.create()'s options checked and resolved (sizes,
// grouped-query and rotary options, threads, backend options), the limits they are checked
// against (threads, the WASM heap), and the config as the core's MhaConfig receives it.
import { OptionError, describe } from './errors.js';
import { checkBoolean, checkOptions, checkSize } from './option_checks.js';
import { parameterFloats } from './parameter_layout.js';

const MHA_CREATE_OPTIONS = ['embedDim', 'numHeads', 'numKvHeads', 'rotary', 'kdim', 'vdim', 'bias', 'headDim', 'valueHeadDim', 'threads',
  'backend', 'gpu', 'webgpuMinFlops'];

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
  const o = checkOptions('MultiHeadAttention.create', options, MHA_CREATE_OPTIONS);
  const embedDim = checkSize('embedDim', o.embedDim);
  const numHeads = checkSize('numHeads', o.numHeads);
  const freeDims = o.headDim !== undefined && o.valueHeadDim !== undefined;
  if (!freeDims && embedDim % numHeads !== 0) {
    throw new OptionError(
      `embedDim: expected a multiple of numHeads (${numHeads}), got ${embedDim} (or give headDim and valueHeadDim)`,
      { argument: 'embedDim', expected: `multiple of ${numHeads}`, actual: embedDim });
  }
  const config = {
    embedDim,
    numHeads,
    kdim: checkSize('kdim', o.kdim, embedDim),
    vdim: checkSize('vdim', o.vdim, embedDim),
    headDim: checkSize('headDim', o.headDim, embedDim / numHeads),
    valueHeadDim: checkSize('valueHeadDim', o.valueHeadDim, embedDim / numHeads),
    bias: checkBoolean('bias', o.bias, true),
  };
  Object.assign(config, resolveDecodingConfig(o, config));
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

/**
 * The most bytes a WASM heap holds: the modules are wasm32 with MAXIMUM_MEMORY=4GB
 * (CMakeLists.txt). Every request is checked against it in exact JS arithmetic before it reaches
 * the core, whose sizes would wrap at 2^32.
 */
export const WASM_MAX_BYTES = 2 ** 32;

/**
 * numKvHeads (a divisor of numHeads, default numHeads) and rotary (undefined, or { base = 10000,
 * interleaved = false, dim = headDim }, dim even and <= headDim) of create()'s options.
 */
function resolveDecodingConfig(options, { numHeads, headDim }) {
  const numKvHeads = checkSize('numKvHeads', options.numKvHeads, numHeads);
  if (numHeads % numKvHeads !== 0) {
    throw new OptionError(`numKvHeads: expected a divisor of numHeads (${numHeads}), got ${numKvHeads}`, {
      argument: 'numKvHeads', expected: `divisor of ${numHeads}`, actual: numKvHeads,
    });
  }
  if (options.rotary === undefined) return { numKvHeads, rotary: null };
  const r = checkOptions('rotary', options.rotary, ['base', 'interleaved', 'dim']);
  if (options.rotary === null) {
    throw new OptionError('rotary: expected an options object { base?, interleaved?, dim? }, got null', {
      argument: 'rotary', expected: 'object', actual: 'null',
    });
  }
  const dim = checkSize('rotary.dim', r.dim, headDim);
  if (dim % 2 !== 0 || dim > headDim) {
    throw new OptionError(`rotary.dim: expected an even integer <= headDim (${headDim}), got ${dim}`, {
      argument: 'rotary.dim', expected: `even, <= ${headDim}`, actual: dim,
    });
  }
  const base = r.base ?? 10000;
  if (typeof base !== 'number' || !Number.isFinite(base) || base <= 0) {
    throw new OptionError(`rotary.base: expected a finite number > 0, got ${describe(base)}`, {
      argument: 'rotary.base', expected: 'number > 0', actual: describe(base),
    });
  }
  return { numKvHeads, rotary: { base, interleaved: checkBoolean('rotary.interleaved', r.interleaved, false), dim } };
}

/** The core's MhaConfig fields for them (embind.cpp): 0 rotaryDim for no rotary. */
export function coreDecodingFields({ numKvHeads, rotary }) {
  return {
    numKvHeads,
    rotaryDim: rotary?.dim ?? 0,
    rotaryBase: rotary?.base ?? 10000,
    rotaryInterleaved: rotary?.interleaved ?? false,
  };
}

const BACKENDS = ['auto', 'wasm', 'webgpu'];

/** Checks the backend options; returns { backend, gpu, minFlops (undefined: not given) }. */
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
  return { backend, gpu: options.gpu, minFlops };
}

