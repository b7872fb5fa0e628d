// GPU-resident inputs of forward(): a caller's { gpuBuffer, shape, dtype } checked into a
// DeviceData, which a plan carries in place of a Float32Array (query, key, value). Only what can
// be seen without the device is checked (checks/gpu_tensor_checks.js, loaded on a first GPU
// input). Here, not in webgpu/: the checks layer reads it, and the Node entry must not load the GPU
// code to check a call.

/**
 * The bytes `length` elements of `dtype` take in a GPU buffer: 4 each for float32; for float16 2
 * each, rounded up to whole 4-byte words (WebGPU binds and copies words: an odd count's last word
 * holds one half and 2 bytes of padding, which the buffer must have).
 */
export const deviceBytes = (dtype, length) => (dtype === 'float16' ? Math.ceil(length / 2) * 4 : length * 4);

/**
 * A checked GPU input: `length` elements of `dtype` (GPU_INPUT_DTYPES) of `gpuBuffer` from byte
 * `byteOffset` (a multiple of 4: what the kernels read, a float16 one once widened). `pieces`, for
 * rows of it (deviceRows()): [byteOffset, bytes] runs of the buffer that make it up in order, which a
 * call copies on the device one after the other; null for one run of deviceBytes() from byteOffset.
 */
export class DeviceData {
  constructor(argument, gpuBuffer, byteOffset, length, dtype = 'float32', pieces = null) {
    this.argument = argument;
    this.gpuBuffer = gpuBuffer;
    this.byteOffset = byteOffset;
    this.length = length;
    this.dtype = dtype;
    this.pieces = pieces;
    Object.freeze(this);
  }
}

/** Bytes per element of a GPU tensor's dtype (GPU_INPUT_DTYPES; its results' too). */
export const ELEMENT_BYTES = Object.freeze({ float32: 4, float16: 2 });

/**
 * Rows [i0, i1) of each of the `blocks` blocks of `rowsPerBlock` rows of `width` elements of data
 * (a DeviceData of one run), as a DeviceData of pieces (which a device copy can move only when
 * inWords()).
 */
export function deviceRows(data, blocks, rowsPerBlock, width, i0, i1) {
  const rowBytes = width * ELEMENT_BYTES[data.dtype];
  const bytes = (i1 - i0) * rowBytes;
  const pieces = Array.from({ length: blocks }, (_, b) => [data.byteOffset + (b * rowsPerBlock + i0) * rowBytes, bytes]);
  return new DeviceData(data.argument, data.gpuBuffer, pieces[0][0], blocks * (i1 - i0) * width, data.dtype, pieces);
}

/** A DeviceData's runs of its buffer: its pieces, or one run of its bytes from byteOffset. */
export const devicePieces = (data) => data.pieces ?? [[data.byteOffset, deviceBytes(data.dtype, data.length)]];

/** Whether every run of a DeviceData starts and ends on a 4-byte word, as a device copy needs. */
export const inWords = (data) => devicePieces(data).every(([at, bytes]) => at % 4 === 0 && bytes % 4 === 0);

/** Whether a plan's input array is a DeviceData (on the GPU) rather than a typed array. */
export const isDeviceData = (data) => data instanceof DeviceData;

/** A plan's inputs (query, key, value) on the GPU, in that order. */
export const deviceInputs = (plan) => [plan.query, plan.key, plan.value].filter(isDeviceData);

/** A plan's caller buffers on the GPU: its inputs', then its `out`'s (deviceOut) where it has one. */
export const deviceTensors = (plan) => [plan.query, plan.key, plan.value, plan.deviceOut].filter(isDeviceData);

/**
 * The dtype of a call's 'gpu-buffer' results: float16 for a float16 call (host or GPU float16
 * inputs, as its 'cpu' results would be), else float32 (bfloat16 calls too: a GPU tensor holds
 * float32 or float16).
 */
export const gpuResultDtype = (plan) => (plan.dtype === 'float16' ? 'float16' : 'float32');

/** Whether a forward() plan has GPU-resident tensors: a GPU input, or output 'gpu-buffer'. */
export const isDeviceCall = (plan) => Boolean(plan.onDevice) || plan.output === 'gpu-buffer';

/**
 * Whether a caller's tensor is a GPU one: an object with a `gpuBuffer` key (checkGpuTensor() checks
 * the rest), unless its `location` says otherwise (an onnxruntime-web Tensor has a gpuBuffer getter
 * whatever its location, throwing unless it is 'gpu-buffer').
 */
export const isGpuTensor = (tensor) => tensor !== null && typeof tensor === 'object' && 'gpuBuffer' in tensor
  && (!('location' in tensor) || tensor.location === 'gpu-buffer');
