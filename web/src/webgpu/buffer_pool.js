// One executor's per-call buffers (webgpu_executor.js; its inputs' staging buffers too,
// staging_uploads.js): a buffer per role ('q', 'kv', 'heads',
// 'output', 'uniforms', 'readback', …), made at a call that needs it, reused by later calls,
// replaced by a bigger one when a call needs more, and freed when calls stop needing its size.
// Why the last: one long prefill through a 24-layer model left each layer's module holding
// buffers of that prefill's size (hundreds of MB at 16k tokens) for as long as the modules lived.
// Every TRIM_CALLS calls the pool looks back: a buffer more than TRIM_RATIO times the most any of
// those calls asked of it (or that none of them used) is freed, and made again at its new size
// when a call needs it. Buffers lent out (lend()) and a GpuBatch's recorded work are never
// trimmed under (the executor calls afterCall() only when no batch holds its work).
import { Usage, reusableSize } from './device.js';

const F32 = 4;
/** Calls between the pool's looks at what its buffers are used for. */
export const TRIM_CALLS = 8;
/** A buffer more than this many times the most those calls asked of it is freed. */
export const TRIM_RATIO = 4;
/** Needs under this many bytes count as this many (small buffers are not worth remaking). */
const SMALL_BYTES = 1 << 16;

// Whether a pool entry ({ bytes, need }) is worth freeing: far larger than its recent need.
const oversized = ({ bytes, need }) => bytes > TRIM_RATIO * Math.max(need, SMALL_BYTES);

export class BufferPool {
  #device;
  #entries = new Map();  // role → { buffer, bytes, usage, need (the most asked since the last look) }
  #lent = new Map();     // a lent buffer → its entry, until given back
  #closed;               // () => whether the executor is gone (disposed or lost)
  #mapped;               // buffers made mapped (staging_uploads.js's MAP_WRITE ones)
  #calls = 0;

  /** closed: () => whether the executor is gone; mappedAtCreation: new buffers are made mapped. */
  constructor(device, closed, { mappedAtCreation = false } = {}) {
    this.#device = device;
    this.#closed = closed;
    this.#mapped = mappedAtCreation;
  }

  /**
   * The buffer of `role`, at least `floats` floats, created (or replaced by a bigger one: next
   * power of two, at least 256 bytes, within the device's limits; `exact`: that size) when needed.
   */
  take(role, floats, usage, exact = false) {
    const bytes = Math.max(floats, 1) * F32;
    let entry = this.#entries.get(role);
    if (!entry || entry.bytes < bytes || entry.usage !== usage) {
      entry?.buffer.destroy();
      const limits = this.#device.limits;
      let cap = (usage & Usage.STORAGE) ? Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize) : limits.maxBufferSize;
      cap -= cap % F32;
      const size = exact ? bytes : reusableSize(bytes, cap);
      const buffer = this.#device.createBuffer({ size, usage, mappedAtCreation: this.#mapped, label: `webattention ${role}` });
      entry = { buffer, bytes: size, usage, need: 0 };
      this.#entries.set(role, entry);
    }
    entry.need = Math.max(entry.need, bytes);
    return entry.buffer;
  }

  /**
   * The buffer of `role` (`bytes`, exactly, when made now: a cache's copy can be large), taken out
   * of the pool for a caller that holds it across passes (GpuKvCache.snapshot()): a failed pass
   * releases the pool, and a lent buffer must outlive that until giveBack().
   */
  lend(role, bytes, usage) {
    const buffer = this.take(role, Math.ceil(bytes / F32), usage, true);
    this.#lent.set(buffer, this.#entries.get(role));
    this.#entries.delete(role);
    return buffer;
  }

  /** A lent buffer back (destroyed instead when the executor is gone, or the role has a buffer again). */
  giveBack(role, buffer) {
    const entry = this.#lent.get(buffer);
    this.#lent.delete(buffer);
    if (this.#closed() || this.#entries.has(role) || !entry) {
      buffer.destroy();
      return;
    }
    this.#entries.set(role, entry);
  }

  /** After a call whose work no GpuBatch holds: every TRIM_CALLS calls, the oversized buffers freed. */
  afterCall() {
    if (++this.#calls % TRIM_CALLS !== 0) return;
    for (const [role, entry] of this.#entries) {
      if (oversized(entry)) {
        entry.buffer.destroy();
        this.#entries.delete(role);
      }
      entry.need = 0;
    }
  }

  /** Bytes held by the pool's buffers (tests, gpuProfile()). */
  get bytes() {
    return [...this.#entries.values()].reduce((n, e) => n + e.bytes, 0);
  }

  /** Frees every buffer held (lent ones stay with their holder). */
  release() {
    for (const { buffer } of this.#entries.values()) buffer.destroy();
    this.#entries.clear();
  }
}
