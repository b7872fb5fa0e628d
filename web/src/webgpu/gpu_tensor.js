// GPU-resident tensors on the executor's side: forward()'s results as GpuTensors (output:
// 'gpu-buffer': a buffer of the caller's, read back only by read()), and the typed error of a call
// whose GPU input WebGPU refused at the submit (destroyed, or of another device: only the device
// can tell), found by trying each input alone.
import { BackendError, DisposedError } from '../base/errors.js';
import { deviceBytes, deviceInputs } from '../base/gpu_tensors.js';
import { roundToHalf } from '../storage/half_floats.js';
import { MAP_READ, Usage } from './device.js';

/** Usage of a result buffer: bound by the kernels, copied by read() and by a next module's call. */
export const RESULT_USAGE = Usage.STORAGE | Usage.COPY_SRC | Usage.COPY_DST;

/**
 * A tensor in a GPUBuffer the caller owns: { gpuBuffer, shape, dtype: 'float32' | 'float16' (its
 * bits, two to a word: gpu_tensors.js deviceBytes()), read(), dispose() }. Valid as an input of
 * any module on the same device.
 */
export class GpuTensor {
  #device;
  #disposed = false;
  #pending;  // a batched call's: { submitted() (submits its batch if need be), after(fn) (fn once it was) }

  constructor(device, gpuBuffer, shape, pending = null, dtype = 'float32') {
    this.#device = device;
    this.#pending = pending;
    this.gpuBuffer = gpuBuffer;
    this.shape = shape;
    this.dtype = dtype;
  }

  /**
   * Resolves to the values: a Float32Array, or a float16 tensor's bits as a Uint16Array (one copy
   * to a mappable buffer, then the map).
   */
  async read() {
    if (this.#disposed) throw new DisposedError('GpuTensor.read: the tensor was disposed');
    // A batched call's values exist from its batch's submit on (a refused batch rejects here).
    if (this.#pending) await this.#pending.submitted();
    if (this.#disposed) throw new DisposedError('GpuTensor.read: the tensor was disposed');
    const count = this.shape.reduce((a, b) => a * b, 1);
    const bytes = deviceBytes(this.dtype, count);
    const staging = this.#device.createBuffer({ size: Math.max(bytes, 4), usage: Usage.MAP_READ | Usage.COPY_DST, label: 'webattention read()' });
    try {
      const encoder = this.#device.createCommandEncoder({ label: 'webattention read()' });
      encoder.copyBufferToBuffer(this.gpuBuffer, 0, staging, 0, bytes);
      this.#device.queue.submit([encoder.finish()]);
      await staging.mapAsync(MAP_READ, 0, Math.max(bytes, 4));
      const copied = staging.getMappedRange(0, bytes).slice(0);
      return this.dtype === 'float16' ? new Uint16Array(copied, 0, count) : new Float32Array(copied);
    } catch (e) {
      throw new BackendError(`GpuTensor.read: the copy back failed (${e?.message ?? e})`, {
        argument: 'tensor', expected: 'a live buffer on a working device', actual: e?.message ?? String(e),
      });
    } finally {
      staging.destroy();
    }
  }

  /**
   * Destroys the buffer (again: nothing); a batched call's once its batch was submitted (a later
   * call of the batch may read it).
   */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    const { gpuBuffer } = this;
    if (this.#pending) this.#pending.after(() => gpuBuffer.destroy());
    else gpuBuffer.destroy();
  }
}

// A batched call's result buffer → { batch, flush() }: a call outside that batch that reads it
// submits the batch first (flushPendingInputs()), else its own submit would run before the values
// are written.
const pendingResults = new WeakMap();

/** Records that `buffers` are written by work `batch` holds until flush() submits it. */
export function markPending(buffers, batch, flush) {
  for (const b of buffers) pendingResults.set(b, { batch, flush });
}

/** Before a call (of `plan.batch`, or none) encodes: the other batches its GPU inputs wait for, submitted. */
export function flushPendingInputs(plan) {
  for (const { gpuBuffer } of deviceInputs(plan)) {
    const pending = pendingResults.get(gpuBuffer);
    if (pending && pending.batch !== plan.batch) {
      pendingResults.delete(gpuBuffer);
      pending.flush();
    }
  }
}

/**
 * A host Float32Array put into a new result buffer (a 'gpu-buffer' call that computed on the
 * CPU), as float16 bits rounded as the host rounds them where dtype says so.
 */
export function uploadedTensor(device, data, shape, dtype = 'float32') {
  const bytes = deviceBytes(dtype, data.length);
  const gpuBuffer = device.createBuffer({ size: Math.max(bytes, 4), usage: RESULT_USAGE, mappedAtCreation: true, label: 'webattention result' });
  const range = gpuBuffer.getMappedRange(0, bytes);
  if (dtype === 'float16') roundToHalf('float16', data, new Uint16Array(range, 0, data.length));
  else new Float32Array(range).set(data);
  gpuBuffer.unmap();
  return new GpuTensor(device, gpuBuffer, shape, null, dtype);
}

/**
 * After a call whose submit WebGPU refused: a BackendError naming the first GPU input of `plan`
 * that a copy alone on `device` is refused for (destroyed, or of another device), else null.
 */
export async function refusedInput(device, plan) {
  // A copy is the probe, so only a buffer with COPY_SRC can be tried (a STORAGE-only one, bound
  // as it is, is left to the caller's generic error).
  const inputs = [...new Set(deviceInputs(plan).filter((d) => d.gpuBuffer.usage & Usage.COPY_SRC))];
  if (inputs.length === 0) return null;
  const probe = device.createBuffer({ size: 4, usage: Usage.COPY_DST, label: 'webattention input probe' });
  try {
    for (const data of inputs) {
      device.pushErrorScope('validation');
      const encoder = device.createCommandEncoder();
      encoder.copyBufferToBuffer(data.gpuBuffer, data.byteOffset, probe, 0, 4);
      device.queue.submit([encoder.finish()]);
      const error = await device.popErrorScope();
      if (error) {
        return new BackendError(`${data.argument}.gpuBuffer: WebGPU refused to read it (destroyed, or of another device than `
          + `the module's: pass your GPUDevice as create()'s \`gpu\`): ${error.message}`, {
          argument: data.argument, expected: "a live GPUBuffer on the module's device", actual: error.message,
        });
      }
    }
    return null;
  } finally {
    probe.destroy();
  }
}
