// GPU-resident inputs of forward(): a caller's { gpuBuffer, shape, dtype } checked into a
// DeviceData, which a plan carries in place of a Float32Array (query, key, value). Only what can
// be seen without the device is checked here: the buffer's kind, size, usage and map state. Which
// device it is on, and whether it was destroyed, WebGPU tells only when the call's work is
// submitted (webgpu/gpu_tensor.js names the argument then). Here, not in webgpu/: the checks
// layer reads it, and the Node entry must not load the GPU code to check a call.
import { DTypeError, ShapeError, describe, formatShape } from './errors.js';

// GPUBufferUsage's numbers (Node has no GPUBufferUsage global unless the app sets one).
const COPY_SRC = 0x4;
const STORAGE = 0x80;
const USAGE_NAMES = { 0x1: 'MAP_READ', 0x2: 'MAP_WRITE', 0x4: 'COPY_SRC', 0x8: 'COPY_DST', 0x10: 'INDEX', 0x20: 'VERTEX',
  0x40: 'UNIFORM', 0x80: 'STORAGE', 0x100: 'INDIRECT', 0x200: 'QUERY_RESOLVE' };

/** A GPUBuffer's usage flags by name ('STORAGE | COPY_SRC'). */
export const usageNames = (usage) => Object.entries(USAGE_NAMES).filter(([bit]) => usage & Number(bit)).map(([, n]) => n).join(' | ') || 'none';

/** A GPU tensor's dtypes: float32, or float16 bits (widened on the device, exactly). */
export const GPU_INPUT_DTYPES = ['float32', 'float16'];

/**
 * The bytes `length` elements of `dtype` take in a GPU buffer: 4 each for float32; for float16 2
 * each, rounded up to whole 4-byte words (WebGPU binds and copies words: an odd count's last word
 * holds one half and 2 bytes of padding, which the buffer must have).
 */
export const deviceBytes = (dtype, length) => (dtype === 'float16' ? Math.ceil(length / 2) * 4 : length * 4);

/**
 * A checked GPU input: `length` elements of `dtype` (GPU_INPUT_DTYPES) of `gpuBuffer` from
 * element `offset` (what the kernels read, a float16 one once widened).
 */
export class DeviceData {
  constructor(argument, gpuBuffer, offset, length, dtype = 'float32') {
    this.argument = argument;
    this.gpuBuffer = gpuBuffer;
    this.offset = offset;
    this.length = length;
    this.dtype = dtype;
    Object.freeze(this);
  }
}

/** Whether a plan's input array is a DeviceData (on the GPU) rather than a typed array. */
export const isDeviceData = (data) => data instanceof DeviceData;

/** A plan's inputs (query, key, value) on the GPU, in that order. */
export const deviceInputs = (plan) => [plan.query, plan.key, plan.value].filter(isDeviceData);

/**
 * Whether a caller's tensor is a GPU one: an object with a `gpuBuffer` key (checkGpuTensor() checks
 * the rest), unless its `location` says otherwise (an onnxruntime-web Tensor has a gpuBuffer getter
 * whatever its location, throwing unless it is 'gpu-buffer').
 */
export const isGpuTensor = (tensor) => tensor !== null && typeof tensor === 'object' && 'gpuBuffer' in tensor
  && (!('location' in tensor) || tensor.location === 'gpu-buffer');

const looksLikeBuffer = (b) => b !== null && typeof b === 'object' && typeof b.destroy === 'function'
  && typeof b.mapAsync === 'function' && Number.isSafeInteger(b.size) && Number.isSafeInteger(b.usage);

/**
 * Checks a caller's `{ gpuBuffer, shape, dtype? }` (or onnxruntime-web's `{ gpuBuffer, dims, type }`):
 * a GPUBuffer (not mapped; STORAGE usage: the kernels bind it, or COPY_SRC: the call copies it
 * into its own input buffer, on the device) of at least deviceBytes() of shape, dtype 'float32' (the
 * default) or 'float16'. shapeOf(argument, shape) reads the shape as checkTensor() does;
 * `buffers` (gpuBuffer → DeviceData) makes one buffer passed twice one input, so that the fused
 * projections of self-attention apply. Returns { data: DeviceData, shape, dtype }: a float16 call's
 * dtype, as a host float16 tensor's (its 'cpu' results are rounded to float16).
 */
export function checkGpuTensor(argument, tensor, { ranks, shapeOf, buffers }) {
  const shapeKey = 'shape' in tensor ? 'shape' : 'dims';
  const { gpuBuffer, [shapeKey]: givenShape } = tensor;
  const dtype = 'dtype' in tensor ? tensor.dtype : tensor.type;
  if (!looksLikeBuffer(gpuBuffer)) {
    throw new DTypeError(`${argument}.gpuBuffer: expected a GPUBuffer, got ${describe(gpuBuffer)}`, {
      argument, expected: 'GPUBuffer', actual: describe(gpuBuffer),
    });
  }
  if (dtype !== undefined && !GPU_INPUT_DTYPES.includes(dtype)) {
    throw new DTypeError(`${argument}.dtype: a GPU tensor holds ${GPU_INPUT_DTYPES.join(' or ')} (bfloat16 inputs go through `
      + `the host as Uint16Array tensors), got ${describe(dtype)}`, { argument, expected: GPU_INPUT_DTYPES, actual: describe(dtype) });
  }
  const type = dtype ?? 'float32';
  const shape = shapeOf(`${argument}.${shapeKey}`, givenShape);
  if (ranks && !ranks.includes(shape.length)) {
    throw new ShapeError(`${argument}: expected ${ranks.map((r) => `${r}-D`).join(' or ')} shape, got ${formatShape(shape)}`, {
      argument, expected: ranks.map((r) => `${r}-D`), actual: shape,
    });
  }
  const elements = shape.reduce((a, b) => a * b, 1);
  const bytes = deviceBytes(type, elements);
  if (gpuBuffer.size < bytes) {
    const rule = type === 'float16' ? 'float16: 2 per element, rounded up to whole 4-byte words' : 'float32';
    throw new ShapeError(`${argument}: shape ${formatShape(shape)} needs ${bytes} bytes (${rule}), its gpuBuffer has ${gpuBuffer.size}`, {
      argument, expected: bytes, actual: gpuBuffer.size,
    });
  }
  if (!(gpuBuffer.usage & (STORAGE | COPY_SRC))) {
    throw new DTypeError(`${argument}.gpuBuffer: expected a buffer with STORAGE usage (the kernels bind it) or COPY_SRC `
      + `(the call copies it on the device), got ${usageNames(gpuBuffer.usage)}`, {
      argument, expected: 'STORAGE | COPY_SRC', actual: usageNames(gpuBuffer.usage),
    });
  }
  if (gpuBuffer.mapState !== undefined && gpuBuffer.mapState !== 'unmapped') {
    throw new DTypeError(`${argument}.gpuBuffer: expected an unmapped buffer (a mapped one cannot be used by the GPU), got mapState '${gpuBuffer.mapState}'`, {
      argument, expected: 'unmapped', actual: gpuBuffer.mapState,
    });
  }
  const same = buffers.get(gpuBuffer);
  const data = same?.length === elements && same.dtype === type ? same : new DeviceData(argument, gpuBuffer, 0, elements, type);
  buffers.set(gpuBuffer, data);
  return { data, shape, dtype: type };
}
