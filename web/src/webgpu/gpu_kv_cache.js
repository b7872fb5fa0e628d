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
      return device.createBuffer({ size: Math.max(bytes, F32), usage: Usage.STORAGE | Usage.COPY_DST, label: `webattention cache ${what}` });
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

  /** After a pass that appended `rows` positions. */
  advance(rows) {
    this.#length += rows;
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
