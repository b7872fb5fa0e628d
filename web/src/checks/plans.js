// Each public call checked into a plain "plan" (sizes, resolved options, checked typed arrays)
// before any executor sees it: forward() (resolveMhaForward, with its cache option),
// scaledDotProductAttention() (resolveSdpa) and selfAttention() (resolveSelfAttention).
import { OptionError, ShapeError, describe, formatShape } from '../base/errors.js';
import { BATCH } from '../base/batch_protocol.js';
import { KvCache } from '../dispatch/kv_cache.js';
import { isGpuBatch } from '../dispatch/gpu_batch.js';
import { checkBoolean, checkChoice, checkOptions, checkPositive } from '../base/option_checks.js';
import { isDeviceData, isGpuTensor } from '../base/gpu_tensors.js';
import { lazyModules } from '../base/lazy_modules.js';
import { widenInputs } from './half_tensors.js';
import { checkPositionIds } from './position_ids.js';
import { checkOutTargets } from './out_option.js';
import { checkCallRows, checkRoom, checkRotaryRows } from '../dispatch/cache_checks.js';
import { resolveBackendOptions } from './module_config.js';
import { MaskKind } from '../base/call_plan.js';
import { FLOAT_DATA, checkKeyPaddingMask, checkMask, checkTensor, noMask, product, requireWhole, shapeError, snapshotShape } from '../base/tensor_checks.js';

const MHA_FORWARD_OPTIONS = ['keyPaddingMask', 'attnMask', 'isCausal', 'needWeights', 'averageAttnWeights', 'cache', 'rows', 'positionIds', 'output', 'batch', 'out'];
/** forward()'s `output`: where its result tensors are ('cpu': typed arrays; 'gpu-buffer': GPUBuffers, no readback). */
const OUTPUT_LOCATIONS = ['cpu', 'gpu-buffer'];

/**
 * Checks one forward() call against the module's config and returns its plan. The plan borrows
 * the caller's arrays where typed_arrays.js borrowed() may (`borrowed: true`), looked at again
 * once every getter ran: a call that computes before returning (the calling thread's WASM) reads
 * them then, once; whoever runs it later takes ownedPlan() (base/call_plan.js) first.
 */
export function resolveMhaForward(config, query, key, value, options) {
  const o = checkOptions('forward', options, MHA_FORWARD_OPTIONS);
  const output = checkChoice('output', o.output, OUTPUT_LOCATIONS, 'cpu');
  const batch = checkBatch(o.batch, output);
  // Cross-attention: the encoder's keys and values are in the cache (encode_plans.js).
  const plan = KvCache.isKvCache(o.cache) && o.cache.encoded
    ? lazyModules().resolveEncodedForward(config, query, key, value, o, { output, batch })
    : resolvePlainForward(config, query, key, value, o, { output, batch });
  batch?.[BATCH.admit](plan, 'forward()');  // a GpuStep's rules (dispatch/gpu_step.js)
  return plan;
}

/**
 * A call's input checker: (argument, tensor, ranks) → a host tensor ({ data, shape }, borrowed
 * where `borrow` says: base/tensor_checks.js) or a GPU one ({ gpuBuffer, shape }: base/gpu_tensors.js).
 */
function inputChecker(views, borrow) {
  const buffers = new Map();
  return (argument, tensor, ranks) => (isGpuTensor(tensor)
    ? lazyModules().checkGpuTensor(argument, tensor, { ranks, shapeOf: snapshotShape, buffers })
    : checkTensor(argument, tensor, { dtypes: FLOAT_DATA, ranks, views, borrow }));
}

