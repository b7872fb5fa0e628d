// The `out` option of forward() and scaledDotProductAttention(), checked when the call is made:
// for output 'cpu' (base/output_target.js writes into it) a Float32Array for a float32 call, a
// Uint16Array for a 16-bit one (its output's kind), of exactly the output's elements; for output
// 'gpu-buffer' a GPU tensor the output is copied into on the device (checks/gpu_tensor_checks.js
// checkGpuOut(), loaded with the GPU checks).
import { DTypeError, OptionError, ShapeError, describe, formatShape } from '../base/errors.js';
import { plainView, typedArrayLength, typedArrayType } from '../base/typed_arrays.js';
import { outLength } from '../base/output_target.js';
import { product, snapshotShape } from '../base/tensor_checks.js';
import { gpuResultDtype, isGpuTensor } from '../base/gpu_tensors.js';
import { lazyModules } from '../base/lazy_modules.js';

/**
 * A call's `out` (undefined or null: none) against its output (`shape`, `dtype` of its inputs,
 * `output`: its location): { out: base/output_target.js's OutTarget or null (output 'cpu'),
 * deviceOut: the DeviceData of a GPU tensor's place or null (output 'gpu-buffer') }.
 */
export function checkOutTargets(out, { shape, dtype, output = 'cpu' }) {
  if (out === undefined || out === null || output === 'cpu') return { out: checkOut(out, { shape, dtype }), deviceOut: null };
  if (!isGpuTensor(out)) {
    throw new OptionError(`out: with output 'gpu-buffer', a GPU tensor { gpuBuffer, shape?, dtype?, byteOffset? } that the output is copied into, got ${describe(out)}`, {
      argument: 'out', expected: 'a GPU tensor', actual: describe(out),
    });
  }
  return { out: null, deviceOut: lazyModules().checkGpuOut(out, { shape, dtype: gpuResultDtype({ dtype }), shapeOf: snapshotShape }) };
}

// An output-'cpu' call's `out`: its OutTarget, or null.
function checkOut(out, { shape, dtype }) {
  if (out === undefined || out === null) return null;
  const type = dtype === 'float32' ? 'Float32Array' : 'Uint16Array';
  if (typedArrayType(out) !== type) {
    throw new DTypeError(`out: expected a ${type} (the call's output is ${dtype}), got ${describe(out)}`, {
      argument: 'out', expected: type, actual: describe(out),
    });
  }
  const length = product(shape);
  if (typedArrayLength(out) !== length) {
    const actual = outLength(out);
    throw new ShapeError(`out: expected ${length} elements (the output is ${formatShape(shape)}), got ${actual}`, {
      argument: 'out', expected: length, actual,
    });
  }
  return { given: out, view: plainView(out), length };
}
