// What the GPU-tensor tests share (node_gpu_tensors, node_gpu_tensor_buffers, node_gpu_batch,
// node_gpu_half_inputs, node_sdpa, node_cache_device_passes): the module's widths,
// GPUBufferUsage's numbers (Node has no such global) and GPU tensors made from host data on the
// test device (node_setup.mjs).
import { filled } from '../contract/contract.mjs';
import { device } from './node_setup.mjs';

export const E = 16;
export const create = { embedDim: E, numHeads: 2, backend: 'webgpu' };
export const STORAGE = 0x80;
export const COPY_SRC = 0x4;
export const COPY_DST = 0x8;
export const MAP_READ = 0x1;

/** A GPU tensor of `data` on `on` (usage STORAGE | COPY_SRC | COPY_DST unless told). */
export function gpuTensor(data, shape, { on = device, usage = STORAGE | COPY_SRC | COPY_DST } = {}) {
  const gpuBuffer = on.createBuffer({ size: data.byteLength, usage, mappedAtCreation: true });
  new Float32Array(gpuBuffer.getMappedRange()).set(data);
  gpuBuffer.unmap();
  return { gpuBuffer, shape, dtype: 'float32' };
}
/** A float16 GPU tensor of `bits` (a Uint16Array) on `on`: whole words, the last half-word zero. */
export function halfGpuTensor(bits, shape, { on = device, usage = STORAGE | COPY_SRC | COPY_DST } = {}) {
  const gpuBuffer = on.createBuffer({ size: Math.ceil(bits.length / 2) * 4, usage, mappedAtCreation: true });
  new Uint16Array(gpuBuffer.getMappedRange()).set(bits);
  gpuBuffer.unmap();
  return { gpuBuffer, shape, dtype: 'float16' };
}
/** Seeded host input [B, rows, E]. */
export const host = (rows, seed, B = 1) => ({ data: filled(B * rows * E, seed), shape: [B, rows, E] });
/** A host tensor's values as a GPU tensor. */
export const onGpu = (t) => gpuTensor(t.data, t.shape);
