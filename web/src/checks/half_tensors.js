// 16-bit tensors at the boundary of the calls that compute in float32 (forward,
// scaledDotProductAttention, selfAttention): their inputs, checked by tensor_checks.js, widened to
// float32 exactly, and their outputs rounded back to the query's 16-bit kind.
import { DTypeError } from '../base/errors.js';
import { roundToHalf, widenHalf } from '../storage/half_floats.js';
import { tensorDtype } from '../base/tensor_checks.js';
import { isDeviceData } from '../base/gpu_tensors.js';
import { writeOut } from '../base/output_target.js';

/**
 * entries: [[argument, checked tensor]] of one call (query, key, value). They must share one dtype
 * (a DTypeError names the first that does not: which precision to compute in would be a guess).
 * Returns { tensors: each with Float32Array data (the same array twice stays one array, so that
 * aliasing survives), dtype: theirs }.
 */
export function widenInputs(entries) {
  const dtype = tensorDtype(entries[0][1]);
  for (const [argument, t] of entries) {
    if (tensorDtype(t) !== dtype) {
      throw new DTypeError(`${argument}: expected ${dtype} data as ${entries[0][0]} has (one dtype per call), got ${tensorDtype(t)}`, {
        argument, expected: dtype, actual: tensorDtype(t),
      });
    }
  }
  if (dtype === 'float32') return { tensors: entries.map(([, t]) => t), dtype };
  const widened = new Map();
  const widen = (data) => {
    if (isDeviceData(data)) return data;  // a float16 GPU input: widened on the device
    if (!widened.has(data)) widened.set(data, widenHalf(dtype, data));
    return widened.get(data);
  };
  return { tensors: entries.map(([, t]) => ({ data: widen(t.data), shape: t.shape })), dtype };
}

/**
 * A float32 result as the caller's form: { data, shape } for float32 inputs, else its values
 * rounded to nearest-even into { data: Uint16Array, shape, dtype } of the inputs' kind. With
 * `out` (the call's checked `out` option, base/output_target.js) data is the caller's array,
 * written here unless the WASM executor wrote it already (then `data` is that array).
 */
export function outputTensor(data, shape, dtype, out = null) {
  if (dtype === 'float32') return { data: out && data !== out.given ? writeOut(out, data) : data, shape };
  const halves = out ? writeOut(out, (view) => roundToHalf(dtype, data, view)) : roundToHalf(dtype, data);
  return { data: halves, shape, dtype };
}
