// Argument checks and shape logic shared by every backend: each public call is turned into a
// plain "plan" (sizes, resolved options, checked typed arrays) before any backend sees it.
import { DTypeError, OptionError, ShapeError, StateDictError, describe, formatShape } from './errors.js';
import { isDetached, plainView, typedArrayType } from './typed_arrays.js';
import { checkBoolean, checkOptions, checkSize } from './option_checks.js';
import { checkCacheOption, resolveDecodingConfig } from './decoding.js';

export { checkIndex } from './option_checks.js';

/** Mask kinds as the core numbers them. */
export const MaskKind = Object.freeze({ none: 0, boolean: 1, additive: 2 });

const product = (shape) => shape.reduce((a, b) => a * b, 1);
const isSize = (n) => Number.isInteger(n) && n >= 1;

/**
 * Checks `{ data, shape }`: data of one of `dtypes` (element types, read from the array itself:
 * typed_arrays.js), shape an array of positive integers whose product is its length, rank one of
 * `ranks`. Returns { data, shape } with data a plain view of this realm on the caller's memory;
 * `views` (original → view) makes the same array passed twice one view, so that aliasing
 * (query === key === value) survives.
 */
export function checkTensor(argument, tensor, { dtypes = ['Float32Array'], ranks, views = new Map() } = {}) {
  if (tensor === null || typeof tensor !== 'object' || !('data' in tensor) || !('shape' in tensor)) {
    throw new DTypeError(
      `${argument}: expected a tensor { data: ${dtypes.join(' | ')}, shape: number[] }, got ${describe(tensor)}`,
      { argument, expected: 'tensor', actual: describe(tensor) });
  }
  const { data: given, shape } = tensor;
  if (!dtypes.includes(typedArrayType(given))) {
    throw new DTypeError(`${argument}.data: expected ${dtypes.join(' or ')}, got ${describe(given)}`, {
      argument, expected: dtypes, actual: describe(given),
    });
  }
  if (!Array.isArray(shape) || !shape.every(isSize)) {
    throw new ShapeError(`${argument}.shape: expected an array of integers >= 1, got ${describe(shape)}${Array.isArray(shape) ? ' ' + formatShape(shape) : ''}`, {
      argument, expected: 'integer[]', actual: shape,
    });
  }
  if (ranks && !ranks.includes(shape.length)) {
    throw new ShapeError(
      `${argument}: expected ${ranks.map((r) => `${r}-D`).join(' or ')} shape, got ${formatShape(shape)}`,
      { argument, expected: ranks.map((r) => `${r}-D`), actual: shape });
  }
  if (isDetached(given)) {
    throw new ShapeError(`${argument}: shape ${formatShape(shape)} needs ${product(shape)} values, data has none `
      + '(its ArrayBuffer is detached, e.g. transferred to a worker, or empty)', {
      argument, expected: product(shape), actual: 'detached',
    });
  }
  if (!views.has(given)) views.set(given, plainView(given));
  const data = views.get(given);
  if (product(shape) !== data.length) {
    throw new ShapeError(
      `${argument}: shape ${formatShape(shape)} needs ${product(shape)} values, data has ${data.length}`,
      { argument, expected: product(shape), actual: data.length });
  }
  return { data, shape: [...shape] };
}

function shapeError(argument, expected, actual) {
  throw new ShapeError(`${argument}: expected shape ${expected}, got ${formatShape(actual)}`, {
    argument, expected, actual,
  });
}

/** A boolean (Uint8Array) or additive (Float32Array) mask, or none. */
function checkMask(argument, mask, views) {
  if (mask === undefined || mask === null) return { kind: MaskKind.none, data: null, shape: [] };
  const t = checkTensor(argument, mask, { dtypes: ['Uint8Array', 'Float32Array'], views });
  const kind = typedArrayType(t.data) === 'Uint8Array' ? MaskKind.boolean : MaskKind.additive;
  return { kind, ...t };
}

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

/** Floats of a module's weights and biases (bias or not: the core's buffers exist either way). */
function parameterFloats({ embedDim: E, numHeads: H, numKvHeads: G, kdim, vdim, headDim: dk, valueHeadDim: dv }) {
  return H * dk * E + G * dk * kdim + G * dv * vdim + H * dv * E + (H + G) * dk + G * dv + E;
}

/** A state dict (an object or a Map of tensors) as a Map. */
export function stateDictEntries(stateDict) {
  if (stateDict === null || typeof stateDict !== 'object' || ArrayBuffer.isView(stateDict)) {
    throw new StateDictError(`stateDict: expected an object or Map of tensors, got ${describe(stateDict)}`, {
      argument: 'stateDict', expected: 'object', actual: describe(stateDict),
    });
  }
  return stateDict instanceof Map ? stateDict : new Map(Object.entries(stateDict));
}