// resolveMhaForward() of a call without an encode()d cache.
function resolvePlainForward(config, query, key, value, o, { output, batch }) {
  const views = new Map();
  const input = inputChecker(views, true);
  const given = input('query', query, [2, 3]);
  const batched = given.shape.length === 3;
  const rank = given.shape.length;
  // One object passed twice or three times (self-attention, a decode step) is read and checked once.
  const givenKey = key === query ? given : input('key', key, [rank]);
  const givenValue = value === query ? given : value === key ? givenKey : input('value', value, [rank]);
  const { tensors: [q, k, v], dtype } = widenInputs([['query', given], ['key', givenKey], ['value', givenValue]]);
  const [B, L, E] = batched ? q.shape : [1, ...q.shape];
  const [Bk, S, kdim] = batched ? k.shape : [1, ...k.shape];
  const [Bv, Sv, vdim] = batched ? v.shape : [1, ...v.shape];
  const H = config.numHeads;
  const lead = (n) => (batched ? [n] : []);
  if (E !== config.embedDim) shapeError('query', formatShape([...lead(B), L, config.embedDim]), q.shape);
  if (Bk !== B || kdim !== config.kdim) shapeError('key', formatShape([...lead(B), 'S', config.kdim]), k.shape);
  if (Bv !== B || Sv !== S || vdim !== config.vdim) shapeError('value', formatShape([...lead(B), S, config.vdim]), v.shape);
  // With a cache the keys attended are every cached position after the append (T of them).
  if (o.rows !== undefined && o.cache === undefined) {
    throw new OptionError('rows: the rows of a batched cache a call appends to; give a cache with them', {
      argument: 'rows', expected: 'a cache option beside rows', actual: 'no cache',
    });
  }
  const cache = o.cache === undefined ? null : checkCacheOption(o.cache, { B, L, S, isCausal: o.isCausal, rows: o.rows });
  const T = cache ? cache.lengthAfter : S;
  const positionIds = checkPositionIds(o.positionIds, { rotary: config.rotary, B, L, S, batched });
  // A given table's rows: its positions (a GpuStep's replay() checks them again at its lengths).
  const rotaryRows = config.rotary?.table?.positions ?? null;
  if (!positionIds) checkRotaryRows(rotaryRows, cache ? cache.lengthBefore : 0, Math.max(L, S));

  const keyPaddingMask = checkKeyPaddingMask(o.keyPaddingMask, views, { B, T, batched });
  const attnMask = checkMask('attnMask', o.attnMask, views, true);
  if (attnMask.kind !== MaskKind.none) checkAttnMaskShape(attnMask.shape, { B, H, L, S, cached: cache !== null });
  const needWeights = checkBoolean('needWeights', o.needWeights, false);
  const averageAttnWeights = checkBoolean('averageAttnWeights', o.averageAttnWeights, true);
  // Every getter has run: a borrowed view a later one detached is an error, never a short read.
  requireWhole('query', q);
  requireWhole('key', k);
  requireWhole('value', v);
  requireWhole('keyPaddingMask', keyPaddingMask);
  requireWhole('attnMask', attnMask);
  const outputShape = [...lead(B), L, config.embedDim];
  return {
    borrowed: true,
    B, L, S, T, batched,
    dtype,
    query: q.data, key: k.data, value: v.data,
    output,
    batch,
    onDevice: [q, k, v].some((t) => isDeviceData(t.data)),
    keyPaddingMask, attnMask,
    isCausal: checkBoolean('isCausal', o.isCausal, false),
    needWeights,
    averageAttnWeights,
    cache,
    positionIds,
    rotaryRows,
    outputShape,
    weightsShape: needWeights ? [...lead(B), ...(averageAttnWeights ? [] : [H]), L, T] : null,
    ...checkOutTargets(o.out, { shape: outputShape, dtype, output }),  // after the inputs: its length is the output's
  };
}

// forward()'s `batch`: a GpuBatch (dispatch/gpu_batch.js) its work is recorded into, for a call
// whose results stay on the GPU (a readback would need the submit); null when absent.
function checkBatch(batch, output) {
  if (batch === undefined) return null;
  if (!isGpuBatch(batch)) {
    throw new OptionError(`batch: expected a GpuBatch (new GpuBatch()), got ${describe(batch)}`, {
      argument: 'batch', expected: 'GpuBatch', actual: describe(batch),
    });
  }
  if (output !== 'gpu-buffer') {
    throw new OptionError("batch: a batched call's results stay on the GPU until batch.submit(); pass output: 'gpu-buffer'", {
      argument: 'output', expected: "'gpu-buffer'", actual: output,
    });
  }
  return batch;
}

/** scaledDotProductAttention()'s options beside the attention's: where it runs and where its results go. */
const SDPA_BACKEND_OPTIONS = ['backend', 'gpu', 'webgpuMinFlops', 'output', 'batch'];

/**
 * scaledDotProductAttention(q, k, v, options): [..., L, dk], [..., S, dk], [..., S, dv], host or
 * GPU tensors. The plan has a forward() plan's fields for one head (B: the leading dims' product),
 * so that a Dispatcher can route it (api/attention_engines.js), and `backendOptions`
 * (resolveBackendOptions()'s): backend 'wasm' by default, 'webgpu' for a call with GPU tensors or
 * output 'gpu-buffer'. Its host inputs are copies: the call may wait for the core or the GPU.
 */
