// A call's `out` option (forward(), scaledDotProductAttention()): a typed array of the caller's
// that receives the output, so that a loop of calls (a decode step per token and layer) makes no
// new output array each call: in Firefox a fresh array per call cost 5–8 % of an int4 token of
// the 24-layer stack (docs/performance/memory_and_startup.md#output-arrays).
//
// checks/out_option.js checks it when the call is made; this module writes into it, where the
// result is: the calling thread's WASM executor straight from its heap, any other path (the
// pool, the GPU, a 16-bit result) through api.js's results().
import { ShapeError } from './errors.js';
import { isDetached, stillWhole, typedArrayLength } from './typed_arrays.js';

/**
 * @typedef {object} OutTarget  a checked `out`: { given (the caller's array, the result's
 *   output.data), view (a plain view of this realm on its memory: written through, so no
 *   subclass's set() runs), length (elements: the output's) }
 */

/** An `out` array's length as its ShapeError reports it: 'detached', or its element count. */
export const outLength = (array) => (isDetached(array) ? 'detached' : typedArrayLength(array));

/**
 * ShapeError unless `target`'s memory still holds the output: the caller may have detached
 * (transferred) or shrunk its buffer while the call waited (for the core, a load, workers, the GPU).
 */
export function requireOutWhole(target) {
  if (stillWhole(target.view, target.length)) return;
  const actual = outLength(target.view);
  throw new ShapeError(`out: its ArrayBuffer was detached or shrunk before the result was written (it needs ${target.length} elements, got ${actual})`, {
    argument: 'out', expected: target.length, actual,
  });
}

/**
 * Writes `values` (the output's elements, or a function (view) => void that fills the view) into
 * `target` and returns the caller's array. set() of a typed array copies as if through a
 * temporary, so a source on the same buffer (the WASM heap's view) cannot overlap wrongly.
 */
export function writeOut(target, values) {
  requireOutWhole(target);
  if (typeof values === 'function') values(target.view);
  else target.view.set(values);
  return target.given;
}
