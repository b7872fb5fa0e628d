// Cross-attention's two calls checked into plans (docs/attention-math.md §9): mha.encode(key,
// value) (resolveEncode) and forward(query, null, null, { cache: encoded }) (resolveEncodedForward,
// which plans.js's resolveMhaForward() hands an encoded cache to). The core checks them again in
// its own words; these are the messages users see.
import { CacheError, OptionError, ShapeError, describe, formatShape } from '../base/errors.js';
import { checkBoolean, checkChoice, checkOptions } from '../base/option_checks.js';
import { FLOAT_DATA, checkKeyPaddingMask, checkMask, checkTensor, requireWhole, shapeError } from '../base/tensor_checks.js';
import { CACHE_DTYPES } from '../storage/storage_types.js';
import { widenInputs } from './half_tensors.js';
import { checkOut } from './out_option.js';

/**
 * encode(key [B, S, kdim] (or [S, kdim]), value [B, S, vdim], { dtype }) checked: { B, S, batched,
 * key, value (float32 data, borrowed), dtype (the cache's) }.
 */
export function resolveEncode(config, key, value, options) {
  const o = checkOptions('encode', options, ['dtype']);
  if (config.rotary) {
    throw new OptionError('encode: a module with a rotary embedding rotates keys by position, and an encoder\'s keys '
      + 'have none in the decoder\'s sequence', { argument: 'rotary', expected: 'a module without rotary', actual: 'rotary' });
  }
  const views = new Map();
  const givenKey = checkTensor('key', key, { dtypes: FLOAT_DATA, ranks: [2, 3], views, borrow: true });
  const rank = givenKey.shape.length;
  const { tensors: [k, v] } = widenInputs([['key', givenKey],
    ['value', checkTensor('value', value, { dtypes: FLOAT_DATA, ranks: [rank], views, borrow: true })]]);
  const batched = rank === 3;
  const [B, S, kdim] = batched ? k.shape : [1, ...k.shape];
  const [Bv, Sv, vdim] = batched ? v.shape : [1, ...v.shape];
  const lead = batched ? [B] : [];
  if (kdim !== config.kdim) shapeError('key', formatShape([...lead, 'S', config.kdim]), k.shape);
  if (Bv !== B || Sv !== S || vdim !== config.vdim) shapeError('value', formatShape([...lead, S, config.vdim]), v.shape);
  const dtype = checkChoice('dtype', o.dtype, CACHE_DTYPES, 'float32');
  requireWhole('key', k);
  requireWhole('value', v);
  return { B, S, batched, key: k.data, value: v.data, dtype, borrowed: true };
}

/**
 * forward(query, key, value, o) with `o.cache` an encoded KvCache: key and value null (the
 * cache holds them), no causal rule, no attnMask or positionIds, keyPaddingMask [B, S]. The
 * plan of resolveMhaForward(), with S = 0 new positions and T = S attended.
 */
export function resolveEncodedForward(config, query, key, value, o) {
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
  const given = checkTensor('query', query, { dtypes: FLOAT_DATA, ranks: [2, 3], views, borrow: true });
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
    keyPaddingMask, attnMask: checkMask('attnMask', undefined),
    isCausal: false,
    needWeights,
    averageAttnWeights,
    cache: { kvCache: cache, rows: null, lengthsBefore: new Array(B).fill(T), L: 0, lengthBefore: T, lengthAfter: T },
    positionIds: null,
    outputShape,
    weightsShape: needWeights ? [...lead, ...(averageAttnWeights ? [] : [config.numHeads]), L, T] : null,
    out: checkOut(o.out, { shape: outputShape, dtype }),
  };
}
