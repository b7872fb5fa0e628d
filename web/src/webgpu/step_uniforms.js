// The uniform slots of a GpuStep's calls (dispatch/gpu_step.js) in buffers of the step, written
// with one queue.writeBuffer() a buffer at each of the step's submits, rather than a write a call
// into each module's own uniforms buffer: a replayed decode layer's write was 1.4 µs hot and 8–10
// µs cold on SwiftShader's Dawn, and all it changes is the cache's length in a few words
// (step_tape.js patches them in the region's bytes here).
//
// Each kept call has its region for good (a call encoded again at a later token reuses it where it
// fits), so one call's slots never overwrite another's in the same submit. The writes are the
// queue's: they land after the work submitted before them and before the submit they precede, so
// the GPU still running the last token reads that token's values.
import { Usage } from './device.js';
import { UNIFORM_SLOT } from './encoding_context.js';

// Bytes of a buffer of regions: 256 slots (a region larger than that has a buffer of its own).
const CHUNK_BYTES = 256 * UNIFORM_SLOT;

export class StepUniforms {
  #device;
  #chunks = [];  // { buffer, bytes (ArrayBuffer: what it holds), used, dirty }

  constructor(device) {
    this.#device = device;
  }

  /**
   * A region of `bytes` (a multiple of UNIFORM_SLOT): { buffer, offset, packed (a Uint8Array of
   * its bytes, which the next flush() writes), touch() (marks them changed) }.
   */
  region(bytes) {
    let chunk = this.#chunks.find((c) => c.bytes.byteLength - c.used >= bytes);
    if (!chunk) {
      const size = Math.max(CHUNK_BYTES, bytes);
      const label = 'webattention step uniforms';
      chunk = { buffer: this.#device.createBuffer({ size, usage: Usage.UNIFORM | Usage.COPY_DST, label }), bytes: new ArrayBuffer(size), used: 0, dirty: false };
      this.#chunks.push(chunk);
    }
    const offset = chunk.used;
    chunk.used += bytes;
    return { buffer: chunk.buffer, offset, packed: new Uint8Array(chunk.bytes, offset, bytes), touch: () => { chunk.dirty = true; } };
  }

  /** Writes each buffer whose regions changed since the last flush (before a submit). */
  flush() {
    for (const chunk of this.#chunks) {
      if (!chunk.dirty) continue;
      this.#device.queue.writeBuffer(chunk.buffer, 0, chunk.bytes, 0, chunk.used);
      chunk.dirty = false;
    }
  }

  /** Destroys the buffers (work submitted before still reads them: WebGPU frees them after it). */
  destroy() {
    for (const chunk of this.#chunks.splice(0)) chunk.buffer.destroy();
  }
}
