// A caller's GPU tensor checked into a DeviceData (base/gpu_tensors.js): here what can be seen
// without the device, the buffer's kind, size, usage and map state; with the module's device,
// dispatch/device_calls.js's requireGenuineBuffers() checks that it is a GPUBuffer of that WebGPU
// at all. Which device it is on, and whether it was destroyed, WebGPU tells only when the call's
// work is submitted (webgpu/gpu_tensor.js names the argument then). Reached through
// base/lazy_modules.js: a call without GPU inputs never loads it.
import { DTypeError, ShapeError, describe, formatShape } from '../base/errors.js';
import { DeviceData, deviceBytes } from '../base/gpu_tensors.js';
import { halfKindOf, product } from '../base/tensor_checks.js';

// GPUBufferUsage's numbers (Node has no GPUBufferUsage global unless the app sets one).
const COPY_SRC = 0x4;
const COPY_DST = 0x8;
const STORAGE = 0x80;
const USAGE_NAMES = { 0x1: 'MAP_READ', 0x2: 'MAP_WRITE', 0x4: 'COPY_SRC', 0x8: 'COPY_DST', 0x10: 'INDEX', 0x20: 'VERTEX',
  0x40: 'UNIFORM', 0x80: 'STORAGE', 0x100: 'INDIRECT', 0x200: 'QUERY_RESOLVE' };

/** A GPUBuffer's usage flags by name ('STORAGE | COPY_SRC'). */
export const usageNames = (usage) => Object.entries(USAGE_NAMES).filter(([bit]) => usage & Number(bit)).map(([, n]) => n).join(' | ') || 'none';

/** A GPU tensor's dtypes: float32, or float16 bits (widened on the device, exactly). */
export const GPU_INPUT_DTYPES = ['float32', 'float16'];

// Why `b` is no GPUBuffer by its look, or null. Reading a Proxy's or a look-alike's properties may
// throw (a GPUBuffer's getters refuse another `this`): that is no GPUBuffer either.
function notABuffer(b) {
  try {
    const looks = b !== null && typeof b === 'object' && typeof b.destroy === 'function'
      && typeof b.mapAsync === 'function' && Number.isSafeInteger(b.size) && Number.isSafeInteger(b.usage);
    return looks ? null : describe(b);
  } catch (e) {
    return `${describe(b)} whose size or usage cannot be read (${e?.message ?? e}: a Proxy?)`;
  }
}

/**
 * Checks a caller's `{ gpuBuffer, shape, dtype?, byteOffset? }` (or onnxruntime-web's `{ gpuBuffer, dims, type }`):
 * a GPUBuffer (not mapped; STORAGE usage: the kernels bind it, or COPY_SRC: the call copies it
 * into its own input buffer, on the device) of at least deviceBytes() of shape, dtype 'float32' (the
 * default) or 'float16'. shapeOf(argument, shape) reads the shape as checkTensor() does;
 * `buffers` (gpuBuffer → its DeviceData) makes one view passed twice one input, so that the fused
 * projections of self-attention apply. Returns { data: DeviceData, shape, dtype }: a float16 call's
 * dtype, as a host float16 tensor's (its 'cpu' results are rounded to float16).
 */
export function checkGpuTensor(argument, tensor, { ranks, shapeOf, buffers }) {
  const shapeKey = 'shape' in tensor ? 'shape' : 'dims';
  const { gpuBuffer, [shapeKey]: givenShape } = tensor;
  const type = checkBufferAndDtype(argument, gpuBuffer, 'dtype' in tensor ? tensor.dtype : tensor.type);
  const shape = shapeOf(`${argument}.${shapeKey}`, givenShape);
  if (ranks && !ranks.includes(shape.length)) {
    throw new ShapeError(`${argument}: expected ${ranks.map((r) => `${r}-D`).join(' or ')} shape, got ${formatShape(shape)}`, {
      argument, expected: ranks.map((r) => `${r}-D`), actual: shape,
    });
  }
  const elements = product(shape);
  const byteOffset = checkByteOffset(argument, tensor.byteOffset, gpuBuffer, COPY_SRC, 'is copied from there on the device');
  checkBufferBytes(argument, gpuBuffer, byteOffset, type, `shape ${formatShape(shape)}`, elements);
  if (!(gpuBuffer.usage & (STORAGE | COPY_SRC))) {
    throw new DTypeError(`${argument}.gpuBuffer: expected a buffer with STORAGE usage (the kernels bind it) or COPY_SRC `
      + `(the call copies it on the device), got ${usageNames(gpuBuffer.usage)}`, {
      argument, expected: 'STORAGE | COPY_SRC', actual: usageNames(gpuBuffer.usage),
    });
  }
  checkUnmapped(argument, gpuBuffer);
  // The same buffer, offset, length and dtype: one input (fused projections); else a view of its own.
  const seen = buffers.get(gpuBuffer) ?? [];
  let data = seen.find((d) => d.length === elements && d.dtype === type && d.byteOffset === byteOffset);
  if (!data) {
    data = new DeviceData(argument, gpuBuffer, byteOffset, elements, type);
    buffers.set(gpuBuffer, [...seen, data]);
  }
  return { data, shape, dtype: type };
}

/**
 * A 'gpu-buffer' call's `out`: `{ gpuBuffer, shape?, dtype?, byteOffset? }` that the output (of
 * `shape`, `dtype`: the call's result dtype) is copied into on the device, from byteOffset, instead
 * of a buffer made for it. A GPUBuffer (not mapped, with COPY_DST usage) of at least the output's
 * bytes from byteOffset (a multiple of 4); its dtype, when given, the result's; its shape, when
 * given, of the output's elements. shapeOf(argument, shape) reads the shape as checkTensor() does.
 * Returns the DeviceData of the output's place.
 */
