// Cross-attention's two calls checked into plans (docs/attention-math/decoding.md §9): mha.encode(key,
// value) (resolveEncode) and forward(query, null, null, { cache: encoded }) (resolveEncodedForward,
// which plans.js's resolveMhaForward() hands an encoded cache to). The core checks them again in
// its own words; these are the messages users see.
import { CacheError, OptionError, ShapeError, describe, formatShape } from '../base/errors.js';
import { checkBoolean, checkChoice, checkOptions } from '../base/option_checks.js';
import { FLOAT_DATA, checkKeyPaddingMask, checkMask, checkTensor, requireWhole, shapeError, snapshotShape } from '../base/tensor_checks.js';
import { isDeviceData, isGpuTensor } from '../base/gpu_tensors.js';
import { checkGpuTensor } from './gpu_tensor_checks.js';
import { CACHE_DTYPES } from '../storage/storage_types.js';
import { widenInputs } from './half_tensors.js';
import { checkOutTargets } from './out_option.js';

/**
 * encode(key [B, S, kdim] (or [S, kdim]), value [B, S, vdim], { dtype }) checked: { B, S, batched,
 * key, value (float32 data, borrowed, or GPU tensors' DeviceData), dtype (the cache's), onDevice }.
 */
export function resolveEncode(config, key, value, options) {
  const o = checkOptions('encode', options, ['dtype']);
  if (config.rotary) {
    throw new OptionError('encode: a module with a rotary embedding rotates keys by position, and an encoder\'s keys '
      + 'have none in the decoder\'s sequence', { argument: 'rotary', expected: 'a module without rotary', actual: 'rotary' });
  }
  const views = new Map();
  const buffers = new Map();
  // A host tensor, or a GPU one (an encoder's output on the device: dispatch/encode_call.js).
  const input = (argument, tensor, ranks) => (isGpuTensor(tensor)
    ? checkGpuTensor(argument, tensor, { ranks, shapeOf: snapshotShape, buffers })
    : checkTensor(argument, tensor, { dtypes: FLOAT_DATA, ranks, views, borrow: true }));
  const givenKey = input('key', key, [2, 3]);
  const rank = givenKey.shape.length;
  const { tensors: [k, v] } = widenInputs([['key', givenKey], ['value', value === key ? givenKey : input('value', value, [rank])]]);
  const batched = rank === 3;
  const [B, S, kdim] = batched ? k.shape : [1, ...k.shape];
  const [Bv, Sv, vdim] = batched ? v.shape : [1, ...v.shape];
  const lead = batched ? [B] : [];
  if (kdim !== config.kdim) shapeError('key', formatShape([...lead, 'S', config.kdim]), k.shape);
  if (Bv !== B || Sv !== S || vdim !== config.vdim) shapeError('value', formatShape([...lead, S, config.vdim]), v.shape);
  const dtype = checkChoice('dtype', o.dtype, CACHE_DTYPES, 'float32');
  requireWhole('key', k);
  requireWhole('value', v);
  return { B, S, batched, key: k.data, value: v.data, dtype, borrowed: true, onDevice: isDeviceData(k.data) || isDeviceData(v.data) };
}

/**
 * forward(query, key, value, o) with `o.cache` an encoded KvCache: key and value null (the
 * cache holds them), no causal rule, no attnMask or positionIds, keyPaddingMask [B, S]. The
 * plan of resolveMhaForward(), with S = 0 new positions and T = S attended.
 */
export function resolveEncodedForward(config, query, key, value, o, { output = 'cpu', batch = null } = {}) {
  const cache = o.cache;
  if ((key !== null && key !== undefined) || (value !== null && value !== undefined)) {
    throw new CacheError('cache: an encoded cache (mha.encode()) is read-only and holds the keys and values: pass null '
      + 'key and value', { argument: key !== null && key !== undefined ? 'key' : 'value', expected: 'null', actual: describe(key ?? value) });
  }
  for (const [argument, given] of [['isCausal', o.isCausal === true], ['attnMask', o.attnMask != null], ['positionIds', o.positionIds != null]]) {
    if (given) {
      throw new OptionError(`${argument}: not supported with an encoded cache (its keys have no positions in this sequence; `
        + 'use keyPaddingMask)', { argument, expected: 'undefined', actual: describe(o[argument]) });
    }
  }
  const views = new Map();
  // A GPU query (and output 'gpu-buffer') runs where the cache is stored: on the GPU, or refused
  // by dispatch/device_calls.js naming the cache.
  const given = isGpuTensor(query) ? checkGpuTensor('query', query, { ranks: [2, 3], shapeOf: snapshotShape, buffers: new Map() })
    : checkTensor('query', query, { dtypes: FLOAT_DATA, ranks: [2, 3], views, borrow: true });
  const { tensors: [q], dtype } = widenInputs([['query', given]]);
  const batched = q.shape.length === 3;
  const [B, L, E] = batched ? q.shape : [1, ...q.shape];
  const lead = batched ? [B] : [];
  if (E !== config.embedDim) shapeError('query', formatShape([...lead, L, config.embedDim]), q.shape);
  const [T] = cache.lengthsForCall();  // an encoded cache's rows all hold its S positions
  if (o.rows !== undefined) {
    throw new OptionError('rows: an encoded cache (mha.encode()) attends every row and appends nothing; leave rows out', {
      argument: 'rows', expected: 'undefined', actual: describe(o.rows),
    });
  }
  if (B !== cache.batchSize) {
    throw new ShapeError(`query: expected batch ${cache.batchSize} (the encoded cache's), got ${B}`, {
      argument: 'query', expected: cache.batchSize, actual: B,
    });
  }
  const keyPaddingMask = checkKeyPaddingMask(o.keyPaddingMask, views, { B, T, batched });
  const needWeights = checkBoolean('needWeights', o.needWeights, false);
  const averageAttnWeights = checkBoolean('averageAttnWeights', o.averageAttnWeights, true);
  requireWhole('query', q);
  requireWhole('keyPaddingMask', keyPaddingMask);
  const outputShape = [...lead, L, config.embedDim];
  return {
    borrowed: true,
    B, L, S: 0, T, batched,
    dtype,
    query: q.data, key: null, value: null,
    output, batch, onDevice: isDeviceData(q.data),
    keyPaddingMask, attnMask: checkMask('attnMask', undefined),
    isCausal: false,
    needWeights,
    averageAttnWeights,
    cache: { kvCache: cache, rows: null, lengthsBefore: new Array(B).fill(T), L: 0, lengthBefore: T, lengthAfter: T },
    positionIds: null,
    outputShape,
    weightsShape: needWeights ? [...lead, ...(averageAttnWeights ? [] : [config.numHeads]), L, T] : null,
    ...checkOutTargets(o.out, { shape: outputShape, dtype, output }),
  };
}
