// A KV cache's storage on the GPU (the handle kv_cache.js's KvCache holds for a module that runs
// on WebGPU): keys and values of every position appended so far, allocated once at creation and
// written in place by the cache append kernel; never re-sent, never re-created per step.
//
// Layout [B, capacity, numKvHeads·d] for K and for V: the rows the attention kernels read through
// keyRow() (position p in slot p mod capacity). A float16 or int8 cache (its dtype) stores the
// same rows narrow, each head in whole u32 words, int8 with its scale per (position, head) in the
// word after the head's values (kernels/cache_narrow.wgsl.js); the attention kernels read them
// there (kernels/kv_reads.wgsl.js), never through a float32 copy. Capacity and the rows one pass may append:
// ringGeometry() (kv_ring.js), as the WASM core sizes its cache; the executor cuts longer steps
// into passes (cached_passes.js). K's buffer ends in one u32 flag per slot (flagsOffset, in words)
// for the NaN rule (kernels/nonfinite_rows.wgsl.js). The same interface as the core's cache
// handle: length(), reset(), delete(), isDeleted(); read() is the executor's readCache() here.
import { MemoryError } from '../base/errors.js';
import { deviceInputs } from '../base/gpu_tensors.js';
import { ringGeometry } from '../storage/kv_ring.js';
import { widenHalf } from '../storage/half_floats.js';
import { MAP_READ, Usage } from './device.js';
import { cacheHeadWords } from './kernels/cache_narrow.wgsl.js';
import { VALUES_PER_WORD, wordsOf } from './kernels/packed_values.wgsl.js';

const F32 = 4;
/** A call of at most this many rows keeps its inputs for keep() (a draft verification's few). */
export const KEEP_INPUT_ROWS = 256;

export class GpuKvCache {
  #device;
  #lengths;  // one per row: a call on some rows, or truncate(lengths), leaves them unequal
  #shape;
  lastCall = null;  // recordCall()'s
  /** Called before work of its own on the device (the executor's: a GpuBatch holding calls on it is submitted first). */
  beforeOwnWork = () => {};

