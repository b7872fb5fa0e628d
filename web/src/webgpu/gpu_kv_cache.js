// A KV cache's storage on the GPU (the handle kv_cache.js's KvCache holds for a module that runs
// on WebGPU): keys and values of every position appended so far, allocated once at creation and
// written in place by the cache append kernel; never re-sent, never re-created per step.
//
// Layout [B, capacity, numKvHeads·d] for K and for V: the rows the attention kernels read through
// keyRow() (position p in slot p mod capacity). Capacity and the rows one pass may append:
// ringGeometry() (kv_ring.js), as the WASM core sizes its cache; the executor cuts longer steps
// into passes (cached_passes.js). The same interface as the core's cache handle: length(),
// reset(), delete(), isDeleted().
import { MemoryError } from '../errors.js';
import { ringGeometry } from '../kv_ring.js';
import { Usage } from './device.js';

const F32 = 4;

export class GpuKvCache {
  #device;
  #length = 0;

  /** config: the module's; options: resolveCacheOptions()'s { batchSize, maxLength, window }. */
  constructor(device, { numKvHeads: G, headDim: dk, valueHeadDim: dv }, { batchSize, maxLength, window }) {
    this.#device = device;
    this.window = window;
    const { capacity, rowsPerPass } = ringGeometry({ maxLength, window });
    this.capacity = capacity;
    /** The most rows one pass may append (the pass splitter, cached_passes.js, cuts at it). */
    this.maxRowsPerPass = rowsPerPass;
    const make = (width, what) => {
      const bytes = batchSize * this.capacity * width * F32;
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
    this.keys = make(G * dk, 'keys');
    try {
      this.values = make(G * dv, 'values');
    } catch (e) {
      this.keys.destroy();
      throw e;
    }
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
    encoder.clearBuffer(this.keys);
    encoder.clearBuffer(this.values);
    this.#device.queue.submit([encoder.finish()]);
  }

  delete() {
    this.keys?.destroy();
    this.values?.destroy();
    this.keys = this.values = null;
  }

  isDeleted() {
    return this.keys === null;
  }
}
