// The cos/sin table the rotary kernel reads (kernels/rotary.wgsl.js), formed on the CPU in
// float64 per call: θ_j (rotary_frequencies.js) and the angle p·θ_j are doubles, as in the WASM core
// (cpp/src/rotary.cpp), and only cos and sin are rounded to f32.
// An f32 angle would be off by about 10⁻² radian at p = 10⁵ (docs/attention-math.md §8).

import { rotaryFrequencies } from '../rotary_frequencies.js';

/** [count, dim/2, 2] floats: (cos pθ_j, sin pθ_j) for p = first … first + count − 1. */
export function rotaryTable(rotary, first, count) {
  const half = rotary.dim / 2;
  if (rotary.table) {  // a given table: its rows first … first + count − 1 (plans.js checked they exist)
    const { cos, sin } = rotary.table;
    const rows = new Float32Array(count * half * 2);
    for (let k = 0; k < count * half; k++) {
      rows[2 * k] = cos[first * half + k];
      rows[2 * k + 1] = sin[first * half + k];
    }
    return rows;
  }
  const theta = rotaryFrequencies({ scaling: null, ...rotary });
  const table = new Float32Array(count * half * 2);
  for (let i = 0; i < count; i++) {
    const position = first + i;
    for (let j = 0; j < half; j++) {
      table[(i * half + j) * 2] = Math.cos(position * theta[j]);
      table[(i * half + j) * 2 + 1] = Math.sin(position * theta[j]);
    }
  }
  return table;
}