/**
 * Checks a state dict against the module's expected entries ([{ name, shape }]) and returns
 * [{ name, data: Float32Array }] in that order. Nothing is loaded unless every entry is right.
 */
export function resolveStateDict(specs, stateDict) {
  const entries = stateDictEntries(stateDict);
  const expectedNames = specs.map((s) => s.name);
  for (const name of entries.keys()) {
    if (!expectedNames.includes(name)) {
      throw new StateDictError(
        `stateDict: unexpected key '${name}'; expected keys: ${expectedNames.join(', ')}`,
        { argument: name, expected: expectedNames, actual: name });
    }
  }
  return specs.map(({ name, shape }) => {
    if (!entries.has(name)) {
      throw new StateDictError(`stateDict: missing key '${name}' (expected shape ${formatShape(shape)})`, {
        argument: name, expected: shape, actual: 'missing',
      });
    }
    const value = entries.get(name);
    if (typedArrayType(value) === 'Float32Array') {
      const data = plainView(value);
      if (data.length !== product(shape)) {
        throw new StateDictError(
          `stateDict['${name}']: expected ${formatShape(shape)} (${product(shape)} values), got Float32Array(${data.length})`,
          { argument: name, expected: shape, actual: data.length });
      }
      return { name, data };
    }
    let t;
    try {
      t = checkTensor(`stateDict['${name}']`, value);
    } catch (e) {
      throw new StateDictError(e.message, { argument: name, expected: shape, actual: e.actual });
    }
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new StateDictError(
        `stateDict['${name}']: expected shape ${formatShape(shape)}, got ${formatShape(t.shape)}`,
        { argument: name, expected: shape, actual: t.shape });
    }
    return { name, data: t.data };
  });
}

const MHA_FORWARD_OPTIONS = ['keyPaddingMask', 'attnMask', 'isCausal', 'needWeights', 'averageAttnWeights', 'cache'];

/** Checks one forward() call against the module's config and returns its plan. */
export function resolveMhaForward(config, query, key, value, options) {
  const o = checkOptions('forward', options, MHA_FORWARD_OPTIONS);
  const views = new Map();
  const q = checkTensor('query', query, { ranks: [2, 3], views });
  const batched = q.shape.length === 3;
  const rank = q.shape.length;
  const k = checkTensor('key', key, { ranks: [rank], views });
  const v = checkTensor('value', value, { ranks: [rank], views });
  const [B, L, E] = batched ? q.shape : [1, ...q.shape];
  const [Bk, S, kdim] = batched ? k.shape : [1, ...k.shape];
  const [Bv, Sv, vdim] = batched ? v.shape : [1, ...v.shape];
  const H = config.numHeads;
  const lead = (n) => (batched ? [n] : []);
  if (E !== config.embedDim) shapeError('query', formatShape([...lead(B), L, config.embedDim]), q.shape);
  if (Bk !== B || kdim !== config.kdim) shapeError('key', formatShape([...lead(B), 'S', config.kdim]), k.shape);
  if (Bv !== B || Sv !== S || vdim !== config.vdim) shapeError('value', formatShape([...lead(B), S, config.vdim]), v.shape);
  // With a cache the keys attended are every cached position after the append (T of them).
  const cache = o.cache === undefined ? null
    : checkCacheOption(o.cache, { B, L, S, hasAttnMask: o.attnMask !== undefined && o.attnMask !== null });
  const T = cache ? cache.lengthAfter : S;

  const keyPaddingMask = checkMask('keyPaddingMask', o.keyPaddingMask, views);
  if (keyPaddingMask.kind !== MaskKind.none) {
    const want = [...lead(B), T];
    if (formatShape(keyPaddingMask.shape) !== formatShape(want)) shapeError('keyPaddingMask', formatShape(want), keyPaddingMask.shape);
    keyPaddingMask.shape = [B, T];
  }
  const attnMask = checkMask('attnMask', o.attnMask, views);
  if (attnMask.kind !== MaskKind.none) {
    const s = formatShape(attnMask.shape);
    const perHead = [B * H, L, S];
    if (s !== formatShape([L, S]) && s !== formatShape(perHead)) {
      shapeError('attnMask', `${formatShape([L, S])} or ${formatShape(perHead)}`, attnMask.shape);
    }
  }
  const needWeights = checkBoolean('needWeights', o.needWeights, false);
  const averageAttnWeights = checkBoolean('averageAttnWeights', o.averageAttnWeights, true);
  return {
    B, L, S, T, batched,
    query: q.data, key: k.data, value: v.data,
    keyPaddingMask, attnMask,
    isCausal: checkBoolean('isCausal', o.isCausal, false),
    needWeights,
    averageAttnWeights,
    cache,
    outputShape: [...lead(B), L, config.embedDim],
    weightsShape: needWeights ? [...lead(B), ...(averageAttnWeights ? [] : [H]), L, T] : null,
  };
}

