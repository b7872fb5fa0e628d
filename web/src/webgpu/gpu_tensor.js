// GPU-resident tensors on the executor's side: forward()'s results as GpuTensors (output:
// 'gpu-buffer': a buffer of the caller's, read back only by read()), and the typed error of a call
// whose GPU input WebGPU refused at the submit (destroyed, or of another device: only the device
// can tell), found by trying each input alone.
import { BackendError, DisposedError } from '../base/errors.js';
import { deviceBytes, deviceInputs, deviceTensors, gpuResultDtype } from '../base/gpu_tensors.js';
import { roundToHalf } from '../storage/half_floats.js';
import { MAP_READ, Usage } from './device.js';

/** Usage of a result buffer: bound by the kernels, copied by read() and by a next module's call. */
export const RESULT_USAGE = Usage.STORAGE | Usage.COPY_SRC | Usage.COPY_DST;

/**
 * A tensor in a GPUBuffer the caller owns: { gpuBuffer, shape, dtype: 'float32' | 'float16' (its
 * bits, two to a word: gpu_tensors.js deviceBytes()), byteOffset, read(), dispose() }. Valid as an
 * input of any module on the same device. `place` (a call's `out`: checkGpuOut()'s DeviceData): the
 * tensor is that place in the caller's own buffer, which dispose() leaves alone.
 */
export class GpuTensor {
  #device;
  #disposed = false;
  #pending;  // a batched call's: { submitted() (submits its batch if need be), after(fn) (fn once it was) }
  #owned;    // whether dispose() destroys the buffer (made for the result), or leaves it (the caller's out)

  constructor(device, gpuBuffer, shape, pending = null, dtype = 'float32', place = null) {
    this.#device = device;
    this.#pending = pending;
    this.#owned = place === null;
    this.gpuBuffer = place?.gpuBuffer ?? gpuBuffer;
    this.byteOffset = place?.byteOffset ?? 0;
    this.shape = shape;
    this.dtype = dtype;
  }

  /** Whether the buffer was made for this result (dispose() destroys it), not the caller's `out`. */
  get owned() {
    return this.#owned;
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
      encoder.copyBufferToBuffer(this.gpuBuffer, this.byteOffset, staging, 0, bytes);
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
   * call of the batch may read it). A tensor in the caller's `out` buffer is only marked disposed.
   */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    if (!this.#owned) return;
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

/** Before a call (of `plan.batch`, or none) encodes: the other batches its GPU inputs (and `out`) wait for, submitted. */
export function flushPendingInputs(plan) {
  // `out` too: a batch's result written there later would overwrite this call's output.
  for (const { gpuBuffer } of deviceTensors(plan)) {
    const pending = pendingResults.get(gpuBuffer);
    if (pending && pending.batch !== plan.batch) {
      pendingResults.delete(gpuBuffer);
      pending.flush();
    }
  }
}

/**
 * A host Float32Array put into a new result buffer (a 'gpu-buffer' call that computed on the
 * CPU), or into `place` (the call's `out`: written by the queue, ahead of later submits), as float16
 * bits rounded as the host rounds them where dtype says so.
 */
function uploadedTensor(device, data, shape, dtype = 'float32', place = null) {
  const bytes = deviceBytes(dtype, data.length);
  const fill = (range) => {
    if (dtype === 'float16') roundToHalf('float16', data, new Uint16Array(range, 0, data.length));
    else new Float32Array(range, 0, data.length).set(data);
  };
  if (place) {
    const words = new ArrayBuffer(bytes);
    fill(words);
    device.queue.writeBuffer(place.gpuBuffer, place.byteOffset, words);
    return new GpuTensor(device, null, shape, null, dtype, place);
  }
  const gpuBuffer = device.createBuffer({ size: Math.max(bytes, 4), usage: RESULT_USAGE, mappedAtCreation: true, label: 'webattention result' });
  fill(gpuBuffer.getMappedRange(0, bytes));
  gpuBuffer.unmap();
  return new GpuTensor(device, gpuBuffer, shape, null, dtype);
}

/**
 * A 'gpu-buffer' call's CPU result ({ output, weights } arrays) put into new buffers as GpuTensors,
 * the output into the call's `out` where it has one: resolves to { output, weights }, or rejects
 * with refusedInput()'s BackendError naming `out` when WebGPU refused the write (destroyed, or of
 * another device).
 */
export async function uploadedResults(device, { output, weights }, plan) {
  const dtype = gpuResultDtype(plan);
  const place = plan.deviceOut ?? null;
  // Only a write into the caller's buffer can be refused: buffers made here take theirs.
  if (place) device.pushErrorScope('validation');
  const result = {
    output: uploadedTensor(device, output, [...plan.outputShape], dtype, place),
    weights: weights ? uploadedTensor(device, weights, [...plan.weightsShape], dtype) : null,
  };
  const error = place ? await device.popErrorScope() : null;
  if (!error) return result;
  result.weights?.dispose();
  throw (await refusedInput(device, plan)) ?? new BackendError(`output: WebGPU refused the result's write (${error.message})`, {
    argument: 'output', expected: 'work WebGPU accepts', actual: error.message,
  });
}

/**
 * After a call whose submit WebGPU refused: a BackendError naming the first GPU input of `plan`
 * (or its `out`) that a copy alone on `device` is refused for (destroyed, or of another device),
 * else null.
 */
export async function refusedInput(device, plan) {
  // A copy is the probe, so only an input with COPY_SRC can be tried (a STORAGE-only one, bound
  // as it is, is left to the caller's generic error); `out` (COPY_DST) by a copy of no bytes into
  // it, which WebGPU validates as any other and which writes nothing.
  const inputs = [...new Set(deviceInputs(plan).filter((d) => d.gpuBuffer.usage & Usage.COPY_SRC))];
  const probes = [
    ...inputs.map((data) => [data, 'read', (encoder, probe) => encoder.copyBufferToBuffer(data.gpuBuffer, data.byteOffset, probe, 0, 4)]),
    ...(plan.deviceOut ? [[plan.deviceOut, 'write', (encoder, probe) => encoder.copyBufferToBuffer(probe, 0, plan.deviceOut.gpuBuffer, plan.deviceOut.byteOffset, 0)]] : []),
  ];
  if (probes.length === 0) return null;
  const probe = device.createBuffer({ size: 4, usage: Usage.COPY_DST | Usage.COPY_SRC, label: 'webattention buffer probe' });
  try {
    for (const [data, verb, copy] of probes) {
      device.pushErrorScope('validation');
      const encoder = device.createCommandEncoder();
      copy(encoder, probe);
      device.queue.submit([encoder.finish()]);
      const error = await device.popErrorScope();
      if (error) {
        return new BackendError(`${data.argument}.gpuBuffer: WebGPU refused to ${verb} it (destroyed, or of another device than `
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
