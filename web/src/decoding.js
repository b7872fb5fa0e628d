// Incremental decoding's options and its KV cache object (docs/attention-math.md §7–§9): the
// create() options numKvHeads and rotary, createCache()'s options, and the checks of a forward()
// that passes { cache }.
import { CacheError, DisposedError, OptionError, ShapeError, describe } from './errors.js';
import { checkBoolean, checkOptions, checkSize } from './option_checks.js';

/**
 * numKvHeads (a divisor of numHeads, default numHeads) and rotary (undefined, or { base = 10000,
 * interleaved = false, dim = headDim }, dim even and <= headDim) of create()'s options.
 */
export function resolveDecodingConfig(options, { numHeads, headDim }) {
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

/** createCache() options: { batchSize = 1, maxLength, window }; maxLength optional with a window. */
export function resolveCacheOptions(options) {
  const o = checkOptions('createCache', options, ['batchSize', 'maxLength', 'window']);
  const batchSize = checkSize('batchSize', o.batchSize, 1);
  const window = o.window === undefined ? 0 : checkSize('window', o.window);
  const maxLength = window && o.maxLength === undefined ? 0 : checkSize('maxLength', o.maxLength);
  // The core counts slots in 32-bit integers.
  for (const [argument, value] of [['maxLength', maxLength], ['window', window]]) {
    if (value > 2 ** 31 - 64) {
      throw new OptionError(`${argument}: expected an integer <= ${2 ** 31 - 64}, got ${value}`, {
        argument, expected: `<= ${2 ** 31 - 64}`, actual: value,
      });
    }
  }
  return { batchSize, maxLength, window };
}

// Safety net for caches the app forgot to dispose(): frees their WASM memory on collection.
const registry = new FinalizationRegistry((handle) => {
  if (!handle.isDeleted()) handle.delete();
});

/**
 * Storage for incremental decoding, made by mha.createCache(): the keys and values of every
 * position appended so far, allocated once. Pass it as forward()'s `cache` option.
 */
export class KvCache {
  #owner;
  #handle;
  #options;
  #dead = null;  // why it can no longer be used

  /** Use mha.createCache(options). */
  constructor(owner, handle, options) {
    this.#owner = owner;
    this.#handle = handle;
    this.#options = options;
    registry.register(this, handle, this);
  }

  /** Positions appended so far. */
  get length() {
    return this.#live('length').length();
  }

  get batchSize() { return this.#options.batchSize; }
  /** 0: no limit (a window without maxLength). */
  get maxLength() { return this.#options.maxLength; }
  /** 0: no window. */
  get window() { return this.#options.window; }

  /** Back to length 0, keeping the storage. */
  reset() {
    this.#live('reset').reset();
  }

  /** Frees the storage; later use throws DisposedError. */
  dispose() {
    this.release('the cache was disposed');
  }

  /** Frees the storage for `reason` (also when its module is disposed). */
  release(reason) {
    if (this.#dead) return;
    this.#dead = reason;
    registry.unregister(this);
    this.#handle.delete();
    this.#handle = null;
  }

  /** Whether `owner` (an executor) made it: where its calls run. */
  isOf(owner) {
    return owner === this.#owner;
  }

  /** The storage handle of `owner` (the core's, or the GPU's), or a typed error. */
  handleFor(owner) {
    const handle = this.#live('forward');
    if (owner !== this.#owner) {
      throw new CacheError('cache: made by another module (use the createCache() of the module that runs it)', {
        argument: 'cache', expected: 'a cache of this module', actual: 'a cache of another module',
      });
    }
    return handle;
  }

  #live(method) {
    if (this.#dead) throw new DisposedError(`KvCache.${method}: ${this.#dead}`, 'cache');
    return this.#handle;
  }
}

/**
 * forward()'s `cache` option against the call: L new positions for query, key and value, the
 * cache's batch size, no attnMask (causal is implied), room left. Returns { cache, lengthBefore,
 * lengthAfter }.
 */
export function checkCacheOption(cache, { B, L, S, hasAttnMask }) {
  if (!(cache instanceof KvCache)) {
    throw new OptionError(`cache: expected a KvCache from mha.createCache(), got ${describe(cache)}`, {
      argument: 'cache', expected: 'KvCache', actual: describe(cache),
    });
  }
  const lengthBefore = cache.length;
  if (B !== cache.batchSize) {
    throw new ShapeError(`query: expected batch ${cache.batchSize} (the cache's batchSize), got ${B}`, {
      argument: 'query', expected: cache.batchSize, actual: B,
    });
  }
  if (S !== L) {
    throw new ShapeError(`key: with a cache, expected the L = ${L} new positions, got S = ${S}`, {
      argument: 'key', expected: L, actual: S,
    });
  }
  if (hasAttnMask) {
    throw new OptionError('attnMask: not supported with a cache (causal is implied; use keyPaddingMask)', {
      argument: 'attnMask', expected: 'undefined', actual: 'a mask',
    });
  }
  if (cache.maxLength && lengthBefore + L > cache.maxLength) {
    throw new CacheError(`cache: appending ${L} positions to length ${lengthBefore} would pass maxLength ${cache.maxLength}`, {
      argument: 'cache', expected: `<= ${cache.maxLength - lengthBefore} positions`, actual: L,
    });
  }
  return { cache, lengthBefore, lengthAfter: lengthBefore + L };
}
