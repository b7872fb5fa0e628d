// Uploads through the module's own staging buffers instead of queue.writeBuffer()
// (transferModes.staging). Why: Dawn stages a writeBuffer() through a ring
// of a few MiB and, for a larger write, through a staging buffer made for that write alone, so
// a call with a 6–48 MiB input may allocate and fault in that much host memory every time. Here
// each input role keeps a MAP_WRITE staging buffer: made mapped (mappedAtCreation) the first
// time, filled and unmapped in the call, copied into the input buffer by the call's command
// encoder, and mapped again (mapAsync) once the call is done, for the next call. A call that
// finds it still mapping (or too small) falls back to writeBuffer().
//
// transferModes.prefault: the call allocates its result arrays and touches their pages while the
// GPU works (forward_pass.js), instead of allocating them after the readback is mapped.
//
// Both are on ('auto') for transfers of TRANSFER_AUTO_BYTES and more. Measured on an H100
// (bench/gpu/gpu.mjs, second run): with both, (2048, 768, 12) 8.6 → 4.6 ms host to host, (4096, 1024,
// 16) 26.8 → 16.9 ms, (16384, 768, 12) 157 → 110 ms (writeBuffer() ran at ~2 GB/s there; the
// staging copy at ~10); at (128, 512, 8), 256 KiB each way, they cost 0.08 ms, hence the size.

import { MAP_WRITE, Usage } from './device.js';
import { BufferPool } from './buffer_pool.js';

/** Each option: true, false, or 'auto' (on from TRANSFER_AUTO_BYTES). Tests and the bench set them. */
export const transferModes = { staging: 'auto', prefault: 'auto' };

/** Bytes (of an input, or of the result) from which an 'auto' option is on. */
export const TRANSFER_AUTO_BYTES = 1 << 20;

/** Whether option `name` of transferModes applies to a transfer of `bytes`. */
export function transferOn(name, bytes) {
  const mode = transferModes[name];
  return mode === true || (mode === 'auto' && bytes >= TRANSFER_AUTO_BYTES);
}


export class StagingUploads {
  // role → buffer (MAP_WRITE | COPY_SRC, made mapped): grown and trimmed by the per-call buffers' rules.
  #pool;
  #used = [];  // buffers of the call in progress, mapped again by rearm()

  constructor(device) {
    this.#pool = new BufferPool(device, () => false, { mappedAtCreation: true });
  }

  /**
   * Writes `data` into `target` through the role's staging buffer, recording the copy on
   * `encoder`; false (nothing done) when that buffer is not mapped and ready.
   */
  write(encoder, role, data, target) {
    const bytes = data.byteLength;
    const staging = this.reserve(role, bytes);
    if (staging.mapState !== 'mapped') return false;
    new Uint8Array(staging.getMappedRange(0, bytes + (4 - (bytes % 4)) % 4)).set(new Uint8Array(data.buffer, data.byteOffset, bytes));
    staging.unmap();
    encoder.copyBufferToBuffer(staging, 0, target, 0, bytes);
    this.#used.push(staging);
    return true;
  }

  /** The staging buffer of `role`, made (mapped) where it is missing or smaller than `bytes`. */
  reserve(role, bytes) {
    return this.#pool.take(`staging ${role}`, Math.ceil(bytes / 4), Usage.MAP_WRITE | Usage.COPY_SRC);
  }

  /** Maps the call's staging buffers again for the next call (after its work was submitted). */
  rearm() {
    for (const staging of this.#used) staging.mapAsync(MAP_WRITE).catch(() => {});
    this.#used = [];
  }

  /** After a call: the staging buffers far larger than recent calls' needs freed (BufferPool.afterCall()). */
  afterCall() {
    this.#pool.afterCall();
  }

  /** Bytes the staging buffers hold. */
  get bytes() {
    return this.#pool.bytes;
  }

  destroy() {
    this.#pool.release();
    this.#used = [];
  }
}
