// The 'gpu-buffer' results of a cached call cut into passes (cached_passes.js) put together on the
// device: each pass's output rows, and its weight rows (over the keys up to its own last row, the
// rest of the call's row left 0), copied into buffers made for the caller (the output into the
// call's `out` where it has one), in one submit; the passes' own result buffers are then
// destroyed. Nothing is read back.
import { GpuTensor, RESULT_USAGE } from './gpu_tensor.js';
import { ELEMENT_BYTES, gpuResultDtype } from '../base/gpu_tensors.js';

/**
 * Why mergeOnDevice() cannot put `passes`' results together on a device of `limits`, or null: a
 * result over maxBufferSize, or (float16 results) a copy that would not start and end on a 4-byte
 * word (WebGPU copies words): an odd output width or weight row. perBatch: as mergeOnDevice()'s.
 */
export function mergeRefusal(plan, passes, { E, perBatch }, limits) {
  const unit = ELEMENT_BYTES[gpuResultDtype(plan)];
  const { B, L, T } = plan;
  if (Math.max(B * L * E, B * perBatch * L * T) * unit > limits.maxBufferSize) return 'results over the device\'s largest buffer';
  if (unit === 4) return null;
  const even = E % 2 === 0 && (!perBatch || (T % 2 === 0 && passes.every((pass) => pass.T % 2 === 0)));
  return even ? null : 'float16 results need even widths';
}

/**
 * device: the passes' device; plan: the call; passes: cachedPasses()'s, each with firstRow, L and
 * T; results: their { output, weights } GpuTensors; E: the output's width, perBatch: weight rows
 * per batch row (0 without weights, 1 averaged, else the heads). Resolves to the call's { output,
 * weights } GpuTensors.
 */
export async function mergeOnDevice(device, { plan, passes, results, E, perBatch }) {
  const { B, L, T } = plan;
  const dtype = gpuResultDtype(plan);
  const unit = ELEMENT_BYTES[dtype];
  const made = (elements, what) => device.createBuffer({ size: Math.max(4, Math.ceil(elements * unit / 4) * 4), usage: RESULT_USAGE, label: `webattention ${what}` });
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  const place = plan.deviceOut ?? null;  // the caller's out: the output's rows go there
  const output = place ? place.gpuBuffer : made(B * L * E, 'output');
  const at = place ? place.byteOffset : 0;
  const weights = perBatch ? made(B * perBatch * L * T, 'weights') : null;
  const encoder = device.createCommandEncoder({ label: 'webattention pass merge' });
  results.forEach(({ output: part, weights: partWeights }, p) => {
    const { firstRow, L: Lp, T: Tp } = passes[p];
    for (let b = 0; b < B; b++) {
      encoder.copyBufferToBuffer(part.gpuBuffer, b * Lp * E * unit, output, at + (b * L + firstRow) * E * unit, Lp * E * unit);
    }
    for (let bh = 0; bh < B * perBatch; bh++) {
      for (let i = 0; i < Lp; i++) {
        encoder.copyBufferToBuffer(partWeights.gpuBuffer, (bh * Lp + i) * Tp * unit, weights, ((bh * L + firstRow + i) * T) * unit, Tp * unit);
      }
    }
  });
  device.queue.submit([encoder.finish()]);
  const scopes = [device.popErrorScope(), device.popErrorScope()];  // popped before any await
  const error = (await Promise.all(scopes)).find(Boolean);
  for (const r of results) disposeResult(r);
  if (error) {
    if (!place) output.destroy();
    weights?.destroy();
    throw new Error(`${error.constructor?.name ?? 'GPUError'} putting the passes' results together: ${error.message}`);
  }
  return {
    output: new GpuTensor(device, output, [...plan.outputShape], null, dtype, place),
    weights: weights ? new GpuTensor(device, weights, [...plan.weightsShape], null, dtype) : null,
  };
}

/** A pass's 'gpu-buffer' results given back (a merged call's, or a failed call's passes). */
export function disposeResult({ output, weights }) {
  output.dispose();
  weights?.dispose();
}
