// The cos/sin table the rotary kernel reads (kernels/rotary.wgsl.js), formed on the CPU in
// float64 per call: θ_j = base^(−2j/dim) and the angle p·θ_j are doubles, as in the WASM core
// (cpp/src/rotary.cpp), and only cos and sin are rounded to f32.
// An f32 angle would be off by about 10⁻² radian at p = 10⁵ (docs/attention-math.md §8).

/** [count, dim/2, 2] floats: (cos pθ_j, sin pθ_j) for p = first … first + count − 1. */
export function rotaryTable({ base, dim }, first, count) {
  const half = dim / 2;
  const theta = Array.from({ length: half }, (_, j) => base ** (-2 * j / dim));
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
