// The public KvCache, made by mha.createCache() (docs/attention-math.md §7–§9): storage for
// incremental decoding that forward() takes as its `cache` option.
import { CacheError, DisposedError } from '../base/errors.js';
import { lazyModules } from '../base/lazy_modules.js';
import { CACHE } from '../base/batch_protocol.js';
import { BatchHold } from './batch_hold.js';
import { checkPlannedLengths, checkTruncation, listedRows, refuseEncoded, uniformLength } from './cache_checks.js';

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
 * CacheError rather than run at the wrong positions; so do those behind a GpuBatch's refused call
 * (batch_hold.js: work from outside that batch waits for its verdict).
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
  #planned = [];  // each row's length once every queued call has appended (while #queued > 0)
  #epoch = 0;     // reset(), truncate() and keep() count: a failure before one does not change the planned length
  #lastRows = 0;  // the last call's new positions, which keep() chooses among (0: none since a reset, truncate or keep)
  #lastPerRow = false;  // the last call appended to rows at lengths of their own (keep() refuses)
  #lastInputsHeld = true;  // whether the last call's inputs are the package's (not GPU tensors): a backend may need them for keep()
  #adopt;         // make()'s
  #held = new BatchHold();  // a GpuBatch's call on it, until the batch's verdict

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

  /**
   * The cache of `owner` (an executor) on its storage `handle`: Dispatcher.createCache()'s.
   * adopt(cache): the module's record of its caches (it releases them when disposed), for this
   * one and its forks.
   */
  static make(owner, handle, options, adopt = () => {}) {
    making = true;
    let cache;
    try {
      cache = new KvCache(owner, handle, options);
    } finally {
      making = false;
    }
    cache.#adopt = adopt;
    adopt(cache);
    return cache;
  }

  /**
   * Whether `value` is a KvCache this package made: a brand check on the private field, so an
   * Object.create(KvCache.prototype) or another realm's look-alike is not one (instanceof says it
   * is, and its first private read would then throw an untyped TypeError).
   */
  static isKvCache(value) {
    return value !== null && typeof value === 'object' && #owner in value;
  }

  /**
   * Positions appended so far, counting the calls made and still running (they run in order): the
   * one length of every row, or a CacheError naming `lengths` where the rows differ (a call on
   * some `rows`, or truncate(lengths)): read `lengths` then.
   */
  get length() {
    return uniformLength(this.#lengthsOf(this.#live('KvCache.length')), 'cache.length');
  }

  /** Each row's positions (batchSize of them), as `length` counts them. */
  get lengths() { return this.#lengthsOf(this.#live('KvCache.lengths')); }

  /** Each row's length, for a forward() call: a disposed cache's error names that call's option. */
  lengthsForCall() {
    return this.#lengthsOf(this.#live('forward: cache'));
  }

  #lengthsOf(handle) {
    if (this.#queued) return this.#planned.slice();
    const B = this.#options.batchSize;
    return B === 1 ? [handle.length()] : Array.from({ length: B }, (_, b) => handle.rowLength(b));
  }

  /** Whether calls are queued or running on it (a call enqueued now would run later). */
  get busy() { return this.#queued > 0; }

  /**
   * Runs `run()` (a forward() on this cache, planned by `planned` = the plan's { lengthBefore,
   * lengthAfter }) after the calls made before it: at once when none is running (a WASM call then
   * runs synchronously, reading its inputs at the call), else queued. Returns run()'s result
   * itself where it ran at once and gave one (a WASM call: no promise to settle), else a promise.
   */
  enqueue(planned, run, inputsHeld = true, batch = null) {
    const waits = this.#held.submitFor(batch);
    const epoch = this.#epoch;
    const { L, lengthsBefore } = planned;
    const listed = listedRows(planned);
    const start = () => {
      const verdict = this.#held.verdictBefore(batch);
      if (verdict) return verdict.then(start);
      if (this.#dead) throw new DisposedError(`forward: cache: ${this.#dead}`, 'cache');
      checkPlannedLengths(listed, lengthsBefore, (b) => this.#handle.rowLength(b));
      return run();
    };
    // A call on rows at lengths of their own is no call keep() can choose among.
    const perRow = planned.rows !== null || lengthsBefore.some((n) => n !== lengthsBefore[0]);
    const rows = perRow ? 0 : L;
    let call;
    if (this.#queued === 0 && !waits) {
      try {
        call = start();
      } catch (e) {
        return Promise.reject(e);
      }
    } else {
      call = this.#queue.then(start);
    }
    this.#lastRows = rows;
    this.#lastPerRow = perRow;
    this.#lastInputsHeld = inputsHeld;
    if (!(call instanceof Promise)) return call;  // ran at once and done (WASM)
    this.#queued += 1;
    this.#planned = lengthsBefore.slice();
    for (const b of listed) this.#planned[b] += L;
    const settled = call.then(() => this.#settle(), () => this.#settle(epoch === this.#epoch ? listed : [], L));
    this.#queue = settled;
    return call;
  }

  /** Internal (GpuBatch.record()): a call on it is recorded into `batch`, as its call `ticket`. */
  [CACHE.recorded](batch, ticket) {
    this.#held.recorded(batch, ticket);
  }

  /** Internal (GpuBatch.submit(), discard()): batch_hold.js submitted(). */
  [CACHE.submitted](batch, outcome) {
    this.#held.submitted(batch, outcome);
  }

  /**
   * Internal (webgpu/forward_pass.js, right before a batched call on it is recorded into `batch`):
   * null where it may be; else a promise settling once the verdict of the batch's submit made since
   * the call's turn is in, a CacheError where that verdict took back rows the call was planned on
   * (`planned`: its plan's cache part). The call asks again after it.
   */
  [CACHE.recordable](planned, batch) {
    const verdict = this.#held.verdictBefore(batch);
    if (!verdict) return null;
    return verdict.then(() => checkPlannedLengths(listedRows(planned), planned.lengthsBefore, (b) => this.#live('forward: cache').rowLength(b)));
  }

  // Whether work on it runs now: no batch's verdict to wait for (that batch submitted now where it
  // was not: batch_hold.js submitFor()), nothing queued.
  #idle() {
    return !this.#held.submitFor() && this.#queued === 0;
  }

  // A queued call settled; the `unappended` rows' L positions it planned and did not append come
  // off the plan.
  #settle(unappended = [], L = 0) {
    this.#queued -= 1;
    for (const b of unappended) this.#planned[b] -= L;
  }

  get batchSize() { return this.#options.batchSize; }
  /** 0: no limit (a window without maxLength). */
  get maxLength() { return this.#options.maxLength; }
  /** 0: no window. */
  get window() { return this.#options.window; }
  /** How keys and values are stored: 'float32' | 'float16' | 'int8'. */
  get dtype() { return this.#options.dtype; }
  /**
   * Whether mha.encode() made it: an encoder's keys and values, which forward() attends to with
   * null key and value, never appending; reset(), truncate() and keep() refuse.
   */
  get encoded() { return this.#options.encoded === true; }

  /**
   * The keys (as stored: rotated) and values of the positions held, in position order: every one
   * appended, or with a window the last min(length, window), those the last query saw; after the
   * calls made before it. Resolves to { key [B, h_kv, n, d_k], value [B, h_kv, n, d_v],
   * firstPosition } (onnxruntime's present_key / present_value).
   */
  async read() {
    const now = this.#live('KvCache.read');
    const waits = this.#held.submitFor();
    if (this.#queued === 0 && waits) this.#planned = this.#lengthsOf(now);
    if (this.#queued || waits) await this.#turn(() => {});
    const handle = this.#live('KvCache.read');
    const length = uniformLength(this.#lengthsOf(handle), 'cache.read');
    const count = this.window ? Math.min(length, this.window) : length;
    const first = length - count;
    return { ...(await this.#owner.readCache(handle, first, count, this.batchSize)), firstPosition: first };
  }

  /** Back to length 0, keeping the storage; after the calls made before it, if any still run. */
  reset() {
    const handle = this.#live('KvCache.reset');
    refuseEncoded(this.encoded, 'reset');
    if (this.#idle()) {
      handle.reset();
      this.#lastRows = 0;
      this.#lastPerRow = false;
      return;
    }
    this.#epoch += 1;
    this.#planned = this.#lengthsOf(handle).map(() => 0);
    this.#lastRows = 0;
    this.#lastPerRow = false;
    // A turn like truncate()'s and fork()'s, counted while it waits: until it has run, `length` is
    // 0 and a call made meanwhile queues behind it.
    this.#turn(() => {
      if (!this.#dead) handle.reset();
    }).catch(() => {});  // a GPU reset fails only with its device, which the next call reports
  }

  /**
   * Drops positions >= length (an integer in [lowest, this.length]; lowest is 0 unless a window's
   * ring has wrapped: see docs/attention-math/decoding.md §9), keeping the storage: a later call continues
   * at `length`, exactly as if the dropped positions had never been appended. One length cuts
   * every row to it; a list (truncate(lengths)) holds one per row. After the calls made before it,
   * as reset(); a misuse is a CacheError that changes nothing.
   */
  truncate(length) {
    const handle = this.#live('KvCache.truncate');
    refuseEncoded(this.encoded, 'truncate');
    const lengths = checkTruncation(length, this.#lengthsOf(handle), this.#options);
    const same = lengths.every((n) => n === lengths[0]);
    // A call before it that failed appended less than planned: cut only what is there (the calls
    // planned after it then reject, as behind any failed call).
    this.#cutBack(lengths, () => this.#owner.truncateCache(handle, same ? lengths[0] : lengths),
      () => lengths.every((n, b) => handle.rowLength(b) >= n));
  }

  /**
   * Keeps only `indices` (strictly increasing, in [0, L)) among the last forward()'s L new
   * positions, moved to consecutive positions from the length before that call; the others are
   * dropped. Afterwards every result, read() included, equals a fresh run over the kept tokens
   * alone at consecutive positions: a kept key rotated (RoPE) at another position than its new one
   * is rotated at the new one (docs/attention-math/decoding.md §9). After the calls made before it, as
   * truncate(); a misuse is a CacheError that changes nothing.
   */
  keep(indices) {
    const handle = this.#live('KvCache.keep');
    refuseEncoded(this.encoded, 'keep');
    if (this.#lastPerRow) {
      throw new CacheError('cache.keep: the last forward() appended to rows at lengths of their own (its `rows`, or rows '
        + 'of unequal lengths); keep() chooses among a call on every row of a cache whose rows are equal', {
        argument: 'indices', expected: 'a last call on every row at one length', actual: 'a call on rows of their own',
      });
    }
    const lengths = this.#lengthsOf(handle);
    const current = lengths[0];
    const kept = lazyModules().checkKeep(indices, this.#lastRows, current, this.#options);
    this.#owner.checkKeep?.(this.#lastRows, kept, this.#lastInputsHeld);  // a backend's own limit (WebGPU's)
    // Kept only where the calls before it appended what they planned (a failed one: the calls
    // planned after it reject, as behind any failed call).
    this.#cutBack(lengths.map(() => current - this.#lastRows + kept.length), () => this.#owner.keepCache(handle, kept),
      () => handle.length() === current);
  }

  // truncate()'s and keep()'s turn: op() now when no call is queued, else after them where ready()
  // says the calls before it appended what they planned; the planned lengths are `lengths` from now,
  // and there is no last call to keep() among. An op() that returns a promise (a GPU keep(), which
  // writes rows again) is a turn of its own: later calls wait for it; its failure (a lost device)
  // the next call reports.
  #cutBack(lengths, op, ready) {
    if (this.#idle()) {
      const done = op();
      if (done instanceof Promise) {
        this.#epoch += 1;
        this.#planned = lengths;
        this.#turn(() => done).catch(() => {});
      }
    } else {
      this.#epoch += 1;
      this.#planned = lengths;
      this.#turn(() => (ready() ? op() : undefined)).catch(() => {});
    }
    this.#lastRows = 0;
    this.#lastPerRow = false;
  }

  /**
   * A new KvCache of the same module holding a copy of this one's positions (same dtype, backend
   * and options), after the calls made before it: a later call on either leaves the other as it
   * was. A copy on the cache's device (a GPU buffer copy for a cache on WebGPU).
   */
  fork() {
    const handle = this.#live('KvCache.fork');
    const owner = this.#owner;
    if (this.#idle()) {
      return this.#lastCallTo(KvCache.make(owner, owner.forkCache(handle, this.#options), this.#options, this.#adopt));
    }
    // Calls still run on it (a GPU cache): the fork's storage now (a MemoryError at the call), its
    // copy at its turn; the fork's own calls, planned on this planned length, wait for the copy.
    const fork = KvCache.make(owner, owner.forkStorage(this.#options), this.#options, this.#adopt);
    const target = fork.#handle;
    const copied = this.#turn(() => owner.copyCache(handle, target));
    fork.#queued = 1;
    fork.#planned = this.#lengthsOf(handle);
    fork.#queue = copied.then(() => fork.#settle(), () => fork.#settle());
    return this.#lastCallTo(fork);
  }

  // `fork` given what this cache knows of its last call (keep() chooses among it); returns it.
  #lastCallTo(fork) {
    fork.#lastRows = this.#lastRows;
    fork.#lastPerRow = this.#lastPerRow;
    fork.#lastInputsHeld = this.#lastInputsHeld;
    return fork;
  }

  // Runs op() after the calls queued on it, counted as a queued call so that a call made meanwhile
  // waits for it, and so does the storage's delete() by a dispose() made meanwhile (a fork made
  // before it still gets its copy). A failure (a GPU's lost device) is reported by the next call.
  // Returns op()'s promise.
  #turn(op) {
    const gated = () => {
      const verdict = this.#held.verdictBefore();
      return verdict ? verdict.then(gated) : op();
    };
    this.#queued += 1;
    const done = this.#queue.then(gated);
    this.#queue = done.then(() => this.#settle(), () => this.#settle());
    return done;
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
    if (this.#idle()) handle.delete();
    else this.#turn(() => handle.delete()).catch(() => {});
  }

  /** Whether `owner` (an executor) made it: where its calls run. */
  isOf(owner) {
    return owner === this.#owner;
  }

  /**
   * The storage handle of `owner` (the core's, or the GPU's), or a typed error: dispatch.js looks
   * it up once per call and puts it in the plan (cache.storage), where the executor reads it.
   */
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
