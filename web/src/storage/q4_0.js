// 4-bit block quantisation of float weights at load, llama.cpp's quantize_row_q4_0 rule
// (docs/attention-math/storage.md §11), in float32 arithmetic as the WASM core computes it
// (cpp/src/kernels/storage_convert.h's quantise_q4): per block of up to 32 values along a row,
// m = the first value of largest magnitude (sign kept), d = fl(m / −8), id = fl(1 / d) (0 when d
// is 0), code q = min(15, trunc(fl(fl(x · id) + 8.5))), zero point 8; the value of code q is
// fl((q − 8) · d). The WebGPU backend quantises with it, so that the GPU stores the codes and
// scales the core stores (tests/webgpu/node_int4_weights.test.mjs reads both back).
import { Q4_BLOCK } from './storage_types.js';
import { blocksPerRow, forEachBlock } from './q8_0.js';

/** The zero point of weights quantised at load. */
export const Q4_ZERO = 8;

// The code of one value, as quantise_q4 clamps it: an infinite t to 0 or 15, a NaN t to the zero
// point (weights with such values never get here: loadStateDict() refuses them first).
function code(x, id) {
  const t = Math.fround(Math.fround(x * id) + 8.5);
  if (t >= 15) return 15;
  if (t >= 0) return Math.trunc(t);
  return Number.isNaN(t) ? Q4_ZERO : 0;
}

/**
 * Quantises `values` (a Float32Array of rows of `rowLength`) in blocks of Q4_BLOCK along each row:
 * a quantised entry's fields { data: Uint8Array (one code 0-15 per value), scales: Float32Array
 * and zeroPoints: Uint8Array (one per block, row-major) }.
 */
export function quantizeQ4(values, rowLength) {
  const data = new Uint8Array(values.length);
  const scales = new Float32Array(values.length / rowLength * blocksPerRow(rowLength, Q4_BLOCK));
  forEachBlock(values.length, rowLength, Q4_BLOCK, (begin, end, block) => {
    let amax = 0, m = 0, finite = true;
    for (let i = begin; i < end; i++) {
      const x = values[i];
      finite &&= Number.isFinite(x);
      if (amax < Math.abs(x)) [amax, m] = [Math.abs(x), x];
    }
    const d = finite ? Math.fround(m / -8) : NaN;
    const id = finite && d !== 0 ? Math.fround(1 / d) : 0;
    scales[block] = d;
    for (let i = begin; i < end; i++) data[i] = code(values[i], id);
  });
  return { data, scales, zeroPoints: new Uint8Array(scales.length).fill(Q4_ZERO) };
}
