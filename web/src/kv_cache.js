// The public KvCache, made by mha.createCache() (docs/attention-math.md §7–§9): storage for
// incremental decoding that forward() takes as its `cache` option, and createCache()'s options.
import { CacheError, DisposedError, OptionError } from './errors.js';
import { MAX_CACHE_POSITIONS } from './kv_ring.js';
import { checkChoice, checkOptions, checkSize } from './option_checks.js';

/** createCache()'s dtype: how the cache stores keys and values (docs/attention-math.md). */
export const CACHE_DTYPES = ['float32', 'float16', 'int8'];

/**
 * createCache() options: { batchSize = 1, maxLength, window, dtype = 'float32' }; maxLength
 * optional with a window.
 */
export function resolveCacheOptions(options) {
  const o = checkOptions('createCache', options, ['batchSize', 'maxLength', 'window', 'dtype']);
  const batchSize = checkSize('batchSize', o.batchSize, 1);
  if (o.maxLength === undefined && o.window === undefined) {
    throw new OptionError('createCache: expected maxLength (the most positions the cache holds) or window (a sliding '
      + 'window of that many keys, maxLength then optional), got neither', {
      argument: 'maxLength', expected: 'maxLength or window', actual: 'neither',
    });
  }
  const window = o.window === undefined ? 0 : checkSize('window', o.window);
  const maxLength = window && o.maxLength === undefined ? 0 : checkSize('maxLength', o.maxLength);
  for (const [argument, value] of [['maxLength', maxLength], ['window', window]]) {
    if (value > MAX_CACHE_POSITIONS) {
      throw new OptionError(`${argument}: expected an integer <= ${MAX_CACHE_POSITIONS}, got ${value}`, {
        argument, expected: `<= ${MAX_CACHE_POSITIONS}`, actual: value,
      });
    }
  }
  return { batchSize, maxLength, window, dtype: checkChoice('dtype', o.dtype, CACHE_DTYPES, 'float32') };
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

  /**
   * Whether `value` is a KvCache this package made: a brand check on the private field, so an
   * Object.create(KvCache.prototype) or another realm's look-alike is not one (instanceof says it
   * is, and its first private read would then throw an untyped TypeError).
   */
  static isKvCache(value) {
    return value !== null && typeof value === 'object' && #owner in value;
  }

  /** Positions appended so far. */
  get length() {
    return this.#live('KvCache.length').length();
  }

  /** The length, for a forward() call: a disposed cache's error names that call's option. */
  lengthForCall() {
    return this.#live('forward: cache').length();
  }

  get batchSize() { return this.#options.batchSize; }
  /** 0: no limit (a window without maxLength). */
  get maxLength() { return this.#options.maxLength; }
  /** 0: no window. */
  get window() { return this.#options.window; }
  /** How keys and values are stored: 'float32' | 'float16' | 'int8'. */
  get dtype() { return this.#options.dtype; }

  /** Back to length 0, keeping the storage. */
  reset() {
    this.#live('KvCache.reset').reset();
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
    const handle = this.#live('forward: cache');
    if (owner !== this.#owner) {
      throw new CacheError('cache: made by another module (use the createCache() of the module that runs it)', {
        argument: 'cache', expected: 'a cache of this module', actual: 'a cache of another module',
      });
    }
    return handle;
  }

  /** The handle, or a DisposedError saying `where` it was used. */
  #live(where) {
    if (this.#dead) throw new DisposedError(`${where}: ${this.#dead}`, 'cache');
    return this.#handle;
  }
}
