// The `out` option of forward() and scaledDotProductAttention(), checked when the call is made
// (base/output_target.js writes into it): a Float32Array for a float32 call, a Uint16Array for a
// 16-bit one (its output's kind), of exactly the output's elements.
import { DTypeError, OptionError, ShapeError, describe, formatShape } from '../base/errors.js';
import { plainView, typedArrayLength, typedArrayType } from '../base/typed_arrays.js';
import { outLength } from '../base/output_target.js';
import { product } from '../base/tensor_checks.js';

/**
 * `out` (undefined or null: none) against the call's output (`shape`, `dtype` of its inputs,
 * `output`: forward()'s location). Returns base/output_target.js's OutTarget, or null.
 */
export function checkOut(out, { shape, dtype, output = 'cpu' }) {
  if (out === undefined || out === null) return null;
  if (output !== 'cpu') {
    throw new OptionError("out: a typed array for the output on the CPU; with output: 'gpu-buffer' the results are GPU tensors", {
      argument: 'out', expected: "output: 'cpu'", actual: output,
    });
  }
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