export function resolveSdpa(q, k, v, options) {
  const o = checkOptions('scaledDotProductAttention', options, ['attnMask', 'isCausal', 'scale', 'needWeights', 'out', ...SDPA_BACKEND_OPTIONS]);
  const views = new Map();
  const input = inputChecker(views, false);
  const given = input('q', q);
  const rank = given.shape.length;
  if (rank < 2) shapeError('q', '[..., L, dk]', given.shape);
  // One object passed twice or three times (self-attention) is read and checked once.
  const givenK = k === q ? given : input('k', k, [rank]);
  const givenV = v === q ? given : v === k ? givenK : input('v', v, [rank]);
  return sdpaPlan([['q', given], ['k', givenK], ['v', givenV]], o, views);
}

// The plan of checked tensors ([argument, tensor] for q, k and v) and checked options `o`.
function sdpaPlan(named, o, views) {
  const { tensors: [qt, kt, vt], dtype } = widenInputs(named);
  const leading = qt.shape.slice(0, -2);
  const [L, dk] = qt.shape.slice(-2);
  const [S, dkk] = kt.shape.slice(-2);
  const [Sv, dv] = vt.shape.slice(-2);
  const lead = formatShape(leading).slice(1, -1);
  const prefix = lead ? `${lead}, ` : '';
  if (formatShape(kt.shape.slice(0, -2)) !== formatShape(leading) || dkk !== dk) shapeError('k', `[${prefix}S, ${dk}]`, kt.shape);
  if (formatShape(vt.shape.slice(0, -2)) !== formatShape(leading) || Sv !== S) shapeError('v', `[${prefix}${S}, dv]`, vt.shape);
  const B = product(leading);
  const attnMask = checkMask('attnMask', o.attnMask, views);
  if (attnMask.kind !== MaskKind.none) {
    const s = formatShape(attnMask.shape);
    if (s !== formatShape([L, S]) && s !== formatShape([...leading, L, S])) {
      shapeError('attnMask', `${formatShape([L, S])} or ${formatShape([...leading, L, S])}`, attnMask.shape);
    }
    attnMask.shape = attnMask.shape.length === 2 ? [L, S] : [B, L, S];
  }
  // undefined: 1/√dk (the core then takes no scale, never a 0); checkPositive() refuses what
  // float32 would round to 0 or overflow.
  const scale = o.scale === undefined ? undefined : checkPositive('scale', o.scale);
  const needWeights = checkBoolean('needWeights', o.needWeights, false);
  const outputShape = [...leading, L, dv];
  const onDevice = [qt, kt, vt].some((t) => isDeviceData(t.data));
  const output = checkChoice('output', o.output, OUTPUT_LOCATIONS, 'cpu');
  const batch = checkBatch(o.batch, output);
  const plan = {
    B, L, S, T: S, dk, dv,
    dtype,
    query: qt.data, key: kt.data, value: vt.data,
    keyPaddingMask: noMask(), attnMask,
    isCausal: checkBoolean('isCausal', o.isCausal, false),
    scale,
    needWeights,
    averageAttnWeights: true,  // one head: its weights are the average
    output, onDevice, batch, cache: null, positionIds: null,
    outputShape,
    weightsShape: needWeights ? [...leading, L, S] : null,
    ...checkOutTargets(o.out, { shape: outputShape, dtype, output }),
    backendOptions: sdpaBackendOptions(o, onDevice || output === 'gpu-buffer'),
  };
  batch?.[BATCH.admit](plan, 'scaledDotProductAttention()');  // a GpuStep refuses it (dispatch/gpu_step.js)
  return plan;
}

// The backend options of a scaledDotProductAttention() call (onGpu: it has GPU tensors or 'gpu-buffer' results).
function sdpaBackendOptions(o, onGpu) {
  const backendOptions = resolveBackendOptions({ backend: o.backend ?? (onGpu ? 'webgpu' : 'wasm'), gpu: o.gpu, webgpuMinFlops: o.webgpuMinFlops });
  if (onGpu && backendOptions.backend === 'wasm') {
    throw new OptionError("backend: GPU tensors and output: 'gpu-buffer' need a device, backend 'webgpu' or 'auto', got 'wasm'", {
      argument: 'backend', expected: "'webgpu' | 'auto'", actual: "'wasm'",
    });
  }
  return backendOptions;
}

