// A KV cache's storage on the GPU (the handle kv_cache.js's KvCache holds for a module that runs
// on WebGPU): keys and values of every position appended so far, allocated once at creation and
// written in place by the cache append kernel; never re-sent, never re-created per step.
//
// Layout [B, capacity, numKvHeads·d] for K and for V: the rows the attention kernels read through
// keyRow() (position p in slot p mod capacity). A float16 or int8 cache (its dtype) stores the
// same rows narrow, each head in whole u32 words, int8 with a scale per (position, head)
// (kernels/cache_narrow.wgsl.js); a call widens the rows in use into float32 buffers of the
// float32 layout for its attention kernels (forward_encode.js). Capacity and the rows one pass may append:
// ringGeometry() (kv_ring.js), as the WASM core sizes its cache; the executor cuts longer steps
// into passes (cached_passes.js). The same interface as the core's cache handle: length(),
// reset(), delete(), isDeleted().
import { MemoryError } from '../errors.js';
import { ringGeometry } from '../kv_ring.js';
import { Usage } from './device.js';
import { wordsPerHead } from './kernels/cache_narrow.wgsl.js';

const F32 = 4;

export class GpuKvCache {
  #device;
  #length = 0;

  /** config: the module's; options: resolveCacheOptions()'s { batchSize, maxLength, window, dtype }. */
  constructor(device, { numKvHeads: G, headDim: dk, valueHeadDim: dv }, { batchSize, maxLength, window, dtype = 'float32' }) {
    this.#device = device;
    this.window = window;
    this.dtype = dtype;
    const { capacity, rowsPerPass } = ringGeometry({ maxLength, window });
    this.capacity = capacity;
    /** The most rows one pass may append (the pass splitter, cached_passes.js, cuts at it). */
    this.maxRowsPerPass = rowsPerPass;
    // Bytes of one row of `d`-wide heads: float32 values, or whole words of narrow ones.
    const rowBytes = (d) => (dtype === 'float32' ? G * d * F32 : G * wordsPerHead(dtype, d) * 4);
    const make = (perRow, what) => {
      const bytes = batchSize * this.capacity * perRow;
      const limits = device.limits;
      if (bytes > Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize)) {
        throw new MemoryError(`createCache: ${what} of ${bytes} bytes do not fit one buffer of this WebGPU device `
          + `(${Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize)} bytes)`, {
          argument: 'maxLength', expected: 'a cache that fits the device', actual: bytes,
        });
      }
      // Zero-initialised, as WebGPU buffers are.
      return device.createBuffer({ size: Math.max(bytes, F32), usage: Usage.STORAGE | Usage.COPY_DST | Usage.COPY_SRC, label: `webattention cache ${what}` });
    };
    const made = [];
    try {
      for (const [name, perRow] of [['keys', rowBytes(dk)], ['values', rowBytes(dv)],
        ...(dtype === 'int8' ? [['keyScales', G * F32], ['valueScales', G * F32]] : [])]) {
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
    return [this.keys, this.values, this.keyScales, this.valueScales].filter(Boolean);
  }

  length() {
    return this.#length;
  }

  /** After a call whose every pass appended its rows: `rows` positions in all. */
  advance(rows) {
    this.#length += rows;
  }

  /**
   * A copy of the storage, for a call of several passes: each pass appends before attending, and
   * in a ring a pass after the first overwrites slots the call's first rows still read, so a call
   * that fails part-way puts the copy back (restore()) and leaves the cache as it was: all or
   * nothing. Queued on the device before the call's passes; discard() when they all succeeded.
   */
  snapshot() {
    const device = this.#device;
    const copies = [this.keys, this.values].map((buffer) => [buffer, device.createBuffer({
      size: buffer.size, usage: Usage.COPY_SRC | Usage.COPY_DST, label: 'webattention cache snapshot',
    })]);
    const copy = (from) => {
      const encoder = device.createCommandEncoder({ label: 'webattention cache snapshot' });
      for (const pair of copies) {
        const [src, dst] = from === 'cache' ? pair : [pair[1], pair[0]];
        encoder.copyBufferToBuffer(src, 0, dst, 0, src.size);
      }
      device.queue.submit([encoder.finish()]);
    };
    copy('cache');
    const discard = () => copies.forEach(([, b]) => b.destroy());
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
    this.#length = 0;
    const encoder = this.#device.createCommandEncoder({ label: 'webattention cache reset' });
    for (const buffer of this.#buffers()) encoder.clearBuffer(buffer);
    this.#device.queue.submit([encoder.finish()]);
  }

  delete() {
    if (this.keys === null) return;
    for (const buffer of this.#buffers()) buffer.destroy();
    this.keys = this.values = this.keyScales = this.valueScales = null;
  }

  isDeleted() {
    return this.keys === null;
  }
}