/**
 * The plan with its own copies of every input array (query, key, value, mask data; an array
 * passed twice is copied once, so aliasing survives), and those copies' buffers (`buffers`, for
 * a transfer list). A call that has to wait before it reads its inputs works on these: an input
 * is read when forward() is called, whatever the caller does with its arrays afterwards.
 */
export function planWithCopies(plan) {
  const copies = new Map();
  const copy = (data) => {
    if (!data) return data;
    if (!copies.has(data)) copies.set(data, data.slice());
    return copies.get(data);
  };
  const mask = (m) => ({ ...m, data: copy(m.data) });
  const copied = {
    ...plan,
    query: copy(plan.query), key: copy(plan.key), value: copy(plan.value),
    keyPaddingMask: mask(plan.keyPaddingMask), attnMask: mask(plan.attnMask),
  };
  return { plan: copied, buffers: [...copies.values()].map((c) => c.buffer) };
}

/**
 * Floats of the attention weights a forward() of `heads` heads returns for one batch entry:
 * 0 without needWeights, L·T averaged, heads·L·T per head (T = S, or the cache's length after
 * the append). Every backend sizes its buffers by it.
 */
export function weightsPerBatch(plan, heads) {
  if (!plan.needWeights) return 0;
  return (plan.averageAttnWeights ? 1 : heads) * plan.L * (plan.T ?? plan.S);
}

/** scaledDotProductAttention(q, k, v, options): [..., L, dk], [..., S, dk], [..., S, dv]. */
export function resolveSdpa(q, k, v, options) {
  const o = checkOptions('scaledDotProductAttention', options, ['attnMask', 'isCausal', 'scale', 'needWeights']);
  const views = new Map();
  const qt = checkTensor('q', q, { views });
  const rank = qt.shape.length;
  if (rank < 2) shapeError('q', '[..., L, dk]', qt.shape);
  const kt = checkTensor('k', k, { ranks: [rank], views });
  const vt = checkTensor('v', v, { ranks: [rank], views });
  const leading = qt.shape.slice(0, -2);
  const [L, dk] = qt.shape.slice(-2);
  const [S, dkk] = kt.shape.slice(-2);
  const [Sv, dv] = vt.shape.slice(-2);
  const lead = formatShape(leading).slice(1, -1);
  const prefix = lead ? `${lead}, ` : '';
  if (formatShape(kt.shape.slice(0, -2)) !== formatShape(leading) || dkk !== dk) shapeError('k', `[${prefix}S, ${dk}]`, kt.shape);
  if (formatShape(vt.shape.slice(0, -2)) !== formatShape(leading) || Sv !== S) shapeError('v', `[${prefix}${S}, dv]`, vt.shape);
  const N = product(leading);
  const attnMask = checkMask('attnMask', o.attnMask, views);
  if (attnMask.kind !== MaskKind.none) {
    const s = formatShape(attnMask.shape);
    if (s !== formatShape([L, S]) && s !== formatShape([...leading, L, S])) {
      shapeError('attnMask', `${formatShape([L, S])} or ${formatShape([...leading, L, S])}`, attnMask.shape);
    }
    attnMask.shape = attnMask.shape.length === 2 ? [L, S] : [N, L, S];
  }
  let scale = 0;
  if (o.scale !== undefined) {
    if (typeof o.scale !== 'number' || !Number.isFinite(o.scale) || o.scale <= 0) {
      throw new OptionError(`scale: expected a finite number > 0, got ${describe(o.scale)}`, {
        argument: 'scale', expected: 'number > 0', actual: o.scale,
      });
    }
    scale = o.scale;
  }
  const needWeights = checkBoolean('needWeights', o.needWeights, false);
  return {
    N, L, S, dk, dv,
    q: qt.data, k: kt.data, v: vt.data,
    attnMask,
    isCausal: checkBoolean('isCausal', o.isCausal, false),
    scale,
    needWeights,
    outputShape: [...leading, L, dv],
    weightsShape: needWeights ? [...leading, L, S] : null,
  };
}

/** selfAttention(x, { returnWeights }): x is [L, C] or [..., L, C]. */
export function resolveSelfAttention(x, options) {
  const o = checkOptions('selfAttention', options, ['returnWeights']);
  const t = checkTensor('x', x);
  if (t.shape.length < 2) shapeError('x', '[L, C] or [..., L, C]', t.shape);
  return { x: t, needWeights: checkBoolean('returnWeights', o.returnWeights, false) };
}