export function checkGpuOut(out, { shape, dtype, shapeOf }) {
  const argument = 'out';
  const { gpuBuffer } = out;
  const type = checkBufferAndDtype(argument, gpuBuffer, out.dtype ?? dtype);
  if (type !== dtype) {
    throw new DTypeError(`out.dtype: the call's result is ${dtype}, got ${describe(out.dtype)}`, { argument, expected: dtype, actual: describe(out.dtype) });
  }
  const elements = product(shape);
  if (out.shape !== undefined) {
    const given = shapeOf('out.shape', out.shape);
    const count = product(given);
    if (count !== elements) {
      throw new ShapeError(`out: the output is ${formatShape(shape)} (${elements} elements), got shape ${formatShape(given)} (${count})`, {
        argument, expected: shape, actual: given,
      });
    }
  }
  const byteOffset = checkByteOffset(argument, out.byteOffset, gpuBuffer, 0, '');
  checkBufferBytes(argument, gpuBuffer, byteOffset, type, `the output ${formatShape(shape)}`, elements);
  if (!(gpuBuffer.usage & COPY_DST)) {
    throw new DTypeError(`out.gpuBuffer: expected a buffer with COPY_DST usage (the output is copied into it on the device), got ${usageNames(gpuBuffer.usage)}`, {
      argument, expected: 'COPY_DST', actual: usageNames(gpuBuffer.usage),
    });
  }
  checkUnmapped(argument, gpuBuffer);
  return new DeviceData(argument, gpuBuffer, byteOffset, elements, type);
}

// A GPU tensor's buffer by its look (notABuffer()) and its dtype (undefined: float32); returns the dtype.
function checkBufferAndDtype(argument, gpuBuffer, dtype) {
  const why = notABuffer(gpuBuffer);
  if (why) throw new DTypeError(`${argument}.gpuBuffer: expected a GPUBuffer, got ${why}`, { argument, expected: 'GPUBuffer', actual: why });
  // The names a host tensor's dtype may have too (tensor_checks.js): 'F32', and 'F16' for float16.
  const named = dtype === 'F32' ? 'float32' : halfKindOf(dtype) ?? dtype;
  if (named !== undefined && !GPU_INPUT_DTYPES.includes(named)) {
    throw new DTypeError(`${argument}.dtype: a GPU tensor holds ${GPU_INPUT_DTYPES.join(' or ')} (bfloat16 inputs go through `
      + `the host as Uint16Array tensors), got ${describe(dtype)}`, { argument, expected: GPU_INPUT_DTYPES, actual: describe(dtype) });
  }
  return named ?? 'float32';
}

// ShapeError unless `gpuBuffer` holds `elements` of `dtype` (deviceBytes()) from byteOffset.
function checkBufferBytes(argument, gpuBuffer, byteOffset, dtype, what, elements) {
  const bytes = deviceBytes(dtype, elements);
  if (gpuBuffer.size - byteOffset >= bytes) return;
  const rule = dtype === 'float16' ? 'float16: 2 per element, rounded up to whole 4-byte words' : 'float32';
  const from = byteOffset ? ` from its byteOffset ${byteOffset}` : '';
  throw new ShapeError(`${argument}: ${what} needs ${bytes} bytes (${rule})${from}, its gpuBuffer has ${gpuBuffer.size}`, {
    argument, expected: bytes + byteOffset, actual: gpuBuffer.size,
  });
}

// DTypeError for a mapped buffer (the GPU cannot use one).
function checkUnmapped(argument, gpuBuffer) {
  if (gpuBuffer.mapState === undefined || gpuBuffer.mapState === 'unmapped') return;
  throw new DTypeError(`${argument}.gpuBuffer: expected an unmapped buffer (a mapped one cannot be used by the GPU), got mapState '${gpuBuffer.mapState}'`, {
    argument, expected: 'unmapped', actual: gpuBuffer.mapState,
  });
}

/**
 * A GPU tensor's `byteOffset` (default 0): where its elements start in the buffer, a multiple of 4
 * (WebGPU copies whole words; a float16 tensor's halves start on a word). An input that does not
 * start at byte 0 is copied from there on the device, so its buffer needs COPY_SRC usage
 * (`usage`, `why`; 0 for `out`, whose rule is COPY_DST at any offset).
 */
function checkByteOffset(argument, byteOffset, gpuBuffer, usage, why) {
  if (byteOffset === undefined || byteOffset === 0) return 0;
  if (!Number.isSafeInteger(byteOffset) || byteOffset < 0 || byteOffset % 4 !== 0) {
    throw new ShapeError(`${argument}.byteOffset: expected a non-negative multiple of 4 (bytes), got ${describe(byteOffset)}`, {
      argument, expected: 'a non-negative multiple of 4', actual: describe(byteOffset),
    });
  }
  if (usage && !(gpuBuffer.usage & usage)) {
    throw new DTypeError(`${argument}.gpuBuffer: a tensor at byteOffset ${byteOffset} ${why}, so its buffer `
      + `needs ${usageNames(usage)} usage, got ${usageNames(gpuBuffer.usage)}`, { argument, expected: usageNames(usage), actual: usageNames(gpuBuffer.usage) });
  }
  return byteOffset;
}
