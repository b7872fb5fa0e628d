// Types of the package's KV cache (web/index.d.ts re-exports them): mha.createCache()'s and
// mha.encode()'s KvCache and what its read() gives.
import type { CacheDtype, Tensor } from './tensors.js';

/** KvCache.read()'s result. */
export interface CacheContents {
  /** [batchSize, numKvHeads, n, headDim]. */
  key: Tensor;
  /** [batchSize, numKvHeads, n, valueHeadDim]. */
  value: Tensor;
  /** The position of index 0 along n (length − n). */
  firstPosition: number;
}

/** Keys and values of the positions appended so far, for incremental decoding; allocated once. */
export class KvCache {
  private constructor();
  /**
   * Positions appended so far, counting the calls made on it that still run (in order): every
   * row's one length. Where the rows hold different numbers (a forward() with `rows`, or
   * truncate(lengths)), reading it throws CacheError (naming `lengths`): read `lengths` then.
   */
  readonly length: number;
  /** Each row's positions (batchSize of them), counted as `length` counts them. */
  readonly lengths: number[];
  readonly batchSize: number;
  /** 0: no limit (a window without maxLength). */
  readonly maxLength: number;
  /** 0: no window. */
  readonly window: number;
  readonly dtype: CacheDtype;
  /** Made by mha.encode(): an encoder's keys and values, read-only (reset(), truncate() and keep() throw CacheError). */
  readonly encoded: boolean;
  /**
   * The keys (as stored: rotated) and values of the positions held, in position order: all of
   * them, or with a window the last min(length, window); after the calls made before it.
   * onnxruntime's present_key / present_value. Rows of different lengths: CacheError (naming
   * `lengths`).
   */
  read(): Promise<CacheContents>;
  /** Back to length 0 without freeing, after the calls made before it. */
  reset(): void;
  /**
   * Drops positions >= length (an integer, one for every row; at most each row's length, and with
   * a window whose ring has wrapped at least the oldest position held plus the window), after the
   * calls made before it: later calls continue as if they had never been appended. With a list,
   * one length per row (batchSize of them), each row cut on its own. CacheError (naming `length`
   * or `lengths`) otherwise, the cache unchanged.
   */
  truncate(length: number | ArrayLike<number>): void;
  /**
   * Keeps only `indices` (strictly increasing, in [0, L)) among the last forward()'s L new
   * positions (speculative decoding: the accepted drafts), moved to consecutive positions from
   * the length before that call; the rest are dropped, after the calls made before it. Afterwards
   * every result, read() included, equals a fresh run over the kept tokens alone: a moved key is
   * rotated (RoPE) at its new position. CacheError (naming `indices`) otherwise, the cache
   * unchanged: indices repeated, unsorted or out of range, no forward() since the cache was made,
   * reset, truncated or kept, an encoded cache, a window's ring that no longer holds them, a
   * last call on some `rows` or on rows of different lengths (keep() takes a call on every row).
   */
  keep(indices: ArrayLike<number>): void;
  /**
   * A new cache of the same module (same dtype, backend and options) holding a copy of this
   * one's positions, after the calls made before it; later calls on either leave the other as it
   * was. Freed by its own dispose() or the module's.
   */
  fork(): KvCache;
  /** Frees the storage once the calls made before it finish; later use throws DisposedError (as after the module's dispose()). */
  dispose(): void;
}
