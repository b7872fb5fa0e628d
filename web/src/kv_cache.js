// The public KvCache, made by mha.createCache() (docs/attention-math.md §7–§9): storage for
// incremental decoding that forward() takes as its `cache` option, and createCache()'s options.
import { CacheError, DisposedError, OptionError } from './errors.js';
import { MAX_CACHE_POSITIONS } from './kv_ring.js';
import { checkChoice, checkOptions, checkSize } from './option_checks.js';

/** createCache()'s dtype: how the cache stores keys and values (docs/attention-math.md). */
const CACHE_DTYPES = ['float32', 'float16', 'int8'];

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
 *
 * Calls on one cache run in the order they were made, awaited or not, on every backend: a WASM
 * call runs at once; a GPU call is queued behind the ones still running (enqueue()). Each call is
 * planned on the length the calls before it leave (`length` reads that), reset() and dispose()
 * take their turn in the same queue (they wait for the calls made before them), and a call that
 * fails appends nothing, so the calls queued behind it, planned on its rows, reject with a
 * CacheError rather than run at the wrong positions.
 */
// True only inside KvCache.make(): the constructor refuses every other caller.
let making = false;

export class KvCache {
  #owner;
  #handle;
  #options;
  #dead = null;  // why it can no longer be used
  #queue = Promise.resolve();  // the tail of the calls (and resets) queued on it
  #queued = 0;    // calls queued or running
  #planned = 0;   // the length once every queued call has appended (while #queued > 0)
  #epoch = 0;     // reset() count: a failure before a reset does not change the planned length

  /**
   * Use mha.createCache(options) (which calls KvCache.make()). Exported for instanceof only: one
   * made any other way would pass the brand check with no storage behind it, so it is refused.
   */
  constructor(owner, handle, options) {
    if (!making) {
      throw new CacheError('KvCache: a cache is made by mha.createCache(options), not by new KvCache()', {
        argument: 'KvCache', expected: 'mha.createCache(options)', actual: 'new KvCache()',
      });
    }
    this.#owner = owner;
    this.#handle = handle;
    this.#options = options;
    registry.register(this, handle, this);
  }

  /** The cache of `owner` (an executor) on its storage `handle`: Dispatcher.createCache()'s. */
  static make(owner, handle, options) {
    making = true;
    try {
      return new KvCache(owner, handle, options);
    } finally {
      making = false;
    }
  }

  /**
   * Whether `value` is a KvCache this package made: a brand check on the private field, so an
   * Object.create(KvCache.prototype) or another realm's look-alike is not one (instanceof says it
   * is, and its first private read would then throw an untyped TypeError).
   */
  static isKvCache(value) {
    return value !== null && typeof value === 'object' && #owner in value;
  }

  /** Positions appended so far, counting the calls made and still running (they run in order). */
  get length() {
    const handle = this.#live('KvCache.length');
    return this.#queued ? this.#planned : handle.length();
  }

  /** The length, for a forward() call: a disposed cache's error names that call's option. */
  lengthForCall() {
    const handle = this.#live('forward: cache');
    return this.#queued ? this.#planned : handle.length();
  }

  /**
   * Runs `run()` (a forward() on this cache, planned by `planned` = the plan's { lengthBefore,
   * lengthAfter }) after the calls made before it: at once when none is running (a WASM call then
   * runs synchronously, reading its inputs at the call), else queued. Resolves to run()'s result.
   */
  /** Whether calls are queued or running on it (a call enqueued now would run later). */
  get busy() { return this.#queued > 0; }

  enqueue(planned, run) {
    const epoch = this.#epoch;
    const rows = planned.lengthAfter - planned.lengthBefore;
    const start = () => {
      if (this.#dead) throw new DisposedError(`forward: cache: ${this.#dead}`, 'cache');
      const length = this.#handle.length();
      if (length !== planned.lengthBefore) {
        throw new CacheError(`cache: this call was planned at length ${planned.lengthBefore}, but a call queued before it on `
          + `the cache failed and appended nothing (length ${length}); it did not run`, {
          argument: 'cache', expected: planned.lengthBefore, actual: length,
        });
      }
      return run();
    };
    let call;
    if (this.#queued === 0) {
      try {
        call = start();
      } catch (e) {
        return Promise.reject(e);
      }
      if (!(call instanceof Promise)) return Promise.resolve(call);  // done already (WASM)
    } else {
      call = this.#queue.then(start);
    }
    this.#queued += 1;
    this.#planned = planned.lengthAfter;
    const settled = call.then(() => this.#settle(0), () => this.#settle(epoch === this.#epoch ? rows : 0));
    this.#queue = settled;
    return call;
  }

  // A queued call settled; `unappended` rows it planned and did not append come off the plan.
  #settle(unappended) {
    this.#queued -= 1;
    this.#planned -= unappended;
  }

  get batchSize() { return this.#options.batchSize; }
  /** 0: no limit (a window without maxLength). */
  get maxLength() { return this.#options.maxLength; }
  /** 0: no window. */
  get window() { return this.#options.window; }
  /** How keys and values are stored: 'float32' | 'float16' | 'int8'. */
  get dtype() { return this.#options.dtype; }

  /**
   * The keys (as stored: rotated) and values of the positions held, in position order: every one
   * appended, or with a window the last min(length, window), those the last query saw; after the
   * calls made before it. Resolves to { key [B, h_kv, n, d_k], value [B, h_kv, n, d_v],
   * firstPosition } (onnxruntime's present_key / present_value).
   */
  async read() {
    this.#live('KvCache.read');
    if (this.#queued) await this.#queue;
    const handle = this.#live('KvCache.read');
    const length = handle.length();
    const count = this.window ? Math.min(length, this.window) : length;
    const first = length - count;
    return { ...(await this.#owner.readCache(handle, first, count, this.batchSize)), firstPosition: first };
  }

  /** Back to length 0, keeping the storage; after the calls made before it, if any still run. */
  reset() {
    const handle = this.#live('KvCache.reset');
    if (this.#queued === 0) {
      handle.reset();
      return;
    }
    this.#epoch += 1;
    this.#planned = 0;
    this.#queue = this.#queue.then(() => {
      if (!this.#dead) handle.reset();
    }).catch(() => {});  // a GPU reset fails only with its device, which the next call reports
  }

  /** Frees the storage; later use throws DisposedError. */
  dispose() {
    this.release('the cache was disposed');
  }

  /**
   * Frees the storage for `reason` (also when its module is disposed): at once, or after the
   * call that is running (it finishes; the calls queued behind it reject with a DisposedError).
   */
  release(reason) {
    if (this.#dead) return;
    this.#dead = reason;
    registry.unregister(this);
    const handle = this.#handle;
    this.#handle = null;
    if (this.#queued === 0) handle.delete();
    else this.#queue = this.#queue.then(() => handle.delete());
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