  /** config: the module's; options: resolveCacheOptions()'s { batchSize, maxLength, window, dtype }. */
  constructor(device, { numKvHeads: G, headDim: dk, valueHeadDim: dv }, { batchSize, maxLength, window, dtype = 'float32' }) {
    this.#device = device;
    this.window = window;
    this.#shape = { B: batchSize, G, dk, dv };
    this.#lengths = new Array(batchSize).fill(0);
    this.dtype = dtype;
    const { capacity, rowsPerPass } = ringGeometry({ maxLength, window });
    this.capacity = capacity;
    /** The most rows one pass may append (the pass splitter, cached_passes.js, cuts at it). */
    this.maxRowsPerPass = rowsPerPass;
    // Bytes of one row of `d`-wide heads: float32 values, or whole words of narrow ones (and int8's scales).
    const rowBytes = (d) => G * cacheHeadWords(dtype, d) * 4;
    const make = (perRow, what) => {
      const bytes = batchSize * this.capacity * perRow;
      const limits = device.limits;
      if (bytes > Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize)) {
        const argument = window ? 'window' : 'maxLength';
        throw new MemoryError(`createCache: ${what} of ${bytes} bytes (batchSize ${batchSize} × ${this.capacity} positions × ${perRow} `
          + `bytes) do not fit one buffer of this WebGPU device (${Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize)} `
          + `bytes); a smaller ${argument} or batchSize`, { argument, expected: 'a cache that fits the device', actual: bytes });
      }
      // Zero-initialised, as WebGPU buffers are.
      return device.createBuffer({ size: Math.max(bytes, F32), usage: Usage.STORAGE | Usage.COPY_DST | Usage.COPY_SRC, label: `webattention cache ${what}` });
    };
    // The flags (whether a slot's K or V row holds a NaN or an infinity) in K's buffer, so that
    // every copy, clear and snapshot of K carries them.
    this.flagsOffset = batchSize * this.capacity * rowBytes(dk) / 4;
    const made = [];
    try {
      for (const [name, perRow] of [['keys', rowBytes(dk) + 4], ['values', rowBytes(dv)]]) {
        this[name] = make(perRow, name);
        made.push(this[name]);
      }
    } catch (e) {
      for (const buffer of made) buffer.destroy();
      throw e;
    }
  }

  /** The buffers the cache owns. */
  #buffers() {
    return [this.keys, this.values].filter(Boolean);
  }

  /** The longest row's positions (every row's while they are equal). */
  length() {
    return Math.max(...this.#lengths);
  }

  /** Row b's positions. */
  rowLength(b) {
    return this.#lengths[b];
  }

  /**
   * After a call whose every pass appended its rows: `count` positions to each of `rows` (an
   * Int32Array of the call's rows, or null: every row).
   */
  advance(count, rows = null) {
    for (const b of rows ?? this.#lengths.keys()) this.#lengths[b] += count;
  }

  /**
   * The last call's plan, which keep() moves rows of: its inputs are the package's own copies (a
   * GPU call takes ownedPlan()), held until the next call, reset, truncate or keep; a call of more
   * than KEEP_INPUT_ROWS rows, or one on GPU tensors, is remembered without them (keep() then keeps a
   * prefix only).
   */
  recordCall(plan) {
    const held = plan.L <= KEEP_INPUT_ROWS && deviceInputs(plan).length === 0;
    this.lastCall = held ? plan : { L: plan.L, cache: plan.cache, positionIds: null, inputs: false };
  }

  /**
   * A copy of the storage, for a call of several passes: each pass appends before attending, and
   * in a ring a pass after the first overwrites slots the call's first rows still read, so a call
   * that fails part-way puts the copy back (restore()) and leaves the cache as it was: all or
   * nothing. Queued on the device before the call's passes; discard() when they all succeeded.
   * The copies are buffers lent by the executor's pool (`pool`: { lend(role, bytes, usage),
   * giveBack(role, buffer) }), given back by restore() and discard().
   */
  snapshot(pool) {
    const device = this.#device;
    const roles = ['cache snapshot keys', 'cache snapshot values'];
    const copies = this.#buffers().map((buffer, i) => [buffer, pool.lend(roles[i], buffer.size, Usage.COPY_SRC | Usage.COPY_DST)]);
    const copy = (from) => {
      const encoder = device.createCommandEncoder({ label: 'webattention cache snapshot' });
      for (const pair of copies) {
        const [src, dst] = from === 'cache' ? pair : [pair[1], pair[0]];
        encoder.copyBufferToBuffer(src, 0, dst, 0, src.size);
      }
      device.queue.submit([encoder.finish()]);
    };
    copy('cache');
    const discard = () => copies.forEach(([, b], i) => pool.giveBack(roles[i], b));
    return {
      restore: () => {
        if (!this.isDeleted()) copy('snapshot');
        discard();
      },
      discard,
    };
  }

  /** Back to 0; the storage is zeroed as the core's is (no Inf or NaN of an old sequence stays). */
  reset() {
    this.beforeOwnWork();
    this.#lengths.fill(0);
    this.lastCall = null;
    const encoder = this.#device.createCommandEncoder({ label: 'webattention cache reset' });
    for (const buffer of this.#buffers()) encoder.clearBuffer(buffer);
    this.#device.queue.submit([encoder.finish()]);
  }

  /**
   * cache.truncate(length), or per row truncate(lengths) (kv_cache.js has checked them): the
   * lengths alone. The dropped positions'
   * slots (and their flags) are written again before any call reads them, and until then the
   * kernels give a stale slot exactly 0 (pv() in kernels/attention_common.wgsl.js) and the NaN
   * rule's post-pass never looks at its flag (the slot is after every row's last key), so nothing
   * needs clearing. Per row alike: a row's stale slots lie after its own last key, which the
   * kernels mask by its own shift (the call's row table, kernels/row_table.wgsl.js).
   */
  truncate(length) {
    if (typeof length === 'number') this.#lengths.fill(length);
    else this.#lengths = Array.from(length);
    this.lastCall = null;
  }

  /** This cache becomes a copy of `source` (a cache of the same options): a buffer copy on the device. */
  copyFrom(source) {
    source.beforeOwnWork();
    const encoder = this.#device.createCommandEncoder({ label: 'webattention cache fork' });
    const from = source.#buffers();
    this.#buffers().forEach((buffer, i) => encoder.copyBufferToBuffer(from[i], 0, buffer, 0, buffer.size));
    this.#device.queue.submit([encoder.finish()]);
    this.#lengths = source.#lengths.slice();
    this.lastCall = source.lastCall;
  }

  /**
   * cache.read() on the GPU: positions [first, first + count) of K and V, read back (the queue
   * runs this after every call submitted before it), as { key [B, G, count, dk], value [B, G,
   * count, dv] } float32 in position order: a narrow cache's values widened as its attention
   * kernels widen them (float16 exactly; int8 q · scale, a float32 product). untilLost(promise)
   * races the device's loss.
   */
  async read(first, count, untilLost) {
    const [keys, values] = await Promise.all(this.#buffers().map((buffer) => this.#readBack(buffer, untilLost)));
    return { key: this.#rows(keys, this.#shape.dk, first, count), value: this.#rows(values, this.#shape.dv, first, count) };
  }

  /** A copy of `buffer`'s bytes (an ArrayBuffer), after the work queued before it. */
  async #readBack(buffer, untilLost) {
    const readback = this.#device.createBuffer({ size: buffer.size, usage: Usage.MAP_READ | Usage.COPY_DST, label: 'webattention cache read' });
    try {
      const encoder = this.#device.createCommandEncoder({ label: 'webattention cache read' });
      encoder.copyBufferToBuffer(buffer, 0, readback, 0, buffer.size);
      this.#device.queue.submit([encoder.finish()]);
      await untilLost(readback.mapAsync(MAP_READ));
      return readback.getMappedRange().slice(0);
    } finally {
      readback.destroy();
    }
  }

  /**
   * Positions [first, first + count) of stored rows (`bytes`: [B, capacity] rows of G heads, each
   * head's d values in its own words, cache_narrow.wgsl.js's layout: for int8 the head's scale
   * in the word after its values) as float32 [B, G, count, d].
   */
  #rows(bytes, d, first, count) {
    const { B, G } = this.#shape;
    const { dtype } = this;
    const perWord = dtype === 'float32' ? 1 : VALUES_PER_WORD[dtype];
    const perHead = cacheHeadWords(dtype, d) * perWord;  // values (slots) of one head
    const stored = dtype === 'float32' ? new Float32Array(bytes)
      : dtype === 'float16' ? widenHalf('float16', new Uint16Array(bytes)) : new Int8Array(bytes);
    const scaleWords = dtype === 'int8' ? new Float32Array(bytes) : null;
    const out = new Float32Array(B * G * count * d);
    for (let b = 0; b < B; b++) {
      for (let i = 0; i < count; i++) {
        const row = b * this.capacity + (first + i) % this.capacity;
        for (let g = 0; g < G; g++) {
          const at = (row * G + g) * perHead;
          const to = ((b * G + g) * count + i) * d;
          if (scaleWords) {
            const scale = scaleWords[at / perWord + wordsOf(dtype, d)];
            for (let c = 0; c < d; c++) out[to + c] = Math.fround(stored[at + c] * scale);
          } else {
            out.set(stored.subarray(at, at + d), to);
          }
        }
      }
    }
    return { data: out, shape: [B, G, count, d] };
  }

  delete() {
    if (this.keys === null) return;
    this.beforeOwnWork();  // a GpuBatch holding a call on it submitted first, as WebGPU needs its buffers alive at the submit
    for (const buffer of this.#buffers()) buffer.destroy();
    this.keys = this.values = null;
  }

  isDeleted() {
    return this.keys === null;
  }
}
