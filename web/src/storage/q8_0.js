// Symmetric 8-bit block quantisation, llama.cpp's q8_0 (docs/attention-math.md): each block of
// up to 32 values along a row (weights: along the input dimension, the last block of a row may be
// shorter; a KV cache: one block per (position, K/V head) row) stores one float32 scale
// d = max|x| / 127 and integers q = x / d rounded half to even, so that x ≈ q · d. An all-zero
// block has d = 0 (and q = 0), as has a block whose max / 127 underflows float32 (|x| < 127·2⁻¹⁴⁹). The package's WebGPU backend and the tests' float64 reference use
// these functions; the WASM core quantises with the same rule.
import { Q8_BLOCK } from './storage_types.js';
import { roundHalfEven } from './half_floats.js';

/** Blocks of a row of `rowLength` values, `blockLength` per block. */
export const blocksPerRow = (rowLength, blockLength = Q8_BLOCK) => Math.ceil(rowLength / blockLength);

/**
 * fn(begin, end, block) for each block of `blockLength` values along each row of `rowLength` of
 * `length` values (the last block of a row may be shorter; block: its row-major index). Returns
 * the number of blocks.
 */
export function forEachBlock(length, rowLength, blockLength, fn) {
  const perRow = blocksPerRow(rowLength, blockLength);
  const rows = length / rowLength;
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < perRow; b++) {
      const begin = r * rowLength + b * blockLength;
      fn(begin, Math.min(begin + blockLength, (r + 1) * rowLength), r * perRow + b);
    }
  }
  return rows * perRow;
}

/**
 * Quantises `values` (a Float32Array of rows of `rowLength`) in blocks of `blockLength` along each
 * row. Returns { q: Int8Array (one per value), scales: Float32Array (one per block, row-major),
 * nonFinite: the index of the first NaN or ±inf value, or -1 }. A block holding a NaN or ±inf
 * has scale NaN (its q are 0), so that it dequantises to NaN (a cache row's rule; weights with
 * such a value never get here: loadStateDict() refuses them first, state_dict.js).
 */
export function quantizeQ8(values, rowLength, blockLength = Q8_BLOCK) {
  const q = new Int8Array(values.length);
  const scales = new Float32Array(values.length / rowLength * blocksPerRow(rowLength, blockLength));
  let nonFinite = -1;
  forEachBlock(values.length, rowLength, blockLength, (begin, end, block) => {
    let max = 0;
    for (let i = begin; i < end; i++) {
      const a = Math.abs(values[i]);
      if (!Number.isFinite(a)) {
        max = NaN;
        if (nonFinite < 0) nonFinite = i;
        break;
      }
      if (a > max) max = a;
    }
    // float32 arithmetic throughout, as the core computes it: d = fl(max / 127), then each
    // quotient fl(x / d) rounded (a double quotient of two floats rounds to the same float).
    const d = Math.fround(max / 127);
    scales[block] = d;
    if (!(d > 0)) return;
    for (let i = begin; i < end; i++) q[i] = roundHalfEven(Math.fround(values[i] / d));
  });
  return { q, scales, nonFinite };
}

/** The values quantizeQ8() stored, as float32 (q · d): a new Float32Array. */
export function dequantizeQ8({ q, scales }, rowLength, blockLength = Q8_BLOCK) {
  const perRow = blocksPerRow(rowLength, blockLength);
  const out = new Float32Array(q.length);
  for (let i = 0; i < q.length; i++) {
    const row = Math.floor(i / rowLength);
    out[i] = q[i] * scales[row * perRow + Math.floor((i % rowLength) / blockLength)];
  }
  return out;
}