/**
 * selfAttention(x, options): x is [L, C] or [..., L, C], host or GPU, checked (and copied) once and
 * planned as scaledDotProductAttention(x, x, x). `returnWeights` is needWeights' old name (still
 * taken, with a deprecation warning from api.js; not both at once). Returns { plan (resolveSdpa()'s),
 * deprecatedReturnWeights }.
 */
export function resolveSelfAttention(x, options) {
  const o = checkOptions('selfAttention', options, ['needWeights', 'returnWeights', ...SDPA_BACKEND_OPTIONS]);
  if (o.needWeights !== undefined && o.returnWeights !== undefined) {
    throw new OptionError('selfAttention: give needWeights only (returnWeights is its deprecated old name), not both', {
      argument: 'returnWeights', expected: 'needWeights alone', actual: 'both',
    });
  }
  const views = new Map();
  const t = inputChecker(views, false)('x', x);
  if (t.shape.length < 2) shapeError('x', '[L, C] or [..., L, C]', t.shape);
  const needWeights = o.returnWeights !== undefined
    ? checkBoolean('returnWeights', o.returnWeights, false) : checkBoolean('needWeights', o.needWeights, false);
  return { plan: sdpaPlan([['x', t], ['x', t], ['x', t]], { ...o, needWeights }, views), deprecatedReturnWeights: o.returnWeights !== undefined };
}

/**
 * forward()'s attnMask shape: [L, S] or per head [B·H, L, S]; with a cache a verification mask
 * among the L new positions (docs/attention-math/decoding.md §9): [L, L], [B, L, L] or [B·H, L, L].
 */
function checkAttnMaskShape(shape, { B, H, L, S, cached }) {
  const shapes = cached ? [[L, L], [B, L, L], [B * H, L, L]] : [[L, S], [B * H, L, S]];
  const s = formatShape(shape);
  if (shapes.some((x) => formatShape(x) === s)) return;
  const named = shapes.map(formatShape);
  const expected = `${named.slice(0, -1).join(', ')} or ${named.at(-1)}${cached ? ` (among the ${L} new positions, with a cache)` : ''}`;
  shapeError('attnMask', expected, shape);
}

/**
 * forward()'s `cache` option against the call: L new positions for query, key and value, the
 * cache's batch size (or the `rows` of it the call appends to, one per batch row), causal
 * (implied), room left in each row. Returns the plan's `cache`: { kvCache (the KvCache), rows
 * (Int32Array, or null for every row), lengthsBefore (each cache row's), L, lengthBefore,
 * lengthAfter } (the longest listed row's: the keys a call's masks and weights span).
 */
function checkCacheOption(cache, { B, L, S, isCausal, rows: givenRows }) {
  if (!KvCache.isKvCache(cache)) {
    throw new OptionError(`cache: expected a KvCache from mha.createCache(), got ${describe(cache)}`, {
      argument: 'cache', expected: 'KvCache', actual: describe(cache),
    });
  }
  const lengthsBefore = cache.lengthsForCall();
  const rows = checkCallRows(givenRows, { B, batchSize: cache.batchSize });
  const listed = rows ? Array.from(rows, (r) => lengthsBefore[r]) : lengthsBefore;
  const lengthBefore = Math.max(...listed);
  if (!rows && B !== cache.batchSize) {
    throw new ShapeError(`query: expected batch ${cache.batchSize} (the cache's batchSize), got ${B}`, {
      argument: 'query', expected: cache.batchSize, actual: B,
    });
  }
  if (S !== L) {
    throw new ShapeError(`key: with a cache, expected the L = ${L} new positions, got S = ${S}`, {
      argument: 'key', expected: L, actual: S,
    });
  }
  if (isCausal === false) {
    throw new OptionError('isCausal: false is not supported with a cache (a cached step is causal: each new position '
      + 'attends to the cached ones and to itself and those before it); leave isCausal out or true', {
      argument: 'isCausal', expected: 'true or undefined', actual: false,
    });
  }
  const at = listed.indexOf(lengthBefore);
  checkRoom(cache, lengthBefore, L, { row: listed.length > 1 ? ` (row ${rows ? rows[at] : at})` : '' });
  return { kvCache: cache, rows, lengthsBefore, L, lengthBefore, lengthAfter: lengthBefore + L };
}
